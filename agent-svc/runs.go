package agentsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/skills"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/files"
	"github.com/mirobody/mirobody-go/services/vfs/runs"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

// start validates a turn, records it as a durable run, acknowledges it
// and runs it in the background; its events go to agent.RunSubject.
func (s *Service) start(ctx context.Context, req *agent.StartRequest) (*agent.StartResponse, error) {
	if req.AccountID == "" {
		return nil, wire.Errorf(wire.Unauthenticated, "a chat turn needs an account")
	}
	if sessions.CheckID(req.RunID) != nil {
		return nil, wire.Errorf(wire.InvalidArgument, "run_id is required: 1 to 128 letters, digits, '-' or '_'")
	}
	if strings.TrimSpace(req.Question) == "" {
		return nil, wire.Errorf(wire.InvalidArgument, "question is empty")
	}
	kind, notice := agent.OrDefault(req.Agent, s.opts.Config.DefaultAgent)
	prompt, promptNotice := s.prompts[kind].pick(req.PromptName)
	if kind == agent.AgentBase && req.MCPToken == "" {
		return nil, wire.Errorf(wire.FailedPrecondition, "a Base turn needs an MCP token; start it through the gateway")
	}
	provider, err := s.providers[kind].resolve(req.Provider, req.Model)
	if err != nil {
		return nil, err
	}
	if strings.ContainsRune(req.Question, 0) {
		return nil, wire.Errorf(wire.InvalidArgument, `the question contains a NUL character (\u0000), which text cannot hold`)
	}
	sessionID := req.SessionID
	if sessionID != "" {
		if err := sessions.CheckID(sessionID); err != nil {
			return nil, err
		}
	}
	if sessionID == "" {
		// A new session is named after its first run, so that the same
		// start sent again names the same session.
		sessionID = req.RunID
	}
	hb := s.opts.Config.HeartbeatMS
	if req.HeartbeatMS > 0 {
		hb = req.HeartbeatMS
	}
	ack := &agent.StartResponse{RunID: req.RunID, SessionID: sessionID, Instance: s.node.Service.Micro().Info().ID, HeartbeatMS: hb}
	s.mu.Lock()
	_, running := s.runs[req.RunID]
	s.mu.Unlock()
	if running {
		return ack, nil // sent again: the run goes on here
	}
	release, err := s.enterSession(ctx, req.AccountID, sessionID)
	if err != nil {
		return nil, err
	}
	var history []llm.Message
	if req.SessionID != "" {
		if history, err = s.loadHistory(ctx, req.AccountID, sessionID); err != nil {
			// Before the ack: a session id taken by another account (or
			// storage that is down) costs no model call and no wasted turn.
			release()
			return nil, err
		}
	}
	s.mu.Lock()
	if n, limit := s.turns[req.AccountID], s.opts.Config.MaxTurnsPerAccount; limit > 0 && n >= limit {
		s.mu.Unlock()
		release()
		return nil, wire.Errorf(wire.ResourceExhausted, "this account already has %d turns running, the most one account may run at once (AGENT_MAX_TURNS_PER_ACCOUNT); wait for one to end", n)
	}
	s.turns[req.AccountID]++
	s.mu.Unlock()
	// Last before the ack: a turn refused above leaves no turn in progress.
	owner := uuid.NewString()
	if err := s.beginTurn(ctx, req, sessionID, kind, owner, time.Duration(hb)*time.Millisecond); err != nil {
		s.endTurn(req.AccountID)
		release()
		if errors.Is(err, errStarted) {
			return ack, nil
		}
		return nil, err
	}
	r := &turnRun{s: s, req: req, sessionID: sessionID, history: history, kind: kind, prompt: prompt, provider: provider,
		notices:   slices.DeleteFunc([]string{notice, promptNotice}, func(n string) bool { return n == "" }),
		heartbeat: time.Duration(hb) * time.Millisecond, owner: owner}
	s.launch(ctx, r, 0, release)
	return ack, nil
}

// launch runs r in the background, under TURN_TIMEOUT_S counted from the
// run's creation (age ago); release frees the session when it has ended.
func (s *Service) launch(ctx context.Context, r *turnRun, age time.Duration, release func()) {
	req := r.req
	s.mu.Lock()
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	runCtx, cancelTimeout := context.WithTimeout(runCtx, time.Duration(s.opts.Config.TurnTimeoutS)*time.Second-age)
	s.runs[req.RunID] = runningRun{account: req.AccountID, cancel: cancel}
	r.rec = newRecorder(s, req.RunID, r.owner, r.seq, r.heartbeat, cancel)
	// A decided approval is cleared from the run once a checkpoint holds it.
	r.rec.takeDecision = r.decided
	s.mu.Unlock()
	s.wg.Add(1)
	go r.rec.loop()
	go func() {
		defer s.wg.Done()
		defer release()
		defer func() {
			cancelTimeout()
			cancel(nil)
			s.mu.Lock()
			delete(s.runs, req.RunID)
			s.mu.Unlock()
			s.endTurn(req.AccountID)
		}()
		r.run(runCtx)
	}()
}

