package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/mirobody/mirobody-go/gateway/internal/attach"
	"github.com/mirobody/mirobody-go/gateway/internal/oauth"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/runs"
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
	// CanAsk says the client answers a tool's questions (ask events,
	// POST /api/runs/{id}/answer).
	CanAsk bool `json:"can_ask"`
}

// chat answers POST /api/chat with the turn's events as Server-Sent
// Events, one JSON object per data line, its seq as the SSE id. Failures
// before the run starts are ordinary HTTP errors; later ones are an error
// event and an end event. A client that disconnects does not stop the
// turn: the run is durable and goes on, even on another agent replica,
// and its result is in the session when the user comes back (GET
// /api/runs/{id}/stream follows it again; POST /api/runs/{id}/cancel
// stops it).
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
		PromptName: body.PromptName, MCPServers: body.MCPServers, CanAsk: body.CanAsk}
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
	ctx := c.Request().Context()
	startCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	_, err = agent.RunsStart.Call(startCtx, s.node.Client, req)
	cancel()
	if err != nil {
		return err
	}
	// Followed to its end even when the client went away, as before runs
	// were durable: a Base turn's token lives until then.
	return s.follow(context.WithoutCancel(ctx), c, req.RunID, 0)
}

// follow streams the caller's run's events after after: recorded ones
// first, then live ones, until the end or an approval event, or until ctx
// ends. When the client goes away the run goes on.
func (s *Service) follow(ctx context.Context, c echo.Context, id string, after int64) error {
	account := principal(c).AccountID
	store := runs.NewClient(s.node.Client)
	backlog := func(ctx context.Context, after int64) ([]agent.Event, bool, error) {
		var out []agent.Event
		for {
			resp, err := store.Events(ctx, &runs.EventsRequest{RunID: id, AccountID: account, After: after})
			if err != nil {
				return nil, false, err
			}
			for _, e := range resp.Events {
				var ev agent.Event
				if err := json.Unmarshal(e.Data, &ev); err != nil {
					return nil, false, fmt.Errorf("decoding a run event: %w", err)
				}
				out = append(out, ev)
				after = e.Seq
			}
			if resp.More {
				continue
			}
			// A done run records its end event just after saving its turn.
			live := resp.State == runs.StateRunning || resp.State == runs.StateDone && len(out) > 0 && out[len(out)-1].Type != agent.EventEnd
			return out, live, nil
		}
	}
	sse := newSSE(c.Response())
	hb := time.Duration(s.opts.Config.HeartbeatMS) * time.Millisecond
	err := agent.NewClient(s.node.Client).Follow(ctx, id, after, hb, backlog, sse.write)
	switch {
	case err == nil:
		if !sse.started {
			sse.write(agent.Event{Type: agent.EventHeartbeat}) // nothing after Last-Event-ID: an empty stream
		}
		return nil
	case ctx.Err() != nil:
		return nil // the client went away; the run goes on
	case !sse.started:
		return err
	}
	s.endStream(sse, id, err)
	return nil
}

// endStream ends a run's stream that stopped before its end event. The
// run is not failed: it is durable, and goes on once an agent replica
// takes it over (its client can follow it again with GET
// /api/runs/{id}/stream).
func (s *Service) endStream(sse *sseWriter, runID string, err error) {
	s.log.Warn("following a run failed", "run_id", runID, "err", err)
	msg := "following the run failed; GET /api/runs/" + runID + "/stream follows it again"
	if wire.IsCode(err, wire.Unavailable) {
		msg = "the agent stopped responding; the run goes on when an agent replica takes it over (GET /api/runs/" + runID + "/stream follows it)"
	}
	sse.write(agent.Event{Type: agent.EventError, Message: msg})
	sse.write(agent.Event{Type: agent.EventEnd, FinishReason: agent.FinishUnavailable})
}

// sseWriter writes a run's events as Server-Sent Events: the event's seq
// is its SSE id (so a client reconnects with Last-Event-ID), its JSON the
// data line.
type sseWriter struct {
	w       *echo.Response
	started bool
}

func newSSE(w *echo.Response) *sseWriter { return &sseWriter{w: w} }

func (s *sseWriter) write(ev agent.Event) {
	w := s.w
	if !s.started {
		s.started = true
		w.Header().Set(echo.HeaderContentType, "text/event-stream")
		w.Header().Set(echo.HeaderCacheControl, "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		// A turn may stream for minutes: lift the server's write deadline.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
		w.WriteHeader(http.StatusOK)
	}
	seq := ev.Seq
	ev.Seq = 0
	data, _ := json.Marshal(ev)
	// Writes to a client that went away fail; the run goes on.
	if seq > 0 {
		_, _ = fmt.Fprintf(w, "id: %d\ndata: %s\n\n", seq, data)
	} else {
		_, _ = fmt.Fprintf(w, "data: %s\n\n", data)
	}
	w.Flush()
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
// every agent replica and recorded on the run, so that a run being taken
// over or waiting for an approval stops too; the answer is 202 whether or
// not the run is still going, and a run of another account is not touched.
func (s *Service) cancelRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	ctx, account := c.Request().Context(), principal(c).AccountID
	if _, err := runs.NewClient(s.node.Client).Cancel(ctx, &runs.CancelRequest{RunID: id, AccountID: account}); err != nil && !wire.IsCode(err, wire.NotFound) {
		return err
	}
	if err := agent.NewClient(s.node.Client).Cancel(ctx, &agent.CancelEvent{RunID: id, AccountID: account, Reason: "the user stopped the run"}); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, cancelRunResponse{RunID: id})
}

