package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mirobody/mirobody-go/services/wire"
)

func TestUnavailable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a failed statement", &pgconn.PgError{Code: "23505"}, false},
		{"a query canceled", &pgconn.PgError{Code: "57014"}, false},
		{"connection exception", &pgconn.PgError{Code: "08006"}, true},
		{"server shutting down", fmt.Errorf("reading: %w", &pgconn.PgError{Code: "57P01"}), true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"dial refused", fmt.Errorf("acquiring: %w", &pgconn.ConnectError{}), true},
		{"network error", &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}, true},
		{"connection closed mid-read", fmt.Errorf("reading account: %w", io.ErrUnexpectedEOF), true},
		{"our own error", errors.New("bad path"), false},
		{"a statement past its deadline", fmt.Errorf("receive message failed: %w", &net.OpError{Op: "read", Err: context.DeadlineExceeded}), false},
		{"a wire error", wire.Errorf(wire.NotFound, "no such file"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Unavailable(tt.err); got != tt.want {
				t.Errorf("Unavailable(%v) = %v, want %v", tt.err, got, tt.want)
			}
			if got := Classify(tt.err); (got != nil) != tt.want || got != nil && got.Code != wire.Unavailable {
				t.Errorf("Classify(%v) = %v", tt.err, got)
			}
		})
	}
}