// endTurn frees the account's place a turn took (AGENT_MAX_TURNS_PER_ACCOUNT).
func (s *Service) endTurn(account string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turns[account]--; s.turns[account] <= 0 {
		delete(s.turns, account)
	}
}

// loadHistory returns the model messages of the caller's session, none
// for a new session id. A session of another account is already_exists.
func (s *Service) loadHistory(ctx context.Context, account, session string) ([]llm.Message, error) {
	loaded, err := s.sessions.Load(ctx, &sessions.SessionLoadRequest{AccountID: account, SessionID: session})
	switch wire.CodeOf(err) {
	case "":
	case wire.NotFound:
		return nil, nil
	case wire.Unavailable, wire.DeadlineExceeded, wire.Internal:
		s.log.WarnContext(ctx, "loading the session failed", "session_id", session, "err", err)
		return nil, wire.Errorf(wire.Unavailable, "session storage is unavailable")
	default:
		return nil, err // the id is taken, the history is too large...
	}
	var history []llm.Message
	if err := json.Unmarshal(loaded.Messages, &history); err != nil {
		s.log.ErrorContext(ctx, "decoding session messages failed", "session_id", session, "err", err)
		return nil, wire.Errorf(wire.FailedPrecondition, "the session's history could not be read")
	}
	return history, nil
}

// errStarted: the run exists already, so this start is the same one sent
// again (agent.RunsStart is idempotent); the run goes on with its owner,
// or with the replica that takes it over.
var errStarted = errors.New("the run was started by this request sent before")

// beginTurn records the question as the session's turn in progress
// before the ack, so that the session exists from the run's first event
// on and any file the run writes belongs to a turn the history shows;
// and it records the run, owned by this replica, for another to take
// over if this one dies. It returns errStarted when the account's run
// is recorded already.
func (s *Service) beginTurn(ctx context.Context, req *agent.StartRequest, sessionID string, kind agent.Name, owner string, hb time.Duration) error {
	_, err := s.sessions.Begin(ctx, &sessions.SessionBeginRequest{AccountID: req.AccountID, SessionID: sessionID, RunID: req.RunID,
		Question: req.Question, Title: req.Question, Agent: string(kind)})
	if err == nil {
		stored := *req
		stored.SessionID, stored.MCPToken = sessionID, "" // the token is a secret, and a Base run is not resumed
		data, _ := json.Marshal(&stored)
		_, err = s.runStore.Create(ctx, &runs.CreateRequest{RunID: req.RunID, AccountID: req.AccountID, SessionID: sessionID, Request: data,
			Owner: owner, LeaseMS: int(agent.Lease(hb).Milliseconds())})
		if wire.IsCode(err, wire.AlreadyExists) {
			// Events answers not_found for another account's run.
			_, eerr := s.runStore.Events(ctx, &runs.EventsRequest{RunID: req.RunID, AccountID: req.AccountID, After: math.MaxInt64})
			if eerr == nil {
				return errStarted
			}
		}
		if err != nil {
			// The turn in progress would otherwise show running forever.
			_, ferr := s.sessions.Fail(context.WithoutCancel(ctx), &sessions.SessionFailRequest{AccountID: req.AccountID, SessionID: sessionID, RunID: req.RunID,
				Finish: agent.FinishUnavailable, Error: "the run could not be recorded"})
			if ferr != nil {
				s.log.WarnContext(ctx, "recording a refused run's turn failed", "session_id", sessionID, "err", ferr)
			}
		}
	}
	switch wire.CodeOf(err) {
	case "":
		return nil
	case wire.Unavailable, wire.DeadlineExceeded, wire.Internal:
		s.log.WarnContext(ctx, "recording the turn failed", "session_id", sessionID, "err", err)
		return wire.Errorf(wire.Unavailable, "session storage is unavailable")
	default:
		return err // the id is taken, the question is too large...
	}
}

// runningRun is a run this replica runs: its account (only the owner may
// cancel it) and how to stop it.
type runningRun struct {
	account string
	cancel  context.CancelCauseFunc
}

func (s *Service) onCancel(m *nats.Msg) {
	ev, err := agent.RunsCancel.Decode(m)
	if err != nil {
		return
	}
	s.mu.Lock()
	r, ok := s.runs[ev.RunID]
	s.mu.Unlock()
	if !ok || ev.AccountID != "" && ev.AccountID != r.account {
		return
	}
	s.cancelLocal(ev.RunID, ev.Reason)
}

