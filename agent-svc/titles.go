package agentsvc

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
)

// titlePrompt asks for a session title (agent-svc/design.md "Session
// titles"). The scripted provider's Demo recognises it by "short title".
const titlePrompt = "You write a short title for a chat conversation: 3 to 6 words in the language of the question, " +
	"no quotes, no trailing punctuation. Answer with the title only."

// titleTimeout bounds the title call; the end event waits for it.
const titleTimeout = 15 * time.Second

// maxTitleRunes cuts a long model answer down to a title.
const maxTitleRunes = 60

// nameSession gives a session whose first turn answered a short title
// from one cheap call to the turn's provider, and tells the client with a
// title event. Any failure keeps the first question as the title.
func (r *turnRun) nameSession(ctx context.Context, log *slog.Logger, finish string) {
	if !r.s.opts.Config.SessionTitles || finish != agent.FinishStop || len(r.history) > 0 {
		return
	}
	p := r.provider.provider
	if p == nil {
		// Anthropic serves both agents; OpenAI Responses has no plain call.
		p, _ = r.provider.remote.(llm.Provider)
	}
	if p == nil {
		return
	}
	r.mu.Lock()
	answer := ""
	for _, ev := range slices.Backward(r.transcript) {
		if ev.Type == agent.EventText {
			answer = ev.Text
			break
		}
	}
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, titleTimeout)
	defer cancel()
	msg := "Question: " + cutRunes(r.req.Question, 1000) + "\n\nAnswer: " + cutRunes(answer, 1000)
	resp, err := p.Stream(ctx, &llm.Request{Model: r.provider.model, System: titlePrompt, MaxTokens: 64,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: msg}}}, func(llm.Delta) {})
	if err != nil {
		log.Info("the session title call failed; the question stays the title", "err", err)
		return
	}
	title := cleanTitle(resp.Message.Content)
	if title == "" {
		return
	}
	if _, err := r.s.sessions.Rename(ctx, &sessions.SessionRenameRequest{AccountID: r.req.AccountID, SessionID: r.sessionID, Title: title}); err != nil {
		log.Warn("saving the session title failed", "err", err)
		return
	}
	r.emit(agent.Event{Type: agent.EventTitle, Text: title})
}

// cleanTitle is a model's title on one line, without quotes, Markdown
// emphasis or trailing punctuation, cut at maxTitleRunes.
func cleanTitle(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.Trim(s, " \t\"'`*#“”‘’")
	s = strings.TrimPrefix(s, "Title: ")
	s = strings.TrimRight(s, " .!:;,。")
	return cutRunes(strings.Join(strings.Fields(s), " "), maxTitleRunes)
}

// cutRunes keeps the first n characters of s.
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
