package vfssvc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mirobody/mirobody-go/services/wire"
)

// maxGroup bounds the changes one transaction carries, so that a busy
// account's group does not hold its lock for long.
const maxGroup = 64

// groupTimeout bounds one group's transaction; its changes' callers may
// have gone, so their contexts do not bound it.
const groupTimeout = 30 * time.Second

// groups runs each account's changes in groups (design.md "Group commit"):
// changes of one account that arrive while a transaction of the account
// runs wait and then share the next transaction, one after the other. One
// lock of the usage row and one commit (one WAL flush) then serve the
// whole group, and every change is acknowledged only after the commit that
// made it durable.
type groups struct {
	mu      sync.Mutex
	pending map[string][]*pendingChange // account -> waiting changes; present while a runner drains it
}

// pendingChange is one change waiting for its group.
type pendingChange struct {
	ctx  context.Context
	fn   func(context.Context, *change) error
	done chan error
}

// change runs fn as one of account's changes: fn reads and writes through
// c within the account's lock. fn must return a check's error (a
// wire.Error other than internal or unavailable) only before it writes
// anything; any other error undoes the whole group, whose changes then run
// again one by one. change returns fn's error, or the group's, after the
// commit. fn must use the context it is given, which outlives the caller's.
func (s *Service) change(ctx context.Context, account string, fn func(context.Context, *change) error) error {
	p := &pendingChange{ctx: ctx, fn: fn, done: make(chan error, 1)}
	g := &s.groups
	g.mu.Lock()
	if g.pending == nil {
		g.pending = map[string][]*pendingChange{}
	}
	queue, running := g.pending[account]
	g.pending[account] = append(queue, p)
	g.mu.Unlock()
	if !running {
		go s.drain(context.Background(), account)
	}
	return <-p.done
}

// drain runs account's groups until none is waiting.
func (s *Service) drain(ctx context.Context, account string) {
	g := &s.groups
	for {
		g.mu.Lock()
		queue := g.pending[account]
		if len(queue) == 0 {
			delete(g.pending, account)
			g.mu.Unlock()
			return
		}
		n := min(len(queue), maxGroup)
		group := queue[:n:n]
		g.pending[account] = queue[n:]
		g.mu.Unlock()
		s.runGroup(ctx, account, group)
	}
}

// runGroup runs one group in one transaction and reports to each change.
// A change that fails with a check's error (expected) has changed nothing,
// so the others go on in the same transaction; any other failure leaves
// the transaction in doubt, so the group is rolled back and each of its
// changes runs again alone, in a transaction of its own (retryAlone).
func (s *Service) runGroup(ctx context.Context, account string, group []*pendingChange) {
	ctx, cancel := context.WithTimeout(ctx, groupTimeout)
	defer cancel()
	results, err := s.tryGroup(ctx, account, group)
	if errors.Is(err, errInDoubt) && len(group) > 1 {
		for _, p := range group {
			s.runGroup(ctx, account, []*pendingChange{p})
		}
		return
	}
	for i, p := range group {
		if err != nil {
			p.done <- err
		} else {
			p.done <- results[i]
		}
	}
}

// errInDoubt says a change of a group failed unexpectedly.
var errInDoubt = errors.New("a change failed unexpectedly")

// tryGroup runs group's changes in one transaction and commits it. It
// returns each change's result, or the error that failed the whole group:
// wrapping errInDoubt when a change failed unexpectedly.
func (s *Service) tryGroup(ctx context.Context, account string, group []*pendingChange) ([]error, error) {
	c, err := s.begin(ctx, account)
	if err != nil {
		return nil, err
	}
	defer c.rollback(ctx)
	results := make([]error, len(group))
	for i, p := range group {
		if err := p.ctx.Err(); err != nil {
			// The caller has gone: its change is not made.
			results[i] = err
			continue
		}
		err := p.fn(ctx, c)
		if err != nil && !expected(err) {
			return nil, fmt.Errorf("%w: %w", errInDoubt, err)
		}
		results[i] = err
	}
	if err := c.commit(ctx, account); err != nil {
		return nil, err
	}
	return results, nil
}

// expected reports whether err is a check's verdict (not found, exists,
// quota, ...), which a change returns before it writes anything, rather
// than a failure of the database.
func expected(err error) bool {
	var werr *wire.Error
	if !errors.As(err, &werr) {
		return false
	}
	switch werr.Code {
	case wire.Internal, wire.Unavailable, wire.DeadlineExceeded:
		return false
	}
	return true
}
