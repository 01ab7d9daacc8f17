package jsrepl

import (
	"context"
	"sync"
)

// scheduler hands out the slots in which evals run JavaScript: at most
// slots at once in the process and at most perAccount held by one account.
// When evals wait, the accounts take turns (round robin), and one
// account's evals run in arrival order, so an account with many evals
// queued delays another's by at most one slot's turn.
type scheduler struct {
	mu         sync.Mutex
	free       int
	perAccount int
	held       map[string]int
	queues     map[string][]*waiter
	// ring is the accounts with waiters, in the order they get a turn.
	ring []string
}

type waiter struct {
	ready   chan struct{}
	granted bool
}

func newScheduler(slots, perAccount int) *scheduler {
	return &scheduler{free: slots, perAccount: min(perAccount, slots), held: map[string]int{}, queues: map[string][]*waiter{}}
}

// acquire waits for a slot for account, or for ctx to end.
func (s *scheduler) acquire(ctx context.Context, account string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &waiter{ready: make(chan struct{})}
	s.mu.Lock()
	if len(s.queues[account]) == 0 {
		s.ring = append(s.ring, account)
	}
	s.queues[account] = append(s.queues[account], w)
	s.dispatch()
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.granted {
		// Granted while giving up: hand the slot on.
		s.releaseLocked(account)
		return ctx.Err()
	}
	q := s.queues[account]
	for i, x := range q {
		if x == w {
			s.queues[account] = append(q[:i:i], q[i+1:]...)
			break
		}
	}
	if len(s.queues[account]) == 0 {
		s.dropFromRing(account)
	}
	return ctx.Err()
}

// release gives back a slot of account.
func (s *scheduler) release(account string) {
	s.mu.Lock()
	s.releaseLocked(account)
	s.mu.Unlock()
}

func (s *scheduler) releaseLocked(account string) {
	s.free++
	if s.held[account]--; s.held[account] <= 0 {
		delete(s.held, account)
	}
	s.dispatch()
}

// dispatch grants free slots to the waiting accounts in ring order,
// skipping accounts at their limit; an account served goes to the end.
func (s *scheduler) dispatch() {
	for s.free > 0 {
		granted := false
		for i, account := range s.ring {
			if s.held[account] >= s.perAccount {
				continue
			}
			q := s.queues[account]
			w := q[0]
			s.queues[account] = q[1:]
			s.ring = append(s.ring[:i:i], s.ring[i+1:]...)
			if len(s.queues[account]) > 0 {
				s.ring = append(s.ring, account)
			} else {
				delete(s.queues, account)
			}
			s.held[account]++
			s.free--
			w.granted = true
			close(w.ready)
			granted = true
			break
		}
		if !granted {
			return
		}
	}
}

func (s *scheduler) dropFromRing(account string) {
	delete(s.queues, account)
	for i, a := range s.ring {
		if a == account {
			s.ring = append(s.ring[:i:i], s.ring[i+1:]...)
			return
		}
	}
}
