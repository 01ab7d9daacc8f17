package vfssvc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

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

// pendingChange is one change waiting for its group: fn, or else st.
type pendingChange struct {
	ctx  context.Context
	fn   func(context.Context, *change) error
	st   *stmt
	done chan error
}

// stmt is a change made by one statement that checks and writes at once
// (a write). A group's stmts in a row go to Postgres in one pipeline, one
// round trip for all of them; each still sees those before it, since
// Postgres runs them one after the other in the group's transaction.
type stmt struct {
	sql  string
	args []any
	// scan reads the statement's row and returns the change's verdict: a
	// check's error (the statement then wrote nothing) or nil. Any other
	// error leaves the group in doubt.
	scan func(pgx.Row, *change) error
}

// change runs fn as one of account's changes: fn reads and writes through
// c within the account's lock. fn must return a check's error (a
// wire.Error other than internal or unavailable) only before it writes
// anything; any other error undoes the whole group, whose changes then run
// again one by one. change returns fn's error, or the group's, after the
// commit. fn must use the context it is given, which outlives the caller's.
func (s *Service) change(ctx context.Context, account string, fn func(context.Context, *change) error) error {
	return s.enqueue(account, &pendingChange{ctx: ctx, fn: fn, done: make(chan error, 1)})
}

// changeStmt runs st as one of account's changes, as change runs a fn.
func (s *Service) changeStmt(ctx context.Context, account string, st *stmt) error {
	return s.enqueue(account, &pendingChange{ctx: ctx, st: st, done: make(chan error, 1)})
}

// enqueue adds p to account's queue, starts a runner unless one drains the
// queue already, and waits for p's result. The runner commits as soon as
// the previous commit has returned, with whatever queued meanwhile, so a
// group is as large as the load makes it, and no timer delays a lone change.
func (s *Service) enqueue(account string, p *pendingChange) error {
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
	for i := 0; i < len(group); {
		if group[i].st != nil {
			n := 1
			for i+n < len(group) && group[i+n].st != nil {
				n++
			}
			if err := c.pipeline(ctx, group[i:i+n], results[i:i+n]); err != nil {
				return nil, fmt.Errorf("%w: %w", errInDoubt, err)
			}
			i += n
			continue
		}
		p := group[i]
		if err := p.ctx.Err(); err != nil {
			// The caller has gone: its change is not made.
			results[i] = err
		} else if err := p.fn(ctx, c); err != nil && !expected(err) {
			return nil, fmt.Errorf("%w: %w", errInDoubt, err)
		} else {
			results[i] = err
		}
		i++
	}
	if err := c.commit(ctx); err != nil {
		return nil, err
	}
	return results, nil
}

// pipeline runs the stmts of ps in one round trip and puts their verdicts
// in results. The usage row is brought up to date first, since each stmt
// checks the quota against it and keeps it in step itself.
func (c *change) pipeline(ctx context.Context, ps []*pendingChange, results []error) error {
	b := &pgx.Batch{}
	if c.delta != 0 {
		b.Queue(`UPDATE vfs_usage SET bytes = bytes + $2 WHERE account_id = $1`, c.account, c.delta)
		c.used, c.delta = c.used+c.delta, 0
	}
	var queued []int
	for i, p := range ps {
		if err := p.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		b.Queue(p.st.sql, p.st.args...)
		queued = append(queued, i)
	}
	if b.Len() == 0 {
		return nil
	}
	br := c.tx.SendBatch(ctx, b)
	defer br.Close()
	if b.Len() > len(queued) {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("updating usage: %w", err)
		}
	}
	for _, i := range queued {
		err := ps[i].st.scan(br.QueryRow(), c)
		if err != nil && !expected(err) {
			return err
		}
		results[i] = err
	}
	if err := br.Close(); err != nil {
		return fmt.Errorf("running a pipeline of writes: %w", err)
	}
	return nil
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
