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
	"os/signal"
	"path/filepath"
	"strings"
	"time"

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
are, text files as text (CHAT_ATTACHMENT_* set the limits). A tool call
that needs approval (INTERRUPT_ON_DEEP) is shown and asked about on the
terminal, and so is a tool's question to the user (mirobody.elicit).
Ctrl-C stops the turn (POST /api/runs/{id}/cancel); a second one quits.
`

// runChat is `mirobody chat "question"`.
func runChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
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
	// The first Ctrl-C stops the run; once handled, a second one quits.
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt)
	defer stopSignals()
	c := &chatClient{base: strings.TrimSuffix(*url, "/"), key: *key}
	body, _ := json.Marshal(map[string]any{"question": question, "session_id": *session, "agent": *agentName, "provider": *provider, "attachments": files,
		"can_ask": true})
	resp, err := c.do(ctx, http.MethodPost, "/api/chat", body, "")
	in := bufio.NewReader(stdin)
	st := &chatState{}
	for {
		if err != nil {
			return c.interrupted(ctx, st, stdout, err)
		}
		err = renderChat(resp.Body, stdout, *raw, st)
		resp.Body.Close()
		if !errors.Is(err, errPaused) {
			return c.interrupted(ctx, st, stdout, err)
		}
		path, ask := "/approve", askApproval
		if st.approval.Type == agent.EventAsk {
			path, ask = "/answer", askUser
		}
		decision, aerr := ask(in, stdout, st.approval)
		if aerr != nil {
			return aerr
		}
		ack, aerr := c.do(ctx, http.MethodPost, "/api/runs/"+st.runID+path, decision, "")
		if aerr != nil {
			return c.interrupted(ctx, st, stdout, aerr)
		}
		ack.Body.Close()
		resp, err = c.do(ctx, http.MethodGet, "/api/runs/"+st.runID+"/stream", nil, fmt.Sprint(st.lastID))
	}
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

// chatClient calls the gateway's chat API with an API key.
type chatClient struct{ base, key string }

// do sends a request and returns its response, or the error the gateway
// answered; lastID sets Last-Event-ID.
func (c *chatClient) do(ctx context.Context, method, path string, body []byte, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// interrupted returns err, unless the user pressed Ctrl-C: then the run
// is stopped on the server, not only left behind.
func (c *chatClient) interrupted(ctx context.Context, st *chatState, w io.Writer, err error) error {
	if ctx.Err() == nil || st.runID == "" {
		return err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	resp, cerr := c.do(cctx, http.MethodPost, "/api/runs/"+st.runID+"/cancel", nil, "")
	if cerr != nil {
		return fmt.Errorf("stopping the run %s: %w", st.runID, cerr)
	}
	resp.Body.Close()
	fmt.Fprintf(w, "\n(stopped run %s)\n", st.runID)
	return errors.New("the turn was stopped")
}

// askApproval shows a tool call that waits for the user and reads the
// decision: approve, edit (new arguments, a JSON object on one line) or
// reject (a reason the model sees).
func askApproval(in *bufio.Reader, w io.Writer, ev agent.Event) ([]byte, error) {
	fmt.Fprintf(w, "? the agent wants to run %s %s\n", ev.Name, oneLine(unescapedJSON(ev.Args), 400))
	for {
		fmt.Fprint(w, "  [a]pprove, [e]dit, [r]eject? ")
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return nil, fmt.Errorf("reading the decision: %w", err)
		}
		d := map[string]any{"tool_call_id": ev.ID}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "a", "approve", "y", "yes":
			d["decision"] = "approve"
		case "e", "edit":
			fmt.Fprint(w, "  arguments (JSON object): ")
			args, _ := in.ReadString('\n')
			if !json.Valid([]byte(args)) {
				fmt.Fprintln(w, "  that is not JSON")
				continue
			}
			d["decision"], d["arguments"] = "edit", json.RawMessage(strings.TrimSpace(args))
		case "r", "reject", "n", "no":
			fmt.Fprint(w, "  reason: ")
			reason, _ := in.ReadString('\n')
			d["decision"], d["reason"] = "reject", strings.TrimSpace(reason)
		default:
			continue
		}
		return json.Marshal(d)
	}
}

// chatState is what a chat follows across streams: its run, the last
// event id seen (to resume with Last-Event-ID), and the approval (or ask)
// event a paused run waits for.
type chatState struct {
	runID    string
	lastID   int64
	approval agent.Event
}

// errPaused ends a stream that paused for an approval.
var errPaused = errors.New("the run waits for an approval")

// renderChat prints an SSE event stream; it fails when the turn did not
// end with finish_reason stop, and with errPaused when it paused for an
// approval. st (if not nil) learns the run id and the last event id.
func renderChat(r io.Reader, w io.Writer, raw bool, st *chatState) error {
	if st == nil {
		st = &chatState{}
	}
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
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			_, _ = fmt.Sscan(id, &st.lastID)
			continue
		}
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
		if ev.Type == agent.EventStart {
			st.runID = ev.ID
		}
		if raw {
			switch ev.Type {
			case agent.EventEnd:
				return finishErr(ev.FinishReason)
			case agent.EventApproval, agent.EventAsk:
				st.approval = ev
				return errPaused
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
		case agent.EventApproval, agent.EventAsk:
			endLine()
			st.approval = ev
			return errPaused
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