// cancelLocal stops a run this replica runs; it saves its turn cancelled.
func (s *Service) cancelLocal(runID, reason string) {
	s.mu.Lock()
	r, ok := s.runs[runID]
	s.mu.Unlock()
	if !ok {
		return
	}
	s.log.Info("cancelling a run", "run_id", runID, "reason", reason)
	r.cancel(fmt.Errorf("cancelled: %s: %w", reason, context.Canceled))
}

func (s *Service) onSessionDeleted(m *nats.Msg) {
	if ev, err := agent.SessionDeleted.Decode(m); err == nil && ev.SessionID != "" {
		s.repl.Drop(ev.AccountID + "/" + ev.SessionID)
	}
}

// turnRun is one run on this replica: it keeps the display transcript
// and hands its events to the recorder.
type turnRun struct {
	s         *Service
	req       *agent.StartRequest
	sessionID string
	// history is the session's model messages, loaded before the ack.
	history []llm.Message
	kind    agent.Name
	// notices are sent right after start: the agent asked for is not one
	// of ours (kind answers instead), or the prompt_name is unknown; or
	// first when the run was taken over.
	notices []string
	// prompt is the template prompt_name picked; nil for the default.
	prompt    *template.Template
	provider  *resolved
	heartbeat time.Duration
	// owner is this replica's lease token for the run; seq the number of
	// the last event recorded before (a resumed run goes on from it).
	owner string
	seq   int64
	// resume is the checkpoint a run taken over continues from.
	resume *turn.Checkpoint
	// resumed is true for a run taken over from another replica, decided
	// for one resumed after the user's decision on an approval.
	resumed, decided bool
	rec              *recorder

	mu         sync.Mutex
	transcript []agent.Event
}

func (r *turnRun) emit(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rec.add(ev)
	r.keep(ev)
}

// keep adds ev to the display transcript, which merges streamed text and
// reasoning. The caller holds r.mu.
func (r *turnRun) keep(ev agent.Event) {
	if ev.Type == agent.EventHeartbeat || agent.Paused(ev.Type) {
		return
	}
	ev.Seq = 0
	if n := len(r.transcript); n > 0 && ev.Type == r.transcript[n-1].Type && (ev.Type == agent.EventText || ev.Type == agent.EventReasoning) {
		r.transcript[n-1].Text += ev.Text
		r.transcript[n-1].Reasoning += ev.Reasoning
		return
	}
	r.transcript = append(r.transcript, ev)
}

func (r *turnRun) run(ctx context.Context) {
	// The turn's span parents its model calls and agent tools; it is an
	// invoke_agent span of the GenAI conventions (design.md "Tracing").
	ctx, span := r.s.tracer.Start(ctx, "invoke_agent "+string(r.kind), trace.WithAttributes(semconv.GenAIOperationNameInvokeAgent,
		semconv.GenAIAgentName(string(r.kind)), semconv.GenAIConversationID(r.sessionID), attribute.String("mirobody.run_id", r.req.RunID)))
	defer span.End()
	log := r.s.log.With("run_id", r.req.RunID, "session_id", r.sessionID)
	// A run taken over before it recorded anything (its first replica
	// died right after creating it) still owes its stream the start.
	if !r.resumed || r.seq == 0 {
		r.emit(agent.Event{Type: agent.EventStart, ID: r.req.RunID, SessionID: r.sessionID, Attachments: r.req.Attachments})
	}
	for _, n := range r.notices {
		r.emit(agent.Event{Type: agent.EventNotice, Message: n})
	}
	finish := r.turn(ctx, log)
	span.SetAttributes(attribute.String("mirobody.finish", finish))
	if finish == agent.FinishError || finish == agent.FinishUnavailable {
		span.SetStatus(codes.Error, finish)
		span.SetAttributes(semconv.ErrorTypeKey.String(finish))
	}
	if finish != "" {
		r.nameSession(ctx, log, finish)
		r.emit(agent.Event{Type: agent.EventEnd, FinishReason: finish})
	}
	// A run this replica gives up (stopping) goes to another at once.
	r.rec.close(errors.Is(context.Cause(ctx), errHandover))
}

