package jsrepl

import (
	"context"
	"sync"
)

// scheduler hands out the slots in which evals run JavaScript: at most
// slots at once in the process and at most perAccount held by one account.
// When evals wait, the account served longest ago goes first (round robin
// over accounts), and one account's evals run in arrival order, so an
// account with many evals queued delays another's by at most one turn.
type scheduler struct {
	mu         sync.Mutex
	free       int
	perAccount int
	held       map[string]int
	queues     map[string][]*waiter
	// ring is the accounts with waiters, in arrival order.
	ring []string
	// served is when each account with holders or waiters was last
	// granted a slot, in grants; an account not in it has not been.
	served map[string]uint64
	grants uint64
}

type waiter struct {
	ready   chan struct{}
	granted bool
}

func newScheduler(slots, perAccount int) *scheduler {
	return &scheduler{free: slots, perAccount: min(perAccount, slots), held: map[string]int{}, queues: map[string][]*waiter{}, served: map[string]uint64{}}
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
		if s.held[account] == 0 {
			delete(s.served, account)
		}
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
		if len(s.queues[account]) == 0 {
			delete(s.served, account)
		}
	}
	s.dispatch()
}

// dispatch grants free slots to waiting accounts below their limit, the
// one served longest ago first (ties in arrival order).
func (s *scheduler) dispatch() {
	for s.free > 0 {
		best := -1
		for i, account := range s.ring {
			if s.held[account] < s.perAccount && (best < 0 || s.served[account] < s.served[s.ring[best]]) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		account := s.ring[best]
		q := s.queues[account]
		w := q[0]
		if s.queues[account] = q[1:]; len(q) == 1 {
			delete(s.queues, account)
			s.ring = append(s.ring[:best:best], s.ring[best+1:]...)
		}
		s.grants++
		s.served[account] = s.grants
		s.held[account]++
		s.free--
		w.granted = true
		close(w.ready)
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
