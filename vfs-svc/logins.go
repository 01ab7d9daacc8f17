package vfssvc

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/mirobody/mirobody-go/services/vfs/accounts"
	"github.com/mirobody/mirobody-go/services/wire"
)

// Login throttling of the OAuth login page (gateway/design.md "Login
// attempts"). Counters live here, so every gateway replica shares them
// and a restart forgets nothing.
const (
	// emailFreeFailures and ipFreeFailures are the failures allowed before
	// lockouts start: few per email (one person types one password), more
	// per IP (many people may share an address).
	emailFreeFailures = 5
	ipFreeFailures    = 20
	// lockoutBase is the first lockout; each failure after it doubles,
	// up to lockoutMax.
	lockoutBase = 15 * time.Second
	lockoutMax  = time.Hour
	// failureMemory forgets failures after a quiet day.
	failureMemory = 24 * time.Hour
)

// lockout is how long failures (counted so far) lock a key out, when
// free failures are allowed without one.
func lockout(failures, free int) time.Duration {
	if failures < free {
		return 0
	}
	n := failures - free
	if n >= 16 {
		return lockoutMax
	}
	return min(lockoutBase<<n, lockoutMax)
}

// loginKeys are the counters of an attempt, in lock order.
func loginKeys(req *accounts.LoginAttemptRequest) (email, ip string) {
	return "email:" + strings.ToLower(strings.TrimSpace(req.Email)), "ip:" + req.IP
}

// loginAttempt reserves an attempt on both counters in one transaction
// (rows locked), so that parallel guesses are counted one by one; a key
// locked out refuses it without counting.
func (s *Service) loginAttempt(ctx context.Context, req *accounts.LoginAttemptRequest) (*accounts.LoginAttemptResponse, error) {
	email, ip := loginKeys(req)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("counting a login attempt: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `DELETE FROM oauth_login_attempts WHERE updated < now() - make_interval(secs => $1)
		AND (locked_until IS NULL OR locked_until < now())`, failureMemory.Seconds()); err != nil {
		return nil, fmt.Errorf("dropping old login attempts: %w", err)
	}
	var now time.Time
	if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return nil, fmt.Errorf("reading the clock: %w", err)
	}
	type counter struct {
		key      string
		free     int
		failures int
	}
	counters := []*counter{{key: email, free: emailFreeFailures}, {key: ip, free: ipFreeFailures}}
	var wait time.Duration
	for _, c := range counters {
		var locked *time.Time
		var updated time.Time
		if _, err := tx.Exec(ctx, `INSERT INTO oauth_login_attempts (key) VALUES ($1) ON CONFLICT DO NOTHING`, c.key); err != nil {
			return nil, fmt.Errorf("counting a login attempt: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT failures, locked_until, updated FROM oauth_login_attempts WHERE key = $1 FOR UPDATE`, c.key).
			Scan(&c.failures, &locked, &updated); err != nil {
			return nil, fmt.Errorf("counting a login attempt: %w", err)
		}
		if now.Sub(updated) > failureMemory {
			c.failures = 0
		}
		if locked != nil && locked.After(now) {
			wait = max(wait, locked.Sub(now))
		}
	}
	if wait > 0 {
		return &accounts.LoginAttemptResponse{RetryAfterS: int(math.Ceil(wait.Seconds()))}, nil
	}
	for _, c := range counters {
		c.failures++
		var until *time.Time
		if d := lockout(c.failures, c.free); d > 0 {
			t := now.Add(d)
			until = &t
		}
		if _, err := tx.Exec(ctx, `UPDATE oauth_login_attempts SET failures = $2, locked_until = $3, updated = $4 WHERE key = $1`,
			c.key, c.failures, until, now); err != nil {
			return nil, fmt.Errorf("counting a login attempt: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("counting a login attempt: %w", err)
	}
	return &accounts.LoginAttemptResponse{}, nil
}

// loginSucceeded clears the email's failures and gives the IP back the
// attempt reserved for this login (a success is no guess; other failures
// from that IP stay counted).
func (s *Service) loginSucceeded(ctx context.Context, req *accounts.LoginAttemptRequest) (*wire.Empty, error) {
	email, ip := loginKeys(req)
	if _, err := s.pool.Exec(ctx, `DELETE FROM oauth_login_attempts WHERE key = $1`, email); err != nil {
		return nil, fmt.Errorf("clearing login failures: %w", err)
	}
	if _, err := s.pool.Exec(ctx, `UPDATE oauth_login_attempts SET failures = greatest(failures - 1, 0),
		locked_until = CASE WHEN failures - 1 < $2 THEN NULL ELSE locked_until END WHERE key = $1`, ip, ipFreeFailures); err != nil {
		return nil, fmt.Errorf("clearing login failures: %w", err)
	}
	return &wire.Empty{}, nil
}