// turn runs the agent and saves the session; it returns the finish
// reason, or "" when the run goes on elsewhere or later (it was lost or
// handed over, or it waits for an approval) and nothing is saved here.
func (r *turnRun) turn(ctx context.Context, log *slog.Logger) string {
	cfg := r.s.opts.Config
	t := &turn.Turn{AccountID: r.req.AccountID, SessionID: r.sessionID, Question: r.req.Question, History: r.history,
		Provider: r.provider.provider, Remote: r.provider.remote, Prompt: r.prompt, MCPToken: r.req.MCPToken, Model: r.provider.model, Emit: r.emit, MCPServers: r.req.MCPServers,
		PromptData: turn.PromptData{Date: today(r.req.Timezone), Timezone: r.req.Timezone, Language: r.req.Language, Skills: skills.Load(cfg.SkillDirs, r.s.log)},
		Resume:     r.resume, Durable: r.rec, Interrupt: cfg.InterruptOnDeep,
		CanAsk: r.req.CanAsk}
	atts, err := r.s.loadAttachments(ctx, files.Scope{AccountID: r.req.AccountID, SessionID: r.sessionID}, r.req.Attachments)
	var out *turn.Outcome
	if err == nil {
		t.Attachments = atts
		out, err = r.s.agents[r.kind].Run(ctx, t)
	}
	if cause := context.Cause(ctx); errors.Is(cause, errLost) || errors.Is(cause, errHandover) || r.rec.isPaused() {
		log.Info("the run goes on elsewhere or later", "cause", cause, "paused", r.rec.isPaused())
		return ""
	}
	// The session is written even when the run was cancelled, with a
	// deadline of its own.
	saveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	stop := context.AfterFunc(r.s.halted, cancel)
	defer stop()
	if err != nil && errors.Is(context.Cause(ctx), context.Canceled) {
		// Cancelled before the agent could start (a paused run the user
		// stopped): the turn is saved cancelled with its completed steps.
		out, err = &turn.Outcome{Messages: append(slices.Clone(r.history), llm.Message{Role: llm.RoleUser, Content: r.req.Question}),
			Finish: agent.FinishCancelled}, nil
		if r.resume != nil {
			out.Messages = r.resume.Messages
		}
	}
	if err != nil {
		log.Warn("starting the turn failed", "err", err)
		code := wire.CodeOf(err)
		if code == wire.Unavailable || code == wire.DeadlineExceeded {
			return r.fail(saveCtx, log, agent.FinishUnavailable, "a service the agent needs is unavailable")
		}
		return r.fail(saveCtx, log, agent.FinishError, "the turn could not start")
	}
	// The run may have been lost while the agent ran: only its owner saves.
	if errors.Is(r.rec.sync(saveCtx), errLost) {
		return ""
	}
	finish := out.Finish
	if errors.Is(context.Cause(ctx), context.Canceled) {
		finish = agent.FinishCancelled
	}
	msgs, err := json.Marshal(out.Messages)
	if err != nil {
		log.Error("encoding session messages failed", "err", err)
		return r.fail(saveCtx, log, agent.FinishError, "the conversation could not be encoded")
	}
	r.mu.Lock()
	events, _ := json.Marshal(r.transcript)
	reason := lastError(r.transcript)
	r.mu.Unlock()
	if finish == agent.FinishCancelled && reason == "" {
		reason = "the run was cancelled"
	}
	_, err = r.s.sessions.Save(saveCtx, &sessions.SessionSaveRequest{AccountID: r.req.AccountID, SessionID: r.sessionID, Title: r.req.Question,
		Agent: string(r.kind), Messages: msgs, Turn: sessions.Turn{RunID: r.req.RunID, Question: r.req.Question, Answer: out.Answer, Finish: finish, Error: reason, Events: events}})
	if err != nil {
		log.Error("saving the session failed", "err", err)
		msg := "the conversation could not be saved"
		if wire.IsTooLarge(err) {
			msg = "the conversation is too large to save (its messages exceed the NATS max payload)"
		}
		return r.fail(saveCtx, log, agent.FinishError, msg)
	}
	return finish
}

// fail tells the client why the turn failed and records it on the turn
// in progress, so that the history does not show it running forever.
func (r *turnRun) fail(ctx context.Context, log *slog.Logger, finish, msg string) string {
	r.emit(agent.Event{Type: agent.EventError, Message: msg})
	_, err := r.s.sessions.Fail(ctx, &sessions.SessionFailRequest{AccountID: r.req.AccountID, SessionID: r.sessionID, RunID: r.req.RunID, Finish: finish, Error: msg})
	if err != nil {
		log.Error("recording the failed turn failed", "err", err)
	}
	return finish
}

// lastError is the message of the transcript's last error event.
func lastError(transcript []agent.Event) string {
	for _, ev := range slices.Backward(transcript) {
		if ev.Type == agent.EventError {
			return ev.Message
		}
	}
	return ""
}

// today is the date in the user's time zone (UTC when it is unknown).
func today(tz string) string {
	loc, err := time.LoadLocation(tz)
	if err != nil || tz == "" {
		loc = time.UTC
	}
	return time.Now().In(loc).Format("2006-01-02 (Monday)")
}
