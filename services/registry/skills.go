package registry

import (
	"context"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Skill endpoints: the skills of SKILL_DIRS as MCP resources and prompts
// (the gateway's resources/* and prompts/*). Skills are the same for every
// caller, so the requests carry no identity.
var (
	SkillsList = wire.Endpoint[SkillListRequest, SkillListResponse]{Subject: "registry.skills.list"}
	SkillsRead = wire.Endpoint[SkillReadRequest, SkillReadResponse]{Subject: "registry.skills.read"}
)

// SkillListRequest lists every skill with its files.
type SkillListRequest struct{}

// SkillListResponse is the skills, sorted by name.
type SkillListResponse struct {
	Skills []Skill `json:"skills"`
}

// Skill is one skill: a folder with a SKILL.md, named by its frontmatter
// name or else its folder's name.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Files are SKILL.md and the files beside it (subfolders included),
	// sorted by path, SKILL.md first.
	Files []SkillFile `json:"files"`
}

// SkillFile is one file of a skill.
type SkillFile struct {
	// Path is relative to the skill's folder, with forward slashes.
	Path     string `json:"path"`
	MimeType string `json:"mime_type"`
	Size     int64  `json:"size"`
}

// SkillReadRequest reads one file of a skill.
type SkillReadRequest struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// SkillReadResponse is a skill file: Text for UTF-8 text, else Blob.
type SkillReadResponse struct {
	MimeType string `json:"mime_type"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"`
}

// ListSkills returns the skills with their files.
func (c *Client) ListSkills(ctx context.Context, req *SkillListRequest) (*SkillListResponse, error) {
	return SkillsList.Call(ctx, c.c, req)
}

// ReadSkill reads one file of a skill: not_found for an unknown skill or
// file, or a path that leaves the skill's folder.
func (c *Client) ReadSkill(ctx context.Context, req *SkillReadRequest) (*SkillReadResponse, error) {
	return SkillsRead.Call(ctx, c.c, req)
}
