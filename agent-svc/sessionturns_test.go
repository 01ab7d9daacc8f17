package agentsvc

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/mirobody/mirobody-go/services/wire"
)

// TestEnterSession: a session's turns run one after another (the next
// waits for the stopped one to save); other sessions do not wait; a turn
// still running after sessionWait refuses the next.
func TestEnterSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Service{sessionTurns: map[string]chan struct{}{}}
		ctx := context.Background()
		release, err := s.enterSession(ctx, "acct", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if other, err := s.enterSession(ctx, "acct", "s2"); err != nil {
			t.Fatalf("another session waited: %v", err)
		} else {
			other()
		}
		entered := make(chan error, 1)
		go func() {
			rel, err := s.enterSession(ctx, "acct", "s1")
			if err == nil {
				defer rel()
			}
			entered <- err
		}()
		synctest.Wait()
		select {
		case err := <-entered:
			t.Fatalf("the second turn did not wait for the first: %v", err)
		default:
		}
		release()
		if err := <-entered; err != nil {
			t.Fatalf("the second turn after the first ended: %v", err)
		}

		busy, err := s.enterSession(ctx, "acct", "s3")
		if err != nil {
			t.Fatal(err)
		}
		defer busy()
		if _, err := s.enterSession(ctx, "acct", "s3"); !wire.IsCode(err, wire.FailedPrecondition) {
			t.Fatalf("a turn beside a running one: %v, want failed_precondition", err)
		}
	})
}
