package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/conf"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

// testPNG is a small PNG image.
func testPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range 8 {
		img.Set(i, i, color.RGBA{R: 200, A: 255})
	}
	var b bytes.Buffer
	must(t, png.Encode(&b, img))
	return b.Bytes()
}

// lastOf returns the newest request the scripted provider got in format.
func lastOf(t *testing.T, srv *scripted.Server, format string) *scripted.Received {
	t.Helper()
	reqs := srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Format == format && !strings.Contains(reqs[i].System, "short title") {
			return reqs[i]
		}
	}
	t.Fatalf("no %s request among %d", format, len(reqs))
	return nil
}

// TestChatAttachments: the files of a message are stored in the session's
// folder, reach each provider in its native wire shape (images and PDFs)
// or as text, are refused with the limit's key when too many, too large,
// of a type chat does not take or not what they claim; a failed turn keeps
// them; the lab-report flow imports the confirmed indicators, whose chart
// comes back from query_health_indicators; the first turn names the
// session; and `mirobody chat --file` sends files.
func TestChatAttachments(t *testing.T) {
	var failing atomic.Bool
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		if failing.Load() && !strings.Contains(r.System, "short title") {
			return scripted.Step{Fault: &scripted.Fault{Status: http.StatusBadRequest}}, nil
		}
		return scripted.Demo(r)
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, func(c *conf.Config) {
		c.Provider = "oa"
		c.SessionTitles = true
		c.AttachMaxBytes = 64 << 10
	})
	pdf, err := os.ReadFile("testdata/lab-report.pdf")
	must(t, err)
	img := testPNG(t)
	csv := "indicator,value,unit,time\nFerritin,80,ng/mL,2026-03-14\n"
	fs := files.NewFS(servicetest.Client(t, st.NATS))

	var sessionID string
	for _, tc := range []struct{ provider, format, imageKind, pdfKind string }{
		{"oa", scripted.FormatOpenAI, "image_url", "file"},
		{"an", scripted.FormatAnthropic, "image", "document"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			evs := st.chat(t, map[string]any{"question": "Please read my lab report", "provider": tc.provider, "attachments": []map[string]any{
				{"name": "lab-report.pdf", "type": "application/pdf", "data": pdf},
				{"name": "photo.png", "data": img},
				{"name": "../ferritin.csv", "type": "text/csv", "data": []byte(csv)},
			}})
			end := evs[len(evs)-1]
			if end.Type != agent.EventEnd || end.FinishReason != agent.FinishStop {
				t.Fatalf("the turn ended %+v (errors %v)", end, srv.Errors())
			}
			rec := lastOf(t, srv, tc.format)
			if len(rec.Parts) != 2 {
				t.Fatalf("%s parts %+v, want the image and the PDF", tc.format, rec.Parts)
			}
			img0, pdf0 := rec.Parts[1], rec.Parts[0] // in the order of the attachments
			if img0.Kind != tc.imageKind || img0.MediaType != "image/png" || !bytes.Equal(img0.Data, img) {
				t.Errorf("image part %s %s (%d bytes), want %s image/png", img0.Kind, img0.MediaType, len(img0.Data), tc.imageKind)
			}
			if pdf0.Kind != tc.pdfKind || pdf0.MediaType != "application/pdf" || pdf0.Filename != "lab-report.pdf" || !bytes.Equal(pdf0.Data, pdf) {
				t.Errorf("PDF part %s %s %q (%d bytes), want %s application/pdf", pdf0.Kind, pdf0.MediaType, pdf0.Filename, len(pdf0.Data), tc.pdfKind)
			}
			if user := rec.LastUser(); !strings.Contains(user, "Please read my lab report") || !strings.Contains(user, "Ferritin,80,ng/mL") || !strings.Contains(user, "/attachments/ferritin.csv") {
				t.Errorf("the user message lacks the question or the CSV's text: %q", user)
			}
			var title string
			for _, ev := range evs {
				if ev.Type == agent.EventTitle {
					title = ev.Text
				}
			}
			if title != "Demo: Please read my lab" {
				t.Errorf("title event %q", title)
			}
			sessionID = evs[0].SessionID
			code, body := httpGet(t, st.URL+"/api/sessions/"+sessionID, st.Key)
			var got sessions.SessionGetResponse
			if code != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Session.Title != title {
				t.Errorf("GET the session: %d %s", code, body)
			}
			// The agent reads the files with read_file.
			scope := files.Scope{AccountID: st.AccountID, SessionID: sessionID}
			text, err := fs.Read(context.Background(), &files.ReadRequest{Scope: scope, Path: "/attachments/ferritin.csv"})
			if err != nil || text.Content != csv {
				t.Errorf("read /attachments/ferritin.csv: %v %+v", err, text)
			}
			note, err := fs.Read(context.Background(), &files.ReadRequest{Scope: scope, Path: "/attachments/lab-report.pdf"})
			if err != nil || !strings.Contains(note.Content, "application/pdf attachment") {
				t.Errorf("read /attachments/lab-report.pdf: %v %+v", err, note)
			}
		})
	}

	t.Run("lab report", func(t *testing.T) {
		evs := st.chat(t, map[string]any{"question": "What does my report say?", "attachments": []map[string]any{{"name": "lab-report.pdf", "data": pdf}}})
		sid := evs[0].SessionID
		answer := textOf(evs)
		for _, want := range []string{"| Glucose | 5.4 | mmol/L | 2026-03-14 |", "| Glucose | 6.1 | mmol/L | 2025-09-10 |", "| HbA1c | 5.6 | % |", "Answer yes to confirm"} {
			if !strings.Contains(answer, want) {
				t.Errorf("the proposal lacks %q:\n%s", want, answer)
			}
		}
		// Nothing is imported before the user confirms.
		data := userdata.NewData(servicetest.Client(t, st.NATS))
		q := &userdata.HealthQueryRequest{AccountID: st.AccountID, Mode: userdata.HealthRows, Indicators: []string{"Glucose"}}
		if rows, err := data.QueryHealth(context.Background(), q); err != nil || len(rows.Rows) != 0 {
			t.Fatalf("before the confirmation: %v %+v", err, rows)
		}
		evs = st.chat(t, map[string]any{"question": "yes, import them", "session_id": sid})
		if calls := ofType(evs, agent.EventToolCall); len(calls) != 1 || calls[0].Name != "import_health_indicators" {
			t.Fatalf("tool calls %+v", calls)
		}
		if res := ofType(evs, agent.EventToolResult); len(res) != 1 || res[0].Status != agent.StatusOK || !strings.Contains(res[0].Content, `"imported":4`) {
			t.Fatalf("import result %+v", res)
		}
		rows, err := data.QueryHealth(context.Background(), q)
		if err != nil || len(rows.Rows) != 2 || rows.Rows[1].Value != 5.4 || rows.Rows[1].Unit != "mmol/L" || !strings.Contains(rows.Rows[1].Source, "Glucose 5.4 mmol/L") {
			t.Fatalf("imported Glucose rows: %v %+v", err, rows)
		}
		// The gated query tool now shows, and its result carries a chart.
		evs = st.chat(t, map[string]any{"question": "Chart my results", "session_id": sid})
		res := ofType(evs, agent.EventToolResult)
		if len(res) != 1 {
			t.Fatalf("chart turn results %+v (errors %v)", res, srv.Errors())
		}
		var out struct {
			Chart struct {
				Type   string `json:"type"`
				Series []struct {
					Name string    `json:"name"`
					Unit string    `json:"unit"`
					T    []int64   `json:"t"`
					V    []float64 `json:"v"`
				} `json:"series"`
			} `json:"chart"`
		}
		must(t, json.Unmarshal([]byte(res[0].Content), &out))
		found := false
		for _, s := range out.Chart.Series {
			if s.Name == "Glucose" {
				found = s.Unit == "mmol/L" && len(s.V) == 2 && s.V[0] == 6.1 && s.V[1] == 5.4 && s.T[0] < s.T[1]
			}
		}
		if out.Chart.Type != "timeseries" || !found {
			t.Errorf("chart %+v, want a Glucose series oldest first", out.Chart)
		}
	})

	t.Run("limits", func(t *testing.T) {
		big := bytes.Repeat([]byte("a"), 65<<10)
		for _, tc := range []struct {
			name  string
			files []map[string]any
			want  string
		}{
			{"too large", []map[string]any{{"name": "big.txt", "data": big}}, "CHAT_ATTACHMENT_MAX_BYTES"},
			{"type", []map[string]any{{"name": "a.zip", "type": "application/zip", "data": []byte("PK")}}, "CHAT_ATTACHMENT_TYPES"},
			{"not a PDF", []map[string]any{{"name": "fake.pdf", "data": []byte("hello")}}, "is not a PDF"},
			{"too many", []map[string]any{{"name": "1.txt", "data": []byte("1")}, {"name": "2.txt", "data": []byte("2")}, {"name": "3.txt", "data": []byte("3")},
				{"name": "4.txt", "data": []byte("4")}, {"name": "5.txt", "data": []byte("5")}}, "CHAT_ATTACHMENT_MAX_FILES"},
		} {
			b, _ := json.Marshal(map[string]any{"question": "x", "attachments": tc.files})
			code, body := apiDo(t, http.MethodPost, st.URL+"/api/chat", st.Key, string(b))
			if code != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
				t.Errorf("%s: %d %s, want 400 naming %s", tc.name, code, body, tc.want)
			}
		}
	})

	t.Run("failed turn", func(t *testing.T) {
		failing.Store(true)
		defer failing.Store(false)
		evs := st.chat(t, map[string]any{"question": "this turn fails", "attachments": []map[string]any{{"name": "notes.md", "data": []byte("# kept\n")}}})
		if end := evs[len(evs)-1]; end.FinishReason != agent.FinishError {
			t.Fatalf("the turn ended %+v", end)
		}
		got, err := fs.Read(context.Background(), &files.ReadRequest{Scope: files.Scope{AccountID: st.AccountID, SessionID: evs[0].SessionID}, Path: "/attachments/notes.md"})
		if err != nil || got.Content != "# kept\n" {
			t.Errorf("the attachment of a failed turn: %v %+v", err, got)
		}
	})

	t.Run("cli", func(t *testing.T) {
		dir := t.TempDir()
		imgPath := filepath.Join(dir, "scan.png")
		must(t, os.WriteFile(imgPath, img, 0o600))
		var out, errOut bytes.Buffer
		err := runChat(context.Background(), []string{"--config", "testdata/empty.yaml", "--url", st.URL, "--key", st.Key,
			"--file", "testdata/lab-report.pdf", "--file", imgPath, "what do these show?"}, strings.NewReader(""), &out, &errOut)
		if err != nil {
			t.Fatalf("mirobody chat --file: %v\n%s\n%s", err, out.String(), errOut.String())
		}
		if !strings.Contains(out.String(), "| Glucose | 5.4 |") || !strings.Contains(out.String(), "title: Demo: what do these show") {
			t.Errorf("output:\n%s", out.String())
		}
		rec := lastOf(t, srv, scripted.FormatOpenAI)
		if len(rec.Parts) != 2 || rec.Parts[0].Filename != "lab-report.pdf" || rec.Parts[1].MediaType != "image/png" {
			t.Errorf("parts %+v", rec.Parts)
		}
		err = runChat(context.Background(), []string{"--config", "testdata/empty.yaml", "--url", st.URL, "--key", st.Key, "--file", filepath.Join(dir, "missing.pdf"), "q"}, strings.NewReader(""), &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), "reading the file to attach") {
			t.Errorf("a missing --file: %v", err)
		}
	})
}

