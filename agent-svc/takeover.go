package agentsvc

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/agent"
	"github.com/mirobody/mirobody-go/services/vfs/runs"
	"github.com/mirobody/mirobody-go/services/vfs/sessions"
)

// maxTakeovers bounds how often one run is taken over: a run that brings
// down every replica it lands on is recorded failed instead of going on.
const maxTakeovers = 5

// sweep claims, every heartbeat interval, the runs whose owner stopped
// renewing its lease (its replica died, or stopped and handed them over)
// and the runs an approval or a cancel woke, and resumes them here
// (agent-svc/design.md "Durable runs").
func (s *Service) sweep(ctx context.Context) {
	hb := time.Duration(s.opts.Config.HeartbeatMS) * time.Millisecond
	tick := time.NewTicker(hb)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for ctx.Err() == nil {
			owner := uuid.NewString()
			claimCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			resp, err := s.runStore.Claim(claimCtx, &runs.ClaimRequest{Owner: owner, LeaseMS: int(agent.Lease(hb).Milliseconds())})
			cancel()
			if err != nil {
				s.log.Debug("claiming runs failed", "err", err)
				break
			}
			if !resp.Claimed {
				break
			}
			// Resumed side by side: one slow resume must not hold up the
			// others past their new lease.
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.resume(ctx, &resp.Run, owner, hb)
			}()
		}
	}
}

// resume continues a claimed run on this replica from its last
// checkpoint, or ends it when it cannot go on.
func (s *Service) resume(ctx context.Context, run *runs.Run, owner string, hb time.Duration) {
	log := s.log.With("run_id", run.ID, "session_id", run.SessionID)
	var req agent.StartRequest
	if err := json.Unmarshal(run.Request, &req); err != nil {
		log.Error("decoding a claimed run failed", "err", err)
		return
	}
	kind, _ := agent.OrDefault(req.Agent, s.opts.Config.DefaultAgent)
	r := &turnRun{s: s, req: &req, sessionID: run.SessionID, kind: kind, heartbeat: hb, owner: owner, seq: run.LastSeq, resumed: true}
	if run.Decision == nil && !run.Cancelled {
		r.notices = []string{"the agent replica running this turn stopped; another one took it over, and the step in progress starts over"}
	}
	var cp *turn.Checkpoint
	if len(run.Checkpoint) > 0 {
		cp = &turn.Checkpoint{}
		if err := json.Unmarshal(run.Checkpoint, cp); err != nil {
			log.Error("decoding a run's checkpoint failed", "err", err)
			s.endClaimed(ctx, r, agent.FinishError, "the run's saved state could not be read")
			return
		}
	}
	if run.Decision != nil {
		if cp == nil {
			cp = &turn.Checkpoint{}
		}
		if d := *run.Decision; d.Decision == runs.DecisionAnswer {
			// The answer to a tool's question: the tool runs again with it.
			if a, ok := cp.Asks[d.ToolCallID]; ok {
				a.Answer = d.Answer
				cp.Asks[d.ToolCallID] = a
			}
		} else {
			if cp.Decisions == nil {
				cp.Decisions = map[string]runs.Decision{}
			}
			cp.Decisions[d.ToolCallID] = d
		}
		r.decided = true
	}
	r.resume = cp
	age := time.Duration(run.AgeMS) * time.Millisecond
	turnTimeout := time.Duration(s.opts.Config.TurnTimeoutS) * time.Second
	switch {
	case kind == agent.AgentBase:
		s.endClaimed(ctx, r, agent.FinishUnavailable, "the agent replica running this turn stopped; a Base turn (the provider runs its tool loop) cannot be resumed")
		return
	case run.Takeovers > maxTakeovers:
		s.endClaimed(ctx, r, agent.FinishError, "the run was taken over too often; it stopped")
		return
	case age >= turnTimeout:
		s.endClaimed(ctx, r, agent.FinishError, "the turn ran out of time (TURN_TIMEOUT_S)")
		return
	}
	provider, err := s.providers[kind].resolve(req.Provider, req.Model)
	if err != nil {
		s.endClaimed(ctx, r, agent.FinishError, "the turn's provider is not configured on this replica")
		return
	}
	r.provider = provider
	r.prompt, _ = s.prompts[kind].pick(req.PromptName)
	if err := s.replay(ctx, r, run); err != nil {
		log.Warn("replaying a claimed run's events failed; another replica will try", "err", err)
		return // the lease runs out and the run is claimed again
	}
	if cp == nil {
		if r.history, err = s.loadHistory(ctx, req.AccountID, run.SessionID); err != nil {
			log.Warn("loading a claimed run's history failed; another replica will try", "err", err)
			return
		}
	}
	release, err := s.enterSession(ctx, req.AccountID, run.SessionID)
	if err != nil {
		log.Warn("a claimed run's session is busy here; another replica will try", "err", err)
		return
	}
	s.mu.Lock()
	s.turns[req.AccountID]++
	s.mu.Unlock()
	log.Info("resuming a run taken over from another replica", "takeovers", run.Takeovers, "checkpoint", cp != nil)
	s.launch(ctx, r, age, release)
	if run.Cancelled {
		s.cancelLocal(run.ID, "the user stopped the run")
	}
}

// replay republishes a claimed run's recorded events (the old owner may
// have died between recording and publishing some; followers drop what
// they have) and rebuilds its display transcript from them.
func (s *Service) replay(ctx context.Context, r *turnRun, run *runs.Run) error {
	subject := agent.RunEvents.For("run-" + run.ID)
	for after := int64(0); ; {
		resp, err := s.runStore.Events(ctx, &runs.EventsRequest{RunID: run.ID, AccountID: run.AccountID, After: after})
		if err != nil {
			return err
		}
		for _, e := range resp.Events {
			var ev agent.Event
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				return err
			}
			_ = subject.Publish(ctx, s.node.Client, &ev)
			r.keep(ev)
			after = e.Seq
		}
		if !resp.More {
			return nil
		}
	}
}

// endClaimed records a claimed run that cannot go on as failed: an error
// and an end event for its followers, and the failed turn in its session.
func (s *Service) endClaimed(ctx context.Context, r *turnRun, finish, msg string) {
	r.rec = newRecorder(s, r.req.RunID, r.owner, r.seq, r.heartbeat, func(error) {})
	go r.rec.loop()
	defer r.rec.close(false)
	r.rec.add(agent.Event{Type: agent.EventError, Message: msg})
	if err := r.rec.sync(ctx); err != nil {
		return
	}
	saveCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := s.sessions.Fail(saveCtx, &sessions.SessionFailRequest{AccountID: r.req.AccountID, SessionID: r.sessionID, RunID: r.req.RunID, Finish: finish, Error: msg})
	if err != nil && !errors.Is(err, context.Canceled) {
		s.log.Error("recording a failed run failed", "run_id", r.req.RunID, "err", err)
	}
	r.rec.add(agent.Event{Type: agent.EventEnd, FinishReason: finish})
}
