package agentsvc

import (
	"context"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// sessionWait bounds how long a turn waits for the session's previous turn
// to end. A stopped turn ends within moments (it saves what it has); one
// still running, say in another tab, is refused after this.
const sessionWait = 5 * time.Second

// enterSession makes turns of one session run one after another on this
// replica. A turn the user stopped is still saving when the next question
// arrives; loading the history before that save would hide the stopped
// question from the model, and the late save would overwrite the new
// turn's messages. release must be called when the turn has saved.
func (s *Service) enterSession(ctx context.Context, account, session string) (release func(), err error) {
	key := account + "/" + session
	timer := time.NewTimer(sessionWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		prev, busy := s.sessionTurns[key]
		if !busy {
			done := make(chan struct{})
			s.sessionTurns[key] = done
			s.mu.Unlock()
			return func() {
				s.mu.Lock()
				delete(s.sessionTurns, key)
				s.mu.Unlock()
				close(done)
			}, nil
		}
		s.mu.Unlock()
		select {
		case <-prev:
		case <-timer.C:
			return nil, wire.Errorf(wire.FailedPrecondition, "another turn of this session is still running; wait for it to end or stop it")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
