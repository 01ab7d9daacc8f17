package stack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/boot"
)

// chatUsage documents `mirobody chat`.
const chatUsage = `usage: mirobody chat [flags] "question"

Streams one chat turn from the gateway's /api/chat, showing tool steps and
todos as they happen. Without --key it uses the dev demo key in DEV_DIR.
--agent base hands the turn to a provider that calls our /mcp itself
(MCP_PUBLIC_URL must be reachable from the provider). --file attaches a
file (repeat it for several): images and PDFs reach the model as they
are, text files as text (CHAT_ATTACHMENT_* set the limits).
`

// runChat is `mirobody chat "question"`.
func runChat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, chatUsage); fs.PrintDefaults() }
	config := fs.String("config", "", "config file")
	url := fs.String("url", "", "gateway base URL (default: http://HTTP_ADDR)")
	key := fs.String("key", "", "API key (default: the dev demo key)")
	session := fs.String("session", "", "continue this session id")
	agentName := fs.String("agent", "", "deep or base (default: DEFAULT_AGENT)")
	provider := fs.String("provider", "", "provider name from PROVIDERS_DEEP (or PROVIDERS_BASE with --agent base)")
	raw := fs.Bool("json", false, "print the raw events, one JSON object a line")
	var files []chatFile
	fs.Func("file", "attach this file (repeatable)", func(path string) error {
		f, err := readChatFile(path)
		if err == nil {
			files = append(files, f)
		}
		return err
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	question := strings.TrimSpace(strings.Join(fs.Args(), " "))
	if question == "" && len(files) == 0 {
		fs.Usage()
		return errors.New("a question is required")
	}
	env, err := boot.Load(*config, io.Discard)
	if err != nil {
		return err
	}
	if *url == "" {
		*url = "http://" + env.Config.HTTPAddr
	}
	if *key == "" {
		b, err := os.ReadFile(filepath.Join(env.Config.DevDir, "demo_key"))
		if err != nil {
			return fmt.Errorf("no --key given and no dev demo key in %s (run `mirobody dev` first): %w", env.Config.DevDir, err)
		}
		*key = strings.TrimSpace(string(b))
	}
	body, _ := json.Marshal(map[string]any{"question": question, "session_id": *session, "agent": *agentName, "provider": *provider, "attachments": files})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(*url, "/")+"/api/chat", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+*key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("calling %s: %w", *url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return renderChat(resp.Body, stdout, *raw)
}

// chatFile is one attachment of POST /api/chat (the gateway's
// attach.File): Data travels base64-encoded.
type chatFile struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Data []byte `json:"data"`
}

// readChatFile reads a --file; its type comes from its extension, else
// from its content.
func readChatFile(path string) (chatFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return chatFile{}, fmt.Errorf("reading the file to attach: %w", err)
	}
	typ := mime.TypeByExtension(filepath.Ext(path))
	if typ == "" {
		typ = http.DetectContentType(data)
	}
	return chatFile{Name: filepath.Base(path), Type: typ, Data: data}, nil
}

// renderChat prints an SSE event stream; it fails when the turn did not
// end with finish_reason stop.
func renderChat(r io.Reader, w io.Writer, raw bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	// mode is what the last output line is in the middle of: streamed
	// text, streamed reasoning, or nothing.
	mode := ""
	endLine := func() {
		if mode != "" {
			fmt.Fprintln(w)
			mode = ""
		}
	}
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if raw {
			fmt.Fprintln(w, unescapedJSON(json.RawMessage(data)))
		}
		var ev agent.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return fmt.Errorf("decoding an event: %w", err)
		}
		if raw {
			if ev.Type == agent.EventEnd {
				return finishErr(ev.FinishReason)
			}
			continue
		}
		switch ev.Type {
		case agent.EventText:
			if mode != "text" {
				endLine()
				mode = "text"
			}
			fmt.Fprint(w, ev.Text)
		case agent.EventReasoning:
			if mode != "reasoning" {
				endLine()
				fmt.Fprint(w, "  (thinking) ")
				mode = "reasoning"
			}
			fmt.Fprint(w, strings.ReplaceAll(ev.Reasoning, "\n", " "))
		case agent.EventToolCall:
			endLine()
			fmt.Fprintf(w, "→ %s %s\n", ev.Name, oneLine(unescapedJSON(ev.Args), 160))
		case agent.EventToolResult:
			mark := "←"
			if ev.Status == agent.StatusError {
				mark = "✗"
			}
			fmt.Fprintf(w, "%s %s\n", mark, oneLine(ev.Content, 160))
		case agent.EventTodos:
			endLine()
			fmt.Fprintln(w, "todos:")
			for _, t := range ev.Items {
				box := map[string]string{"completed": "[x]", "in_progress": "[>]"}[t.Status]
				if box == "" {
					box = "[ ]"
				}
				fmt.Fprintf(w, "  %s %s\n", box, t.Content)
			}
		case agent.EventNotice:
			endLine()
			fmt.Fprintf(w, "! %s\n", ev.Message)
		case agent.EventError:
			endLine()
			fmt.Fprintf(w, "error: %s\n", ev.Message)
		case agent.EventStart:
			fmt.Fprintf(w, "session %s\n", ev.SessionID)
		case agent.EventTitle:
			endLine()
			fmt.Fprintf(w, "title: %s\n", ev.Text)
		case agent.EventEnd:
			endLine()
			fmt.Fprintf(w, "(%s)\n", ev.FinishReason)
			return finishErr(ev.FinishReason)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the stream: %w", err)
	}
	return errors.New("the stream ended without an end event")
}

func finishErr(reason string) error {
	if reason == agent.FinishStop {
		return nil
	}
	return fmt.Errorf("the turn ended with %s", reason)
}

// unescapedJSON shows JSON as people write it: the services encode with
// Go's default HTML escaping, which turns => into =\u003e.
func unescapedJSON(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
