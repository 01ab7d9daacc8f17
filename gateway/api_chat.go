package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/attach"
	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// chatRequest is the body of POST /api/chat (agent-svc/design.md "Chat turns"). Unknown fields are
// ignored; message is upstream's name for question.
type chatRequest struct {
	Question  string `json:"question"`
	Message   string `json:"message"`
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
	Language  string `json:"language"`
	Timezone  string `json:"timezone"`
	// PromptName picks a PROMPTS_{NAME} template (upstream's field).
	PromptName string `json:"prompt_name"`
	// MCPServers are external MCP servers for this turn only
	// (registry-svc/design.md "External MCP servers").
	MCPServers []agent.ServerSpec `json:"mcp_servers"`
	// Attachments are files of the message (agent-svc/design.md "Attachments").
	Attachments []attach.File `json:"attachments"`
}

// chat answers POST /api/chat with the turn's events as Server-Sent
// Events, one JSON object per data line. Failures before the run starts
// are ordinary HTTP errors; later ones are an error event and an end
// event. A client that disconnects does not stop the turn: the run goes
// on, and its result is in the session when the user comes back (POST
// /api/runs/{id}/cancel stops it). The gateway keeps following the run to
// its end, so that it can record the turn failed if the agent replica
// dies.
func (s *Service) chat(c echo.Context) error {
	var body chatRequest
	if err := s.bindJSON(c, &body, "the body must be a JSON object with a question"); err != nil {
		return err
	}
	q := body.Question
	if q == "" {
		q = body.Message
	}
	if err := checkTurnServers(body.MCPServers); err != nil {
		return err
	}
	req := &agent.StartRequest{RunID: uuid.NewString(), AccountID: principal(c).AccountID, SessionID: body.SessionID, Question: q,
		Agent: body.Agent, Provider: body.Provider, Model: body.Model, Language: body.Language, Timezone: body.Timezone,
		PromptName: body.PromptName, MCPServers: body.MCPServers}
	cfg := s.opts.Config
	err := attach.ForTurn(c.Request().Context(), files.NewFS(s.node.Client), req, body.Attachments,
		attach.Limits{MaxBytes: cfg.AttachMaxBytes, MaxFiles: cfg.AttachMaxFiles, Types: cfg.AttachTypes, MaxPayload: s.node.Client.MaxPayload()})
	if err != nil {
		return err
	}
	if err := s.baseToken(c.Request().Context(), req); err != nil {
		return err
	}
	if req.MCPToken != "" {
		defer s.endBaseToken(c.Request().Context(), req)
	}
	w := c.Response()
	started := false
	write := func(ev agent.Event) {
		if !started {
			started = true
			w.Header().Set(echo.HeaderContentType, "text/event-stream")
			w.Header().Set(echo.HeaderCacheControl, "no-cache")
			w.Header().Set("X-Accel-Buffering", "no")
			// A turn may stream for minutes: lift the server's write deadline.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
			w.WriteHeader(http.StatusOK)
		}
		ev.Seq = 0
		data, _ := json.Marshal(ev)
		// Writes to a client that went away fail; the run goes on.
		_, _ = fmt.Fprintf(w, "data: %s\n\n", data)
		w.Flush()
	}
	ctx := context.WithoutCancel(c.Request().Context())
	ack, err := agent.NewClient(s.node.Client).Run(ctx, req, write)
	switch {
	case err == nil:
		return nil
	case !started:
		return err
	}
	s.log.Warn("chat turn failed", "run_id", req.RunID, "err", err)
	msg := "the turn failed"
	finish := agent.FinishError
	if wire.IsCode(err, wire.Unavailable) {
		msg, finish = "the agent stopped responding; the turn was lost", agent.FinishUnavailable
	}
	s.recordFailedTurn(ctx, req, ack, finish, msg)
	write(agent.Event{Type: agent.EventError, Message: msg})
	write(agent.Event{Type: agent.EventEnd, FinishReason: finish})
	return nil
}

// recordFailedTurn marks the turn of a run whose replica went silent
// failed in the session: the replica can no longer save it, and without
// this the history would show the turn running forever next to the files
// it wrote. A turn the run did save is left alone by vfs-svc.
func (s *Service) recordFailedTurn(ctx context.Context, req *agent.StartRequest, ack *agent.StartResponse, finish, msg string) {
	if ack == nil || ack.SessionID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := sessions.NewSessions(s.node.Client).Fail(ctx, &sessions.SessionFailRequest{AccountID: req.AccountID, SessionID: ack.SessionID,
		RunID: req.RunID, Finish: finish, Error: msg})
	if err != nil {
		s.log.Error("recording a lost turn in its session failed", "run_id", req.RunID, "session_id", ack.SessionID, "err", err)
	}
}