// TestBaseAgentAttachments: a Base turn's files reach the provider that
// runs the tool loop in its native shape too (Responses input_file and
// input_image, the Messages MCP connector's document and image blocks).
func TestBaseAgentAttachments(t *testing.T) {
	srv := scripted.New(scripted.Demo)
	t.Cleanup(srv.Close)
	addr := servicetest.FreeAddr(t)
	st := startChatStack(t, srv, func(c *conf.Config) {
		c.HTTPAddr, c.MCPPublicURL = addr, "http://"+addr
		c.ProvidersBase = map[string]conf.Provider{
			"an": {Type: "anthropic", Model: "claude-test", BaseURL: srv.AnthropicBaseURL()},
			"oa": {Type: "openai-responses", Model: "gpt-test", BaseURL: srv.OpenAIBaseURL()},
		}
	})
	pdf, err := os.ReadFile("testdata/lab-report.pdf")
	must(t, err)
	img := testPNG(t)
	for _, tc := range []struct{ provider, format, pdfKind, imageKind string }{
		{"oa", scripted.FormatResponses, "input_file", "input_image"},
		{"an", scripted.FormatAnthropic, "document", "image"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			evs := st.chat(t, map[string]any{"question": "Read my report", "agent": "base", "provider": tc.provider, "attachments": []map[string]any{
				{"name": "lab-report.pdf", "data": pdf}, {"name": "scan.png", "data": img}}})
			if end := evs[len(evs)-1]; end.FinishReason != agent.FinishStop {
				t.Fatalf("the turn ended %+v (errors %v)", end, srv.Errors())
			}
			rec := lastOf(t, srv, tc.format)
			if rec.MCP == nil || len(rec.Parts) != 2 || rec.Parts[0].Kind != tc.pdfKind || !bytes.Equal(rec.Parts[0].Data, pdf) ||
				rec.Parts[1].Kind != tc.imageKind || rec.Parts[1].MediaType != "image/png" || !bytes.Equal(rec.Parts[1].Data, img) {
				t.Errorf("the %s request (MCP %v) has the parts %+v", tc.format, rec.MCP != nil, rec.Parts)
			}
		})
	}
}
