package agentsvc

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/wire"
)

// loadAttachments reads the files of a turn's question from the session's
// folder, where the gateway stored them: the bytes of an image or a PDF
// (sent to the provider natively) and the text of any other file.
func (s *Service) loadAttachments(ctx context.Context, scope files.Scope, refs []agent.Attachment) ([]llm.Attachment, error) {
	fs := files.NewFS(s.node.Client)
	out := make([]llm.Attachment, 0, len(refs))
	for _, ref := range refs {
		a := llm.Attachment{Name: ref.Name, Type: ref.Type, Path: ref.Path}
		if !strings.HasPrefix(ref.Path, "/attachments/") || (ref.RawPath != "" && !strings.HasPrefix(ref.RawPath, "/attachments/.raw/")) {
			return nil, wire.Errorf(wire.InvalidArgument, "attachment %s is not in the session's /attachments/ folder", ref.Name)
		}
		path := ref.Path
		if ref.RawPath != "" {
			path = ref.RawPath
		}
		content, err := readAll(ctx, fs, scope, path)
		if err != nil {
			return nil, fmt.Errorf("reading attachment %s: %w", ref.Name, err)
		}
		if ref.RawPath == "" {
			a.Text = content
		} else if a.Data, err = base64.StdEncoding.DecodeString(content); err != nil {
			return nil, fmt.Errorf("decoding attachment %s: %w", ref.Name, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// readAll reads a whole file in byte pages (one read is at most
// files.MaxReadBytes).
func readAll(ctx context.Context, fs *files.FS, scope files.Scope, path string) (string, error) {
	var b strings.Builder
	for {
		resp, err := fs.Read(ctx, &files.ReadRequest{Scope: scope, Path: path, Offset: int64(b.Len()), Bytes: true})
		if err != nil {
			return "", err
		}
		b.WriteString(resp.Content)
		if !resp.Truncated || resp.Content == "" {
			return b.String(), nil
		}
	}
}
