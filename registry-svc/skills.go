package registrysvc

import (
	"context"
	"errors"
	"unicode/utf8"

	"github.com/mirobody/mirobody-go/registry-svc/internal/builtin"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/wire"
)

// skillHandlers serve registry.skills.*: the skills of SKILL_DIRS for the
// gateway's MCP resources and prompts. The folders are read on every
// request, like read_skill does, so an edited skill shows at once.
type skillHandlers struct{ dirs []string }

func (h *skillHandlers) register(svc *wire.Service) error {
	return errors.Join(
		wire.Serve(svc, registry.SkillsList, h.list),
		wire.Serve(svc, registry.SkillsRead, h.read),
	)
}

func (h *skillHandlers) list(_ context.Context, _ *registry.SkillListRequest) (*registry.SkillListResponse, error) {
	out := &registry.SkillListResponse{Skills: []registry.Skill{}}
	for _, s := range builtin.Skills(h.dirs) {
		sk := registry.Skill{Name: s.Name, Description: s.Description, Files: []registry.SkillFile{}}
		for _, f := range builtin.SkillFiles(s.Dir) {
			sk.Files = append(sk.Files, registry.SkillFile{Path: f.Path, MimeType: f.MimeType, Size: f.Size})
		}
		out.Skills = append(out.Skills, sk)
	}
	return out, nil
}

func (h *skillHandlers) read(_ context.Context, req *registry.SkillReadRequest) (*registry.SkillReadResponse, error) {
	for _, s := range builtin.Skills(h.dirs) {
		if s.Name != req.Name {
			continue
		}
		data, err := builtin.ReadSkillFile(s.Dir, req.Path)
		if err != nil {
			var te *builtin.ToolError
			if errors.As(err, &te) {
				return nil, wire.Errorf(wire.NotFound, "%s", te.Message)
			}
			return nil, err
		}
		out := &registry.SkillReadResponse{MimeType: builtin.MimeType(req.Path, data)}
		if utf8.Valid(data) {
			out.Text = string(data)
		} else {
			out.Blob = data
		}
		return out, nil
	}
	return nil, wire.Errorf(wire.NotFound, "no skill named %q", req.Name)
}
