// Package attach checks the files of a chat message and stores them in the
// session's folder of the virtual filesystem, where the run (and the
// agent's read_file) finds them (agent-svc/design.md "Attachments").
package attach

import (
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Dir is the session folder attachments are stored in.
const Dir = "/attachments/"

// rawDir holds the base64 bytes of the files a provider takes natively.
const rawDir = Dir + ".raw/"

// File is one attachment of a chat request: JSON {name, type, data} with
// data in base64 (encoding/json decodes it into Data).
type File struct {
	Name string `json:"name"`
	// Type is the media type; empty means the one the name's extension
	// gives.
	Type string `json:"type"`
	Data []byte `json:"data"`
}

// Limits are the CHAT_ATTACHMENT_* settings.
type Limits struct {
	// MaxBytes bounds one file (CHAT_ATTACHMENT_MAX_BYTES).
	MaxBytes int
	// MaxFiles bounds the files of one message (CHAT_ATTACHMENT_MAX_FILES).
	MaxFiles int
	// Types are the media types accepted (CHAT_ATTACHMENT_TYPES).
	Types []string
	// MaxPayload is the NATS max payload, which a stored file's base64
	// must fit (0: unknown).
	MaxPayload int64
}

// envelope is room left in a write request for everything but the content.
const envelope = 4 << 10

// unsafeName matches the characters a stored name may not hold.
var unsafeName = regexp.MustCompile(`[^\p{L}\p{N}._ ()+-]+`)

// Native reports whether a provider takes files of media type typ as
// they are (images and PDFs); other types reach it as text.
func Native(typ string) bool {
	return strings.HasPrefix(typ, "image/") || typ == "application/pdf"
}

// Check validates the files of one message and fills in their names and
// types. Its errors are invalid_argument and name the limit's key.
func Check(in []File, l Limits) error {
	if len(in) > l.MaxFiles {
		return wire.Errorf(wire.InvalidArgument, "a message takes at most %d attachments (CHAT_ATTACHMENT_MAX_FILES), got %d", l.MaxFiles, len(in))
	}
	limit := int64(l.MaxBytes)
	if l.MaxPayload > 0 {
		limit = min(limit, (l.MaxPayload-envelope)/4*3)
	}
	seen := map[string]bool{}
	for i := range in {
		f := &in[i]
		name := strings.TrimSpace(unsafeName.ReplaceAllString(path.Base(strings.ReplaceAll(f.Name, `\`, "/")), "_"))
		name = strings.TrimLeft(name, ".")
		if name == "" || name == "/" {
			return wire.Errorf(wire.InvalidArgument, "attachment %d needs a file name", i+1)
		}
		if len(name) > 120 {
			name = name[len(name)-120:]
		}
		if seen[name] {
			return wire.Errorf(wire.InvalidArgument, "two attachments are named %q", name)
		}
		seen[name] = true
		f.Name = name
		if f.Type == "" {
			f.Type = mime.TypeByExtension(path.Ext(name))
		}
		if t, _, err := mime.ParseMediaType(f.Type); err == nil {
			f.Type = t
		}
		if len(f.Data) == 0 {
			return wire.Errorf(wire.InvalidArgument, "attachment %s is empty", name)
		}
		if int64(len(f.Data)) > limit {
			return wire.Errorf(wire.InvalidArgument, "attachment %s is %d bytes; the most one attachment may hold is %d bytes (CHAT_ATTACHMENT_MAX_BYTES)", name, len(f.Data), limit)
		}
		if !slices.Contains(l.Types, f.Type) {
			return wire.Errorf(wire.InvalidArgument, "attachment %s has type %q, which chat does not take; allowed: %s (CHAT_ATTACHMENT_TYPES)", name, f.Type, strings.Join(l.Types, ", "))
		}
		if err := checkContent(f); err != nil {
			return err
		}
	}
	return nil
}

// checkContent refuses a file whose bytes are not of its declared type, so
// that a provider never gets (and rejects) a renamed file.
func checkContent(f *File) error {
	sniffed := http.DetectContentType(f.Data)
	switch {
	case f.Type == "application/pdf":
		if sniffed != "application/pdf" {
			return wire.Errorf(wire.InvalidArgument, "attachment %s is not a PDF (it does not start with %%PDF-)", f.Name)
		}
	case strings.HasPrefix(f.Type, "image/"):
		if sniffed != f.Type {
			return wire.Errorf(wire.InvalidArgument, "attachment %s is not a %s image (its content looks like %s)", f.Name, f.Type, sniffed)
		}
	default:
		if !utf8.Valid(f.Data) || strings.ContainsRune(string(f.Data), 0) {
			return wire.Errorf(wire.InvalidArgument, "attachment %s of type %s is not UTF-8 text", f.Name, f.Type)
		}
	}
	return nil
}

// Store writes checked files to the session's folder, replacing files of
// the same name, and returns what the run needs to find them. A text file
// is stored as it is; an image or a PDF as a short description at its
// path (what read_file shows) plus its base64 bytes under
// /attachments/.raw/.
func Store(ctx context.Context, fs *files.FS, scope files.Scope, in []File) ([]agent.Attachment, error) {
	out := make([]agent.Attachment, 0, len(in))
	for _, f := range in {
		a := agent.Attachment{Name: f.Name, Type: f.Type, Size: int64(len(f.Data)), Path: Dir + f.Name}
		text := string(f.Data)
		if Native(f.Type) {
			a.RawPath = rawDir + f.Name
			if _, err := fs.Write(ctx, &files.WriteRequest{Scope: scope, Path: a.RawPath, Content: base64.StdEncoding.EncodeToString(f.Data), Overwrite: true}); err != nil {
				return nil, fmt.Errorf("storing attachment %s: %w", f.Name, err)
			}
			text = fmt.Sprintf("%s is a %s attachment of %d bytes. It was given to the model with the message that brought it; its content is not stored as text.\n", f.Name, f.Type, len(f.Data))
		}
		if _, err := fs.Write(ctx, &files.WriteRequest{Scope: scope, Path: a.Path, Content: text, Overwrite: true}); err != nil {
			return nil, fmt.Errorf("storing attachment %s: %w", f.Name, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// ForTurn checks a chat message's files and stores them in the session's
// folder before the run starts, so that a failed turn loses none of them,
// and names them in req. A new session gets its id here; a message of
// files only gets a question.
func ForTurn(ctx context.Context, fs *files.FS, req *agent.StartRequest, in []File, l Limits) error {
	if len(in) == 0 {
		return nil
	}
	if err := Check(in, l); err != nil {
		return err
	}
	if req.SessionID == "" {
		req.SessionID = sessions.NewID()
	} else if err := sessions.CheckID(req.SessionID); err != nil {
		return err
	}
	if strings.TrimSpace(req.Question) == "" {
		req.Question = "Please look at the attached files."
	}
	var err error
	req.Attachments, err = Store(ctx, fs, files.Scope{AccountID: req.AccountID, SessionID: req.SessionID}, in)
	return err
}
