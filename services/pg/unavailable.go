package pg

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/mirobody/mirobody-go/services/wire"
)

// Unavailable reports whether err says that the database could not be
// reached, rather than that a statement failed: no connection could be
// made (a pool acquire that dials), the connection broke, or the server
// refused work because it is shutting down, starting or full. Such a
// request may succeed when retried later.
func Unavailable(err error) bool {
	// A statement that ran out of time failed on a connection that works:
	// that is the caller's deadline, whatever wraps it.
	if err == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03", // admin shutdown, crash shutdown, cannot connect now
			"53300": // too many connections
			return true
		}
		return strings.HasPrefix(pgErr.Code, "08") // connection exception
	}
	var connectErr *pgconn.ConnectError
	// pgconn's errors about the connection itself (writing, receiving,
	// a closed connection) all tell whether a retry is safe.
	var connErr interface{ SafeToRetry() bool }
	var netErr net.Error
	// A query on a pooled connection the server (or the network) closed
	// fails reading the protocol stream: EOF.
	return errors.As(err, &connectErr) || errors.As(err, &connErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// ErrUnavailable is the wire error of a database outage: the gateway
// answers it with 503 and Retry-After.
var ErrUnavailable = wire.Errorf(wire.Unavailable, "the database is unavailable; retry shortly")

// Classify maps a database outage to ErrUnavailable and leaves every other
// error alone (nil), for wire.ServiceOptions.Classify.
func Classify(err error) *wire.Error {
	if Unavailable(err) {
		return ErrUnavailable
	}
	return nil
}