func runID(c echo.Context) (string, error) {
	id := c.Param("id")
	if _, err := uuid.Parse(id); err != nil {
		return "", wire.Errorf(wire.InvalidArgument, "run id %q is not a UUID", id)
	}
	return id, nil
}

// streamRun answers GET /api/runs/{id}/stream: the caller's run's events
// after Last-Event-ID (or ?after=; 0 replays from the start) from storage,
// then live ones until the end, or until it pauses for an approval.
func (s *Service) streamRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	last := c.Request().Header.Get("Last-Event-ID")
	if last == "" {
		last = c.QueryParam("after")
	}
	var after int64
	if last != "" {
		if after, err = strconv.ParseInt(last, 10, 64); err != nil || after < 0 {
			return wire.Errorf(wire.InvalidArgument, "Last-Event-ID must be an event's id, a number")
		}
	}
	// Checked before the stream starts, so another account's run (or none)
	// is an ordinary 404.
	if _, err := runs.NewClient(s.node.Client).Events(c.Request().Context(), &runs.EventsRequest{RunID: id, AccountID: principal(c).AccountID, After: math.MaxInt64}); err != nil {
		return err
	}
	return s.follow(c.Request().Context(), c, id, after)
}

// approveRequest is the body of POST /api/runs/{id}/approve.
type approveRequest struct {
	// Decision is approve, edit or reject.
	Decision string `json:"decision"`
	// Arguments replace the call's arguments (edit).
	Arguments json.RawMessage `json:"arguments"`
	// Reason is what the model sees as the tool's result (reject).
	Reason string `json:"reason"`
	// ToolCallID names the call decided on; empty means the one the run
	// waits for.
	ToolCallID string `json:"tool_call_id"`
}

// approveResponse is the answer of POST /api/runs/{id}/approve.
type approveResponse struct {
	RunID string `json:"run_id"`
	State string `json:"state"`
}

// approveRun answers POST /api/runs/{id}/approve: the user's decision on
// the tool call the caller's paused run waits for (agent-svc/design.md
// "Approvals"). The run goes on, on whichever agent replica claims it
// first; GET /api/runs/{id}/stream follows it.
func (s *Service) approveRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	var body approveRequest
	if err := s.bindJSON(c, &body, "the body must be a JSON object with a decision: approve, edit or reject"); err != nil {
		return err
	}
	return s.decide(c, id, runs.Decision{ToolCallID: body.ToolCallID, Decision: body.Decision, Arguments: body.Arguments, Reason: body.Reason})
}

// answerRequest is the body of POST /api/runs/{id}/answer: an MCP
// ElicitResult for the tool call that asks.
type answerRequest struct {
	// ToolCallID names the call that asks; empty means the one the run
	// waits for.
	ToolCallID string `json:"tool_call_id"`
	// Action is accept, decline or cancel.
	Action string `json:"action"`
	// Content holds the answer's fields (accept).
	Content map[string]any `json:"content,omitempty"`
}

// answerRun answers POST /api/runs/{id}/answer: the user's answer to the
// question a tool of the caller's paused run asks (agent-svc/design.md
// "Questions from tools"). The tool runs again with it.
func (s *Service) answerRun(c echo.Context) error {
	id, err := runID(c)
	if err != nil {
		return err
	}
	var body answerRequest
	if err := s.bindJSON(c, &body, "the body must be a JSON object with an action: accept, decline or cancel"); err != nil {
		return err
	}
	answer, _ := json.Marshal(map[string]any{"action": body.Action, "content": body.Content})
	return s.decide(c, id, runs.Decision{ToolCallID: body.ToolCallID, Decision: runs.DecisionAnswer, Answer: answer})
}

// decide records d for the run id (the call it waits for when d names
// none) and answers 202.
func (s *Service) decide(c echo.Context, id string, d runs.Decision) error {
	ctx, account := c.Request().Context(), principal(c).AccountID
	store := runs.NewClient(s.node.Client)
	if d.ToolCallID == "" {
		cur, err := store.Events(ctx, &runs.EventsRequest{RunID: id, AccountID: account, After: math.MaxInt64})
		if err != nil {
			return err
		}
		if cur.Approval == nil {
			return wire.Errorf(wire.FailedPrecondition, "run %s is not waiting for the user", id)
		}
		d.ToolCallID = cur.Approval.ToolCallID
	}
	run, err := store.Decide(ctx, &runs.DecideRequest{RunID: id, AccountID: account, Decision: d})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, approveResponse{RunID: id, State: run.State})
}