// baseToken gives a Base turn the token its provider presents to /mcp: a
// fresh JWT with agent base, bound to the account and the session (a new
// session gets its id here, so that the token can name it), living no
// longer than the turn and at most 10 minutes. The user's own key never
// leaves the gateway.
func (s *Service) baseToken(ctx context.Context, req *agent.StartRequest) error {
	// Only a Base turn needs a token (an unknown agent falls back as in agent-svc).
	if a, _ := agent.OrDefault(req.Agent, s.opts.Config.DefaultAgent); a != agent.AgentBase {
		return nil
	}
	if req.SessionID == "" {
		req.SessionID = sessions.NewID()
	}
	// MintAgent caps the lifetime at 10 minutes.
	ttl := time.Duration(s.opts.Config.TurnTimeoutS) * time.Second
	tok, err := s.oauth.Tokens().MintAgent(ctx, &oauth.AgentTokenRequest{AccountID: req.AccountID, SessionID: req.SessionID, Agent: agent.AgentBase, TTL: ttl})
	if err != nil {
		return fmt.Errorf("minting the Base agent's MCP token: %w", err)
	}
	req.MCPToken = tok
	return nil
}

// endBaseToken revokes a Base turn's token once the turn's stream has
// ended, however it ended, so that the provider (or anyone who saw the
// token) cannot reach /mcp with it afterwards. The request may be gone:
// the revocation gets a context of its own.
func (s *Service) endBaseToken(ctx context.Context, req *agent.StartRequest) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.oauth.Tokens().Revoke(ctx, req.MCPToken); err != nil {
		s.log.WarnContext(ctx, "revoking the Base agent's token at the end of its turn failed", "run_id", req.RunID, "err", err)
	}
}

// maxTurnServers bounds a chat request's mcp_servers.
const maxTurnServers = 8

// checkTurnServers rejects a malformed mcp_servers list; registry-svc
// applies the SSRF policy when it connects.
func checkTurnServers(servers []agent.ServerSpec) error {
	if len(servers) > maxTurnServers {
		return wire.Errorf(wire.InvalidArgument, "mcp_servers holds at most %d servers", maxTurnServers)
	}
	seen := map[string]bool{}
	for _, sv := range servers {
		if !registry.ServerNamePattern.MatchString(sv.Name) || seen[sv.Name] {
			return wire.Errorf(wire.InvalidArgument, "mcp_servers: name %q must match [a-z0-9_-]{1,32} and be unique", sv.Name)
		}
		seen[sv.Name] = true
		if u, err := url.Parse(sv.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return wire.Errorf(wire.InvalidArgument, "mcp_servers: server %s needs an absolute http or https url", sv.Name)
		}
	}
	return nil
}

// modelRoutes adds the model picker's lists, from agent-svc (which alone
// knows the providers; keys never leave it).
func (s *Service) modelRoutes(api *echo.Group) {
	api.GET("/agents", s.listAgents)
	api.GET("/providers", s.listProviders)
}

// listAgents answers GET /api/agents: every agent with its providers,
// the default ones marked.
func (s *Service) listAgents(c echo.Context) error {
	resp, err := agent.ProvidersList.Call(c.Request().Context(), s.node.Client, &agent.ProvidersRequest{})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, resp)
}

// providersView is the answer of GET /api/providers.
type providersView struct {
	Agent     agent.Name           `json:"agent"`
	Providers []agent.ProviderInfo `json:"providers"`
}

// listProviders answers GET /api/providers[?agent=]: the providers of one
// agent (the default agent when none is named), as a chat turn's provider
// and model may name them.
func (s *Service) listProviders(c echo.Context) error {
	name, err := agent.Normalize(c.QueryParam("agent"), s.opts.Config.DefaultAgent)
	if err != nil {
		return err
	}
	resp, err := agent.ProvidersList.Call(c.Request().Context(), s.node.Client, &agent.ProvidersRequest{})
	if err != nil {
		return err
	}
	for _, a := range resp.Agents {
		if a.Name == name {
			return c.JSON(http.StatusOK, providersView{Agent: a.Name, Providers: a.Providers})
		}
	}
	return wire.Errorf(wire.NotFound, "agent-svc lists no agent %q", name)
}

// cancelRunResponse is the body of a POST /api/runs/{id}/cancel answer.
type cancelRunResponse struct {
	RunID string `json:"run_id"`
}

// cancelRun answers POST /api/runs/{id}/cancel: the replica running the
// caller's run stops it, and the run saves its turn with finish cancelled
// (its stream, if anyone still reads it, ends the same way). The run id is
// the id of the chat stream's start event. Cancellation is announced to
// every agent replica, so the answer is 202 whether or not the run is
// still going; a run of another account is not touched.
func (s *Service) cancelRun(c echo.Context) error {
	id := c.Param("id")
	if _, err := uuid.Parse(id); err != nil {
		return wire.Errorf(wire.InvalidArgument, "run id %q is not a UUID", id)
	}
	err := agent.NewClient(s.node.Client).Cancel(c.Request().Context(), &agent.CancelEvent{RunID: id, AccountID: principal(c).AccountID, Reason: "the user stopped the run"})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, cancelRunResponse{RunID: id})
}
