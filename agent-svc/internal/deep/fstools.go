package deep

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/services/vfs/files"
)

// maxLineChars clips very long lines in read_file output.
const maxLineChars = 2000

func (r *run) scope() files.Scope {
	return files.Scope{AccountID: r.turn.AccountID, SessionID: r.turn.SessionID}
}

func decode(args json.RawMessage, v any) error { return json.Unmarshal(args, v) }

// fsTools are the filesystem tools on vfs-svc. Paths outside /memories/
// and /skills/ belong to the session.
func fsTools() []*tool {
	return []*tool{
		{def: llm.Tool{Name: "ls", Description: "List the files and directories in a directory of your filesystem (default /). /memories/ persists across sessions; /skills/ is read-only.",
			InputSchema: schema(`{"type":"object","properties":{"path":{"type":"string"}}}`)}, inREPL: true,
			run: func(ctx context.Context, r *run, args json.RawMessage) result {
				var in struct{ Path string }
				if err := decode(args, &in); err != nil {
					return errResult("invalid_argument", "ls takes {path}")
				}
				if in.Path == "" {
					in.Path = "/"
				}
				resp, err := r.a.opts.FS.Ls(ctx, &files.LsRequest{Scope: r.scope(), Path: in.Path})
				if err != nil {
					return wireResult(err)
				}
				var b strings.Builder
				for _, e := range resp.Entries {
					if e.IsDir {
						fmt.Fprintf(&b, "%s/\n", strings.TrimSuffix(e.Path, "/"))
					} else {
						fmt.Fprintf(&b, "%s (%d bytes)\n", e.Path, e.Size)
					}
				}
				if b.Len() == 0 {
					return okResult("(empty)")
				}
				return okResult(b.String())
			}},
		{def: llm.Tool{Name: "read_file", Description: "Read a file, as numbered lines. offset is the first line (0-based), limit the number of lines (default 2000). Read large files in pages.",
			InputSchema: schema(`{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"integer","minimum":0},"limit":{"type":"integer","minimum":1}},"required":["file_path"]}`)},
			noEvict: true, inREPL: true,
			run: func(ctx context.Context, r *run, args json.RawMessage) result {
				var in struct {
					FilePath string `json:"file_path"`
					Offset   int64  `json:"offset"`
					Limit    int64  `json:"limit"`
				}
				if err := decode(args, &in); err != nil || in.FilePath == "" {
					return errResult("invalid_argument", "read_file takes {file_path, offset?, limit?}")
				}
				if in.Limit <= 0 {
					in.Limit = files.DefaultReadLines
				}
				resp, err := r.a.opts.FS.Read(ctx, &files.ReadRequest{Scope: r.scope(), Path: in.FilePath, Offset: in.Offset, Limit: in.Limit})
				if err != nil {
					return wireResult(err)
				}
				if resp.Content == "" {
					if resp.TotalLines == 0 {
						return okResult("(the file is empty)")
					}
					return errResult("invalid_argument", fmt.Sprintf("offset %d is past the end of the file (%d lines)", in.Offset, resp.TotalLines))
				}
				return result{content: numberLines(resp.Content, resp.StartLine), truncated: resp.Truncated}
			}},
		{def: llm.Tool{Name: "write_file", Description: "Write a file, creating it or replacing its content.",
			InputSchema: schema(`{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"]}`)},
			noEvict: true, inREPL: true,
			run: func(ctx context.Context, r *run, args json.RawMessage) result {
				var in struct {
					FilePath string `json:"file_path"`
					Content  string `json:"content"`
				}
				if err := decode(args, &in); err != nil || in.FilePath == "" {
					return errResult("invalid_argument", "write_file takes {file_path, content}")
				}
				fi, err := r.a.opts.FS.Write(ctx, &files.WriteRequest{Scope: r.scope(), Path: in.FilePath, Content: in.Content, Overwrite: true})
				if err != nil {
					return wireResult(err)
				}
				return okResult(fmt.Sprintf("Wrote %s (%d bytes)", fi.Path, fi.Size))
			}},
		{def: llm.Tool{Name: "edit_file", Description: "Replace old_string by new_string in a file. old_string must occur exactly once unless replace_all is true. Read the file first.",
			InputSchema: schema(`{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["file_path","old_string","new_string"]}`)},
			noEvict: true, inREPL: true,
			run: func(ctx context.Context, r *run, args json.RawMessage) result {
				var in struct {
					FilePath   string `json:"file_path"`
					Old        string `json:"old_string"`
					New        string `json:"new_string"`
					ReplaceAll bool   `json:"replace_all"`
				}
				if err := decode(args, &in); err != nil || in.FilePath == "" || in.Old == "" {
					return errResult("invalid_argument", "edit_file takes {file_path, old_string, new_string, replace_all?}")
				}
				resp, err := r.a.opts.FS.Edit(ctx, &files.EditRequest{Scope: r.scope(), Path: in.FilePath, Old: in.Old, New: in.New, ReplaceAll: in.ReplaceAll})
				if err != nil {
					return wireResult(err)
				}
				return okResult(fmt.Sprintf("Replaced %d occurrence(s) in %s", resp.Replaced, resp.Path))
			}},
		{def: llm.Tool{Name: "glob", Description: "Find files by path pattern: * and ? within a path segment, ** across segments (for example **/*.md).",
			InputSchema: schema(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}`)}, inREPL: true,
			run: func(ctx context.Context, r *run, args json.RawMessage) result {
				var in struct{ Pattern, Path string }
				if err := decode(args, &in); err != nil || in.Pattern == "" {
					return errResult("invalid_argument", "glob takes {pattern, path?}")
				}
				resp, err := r.a.opts.FS.Glob(ctx, &files.GlobRequest{Scope: r.scope(), Pattern: in.Pattern, Path: in.Path})
				if err != nil {
					return wireResult(err)
				}
				paths := make([]string, len(resp.Files))
				for i, f := range resp.Files {
					paths[i] = f.Path
				}
				if len(paths) == 0 {
					return okResult("(no matches)")
				}
				return result{content: strings.Join(paths, "\n"), truncated: resp.Truncated}
			}},
		{def: llm.Tool{Name: "grep", Description: "Search file contents. pattern is a regular expression (RE2) unless literal is true. output_mode: files_with_matches (default), content (matching lines) or count.",
			InputSchema: schema(`{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"literal":{"type":"boolean"},"ignore_case":{"type":"boolean"},"output_mode":{"type":"string","enum":["files_with_matches","content","count"]}},"required":["pattern"]}`)}, inREPL: true,
			run: func(ctx context.Context, r *run, args json.RawMessage) result {
				var in struct {
					Pattern    string `json:"pattern"`
					Path       string `json:"path"`
					Literal    bool   `json:"literal"`
					IgnoreCase bool   `json:"ignore_case"`
					Mode       string `json:"output_mode"`
				}
				if err := decode(args, &in); err != nil || in.Pattern == "" {
					return errResult("invalid_argument", "grep takes {pattern, path?, literal?, ignore_case?, output_mode?}")
				}
				resp, err := r.a.opts.FS.Grep(ctx, &files.GrepRequest{Scope: r.scope(), Pattern: in.Pattern, Path: in.Path, Literal: in.Literal, IgnoreCase: in.IgnoreCase, Mode: in.Mode})
				if err != nil {
					return wireResult(err)
				}
				var b strings.Builder
				for _, f := range resp.Files {
					b.WriteString(f + "\n")
				}
				for _, m := range resp.Matches {
					if in.Mode == files.GrepCount {
						fmt.Fprintf(&b, "%s: %d\n", m.Path, m.Count)
					} else {
						fmt.Fprintf(&b, "%s:%d: %s\n", m.Path, m.Line, m.Text)
					}
				}
				if b.Len() == 0 {
					return okResult("(no matches)")
				}
				return result{content: b.String(), truncated: resp.Truncated}
			}},
	}
}

// numberLines formats content as `cat -n` does, starting at line start.
func numberLines(content string, start int64) string {
	if start <= 0 {
		start = 1
	}
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	for i, l := range lines {
		l = strings.TrimRight(l, "\r\n")
		if len(l) > maxLineChars {
			l = l[:maxLineChars] + "…"
		}
		fmt.Fprintf(&b, "%6d\t%s\n", start+int64(i), l)
	}
	return b.String()
}
