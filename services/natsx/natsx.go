// Package natsx connects to NATS and runs an embedded NATS server for the
// all-in-one binary and for tests.
package natsx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ConnectOptions configures Connect.
type ConnectOptions struct {
	// URL is the NATS server URL (NATS_URL).
	URL string
	// Name identifies the connection in the server's monitoring.
	Name string
	// SeedFile is the NKey seed the connection authenticates with; empty
	// means none (a server without authorization).
	SeedFile string
	// InboxPrefix replaces _INBOX for the connection's reply inboxes; it is
	// InboxPrefix(identity), the only inboxes the identity may read.
	InboxPrefix string
	// Log receives disconnect, reconnect and permission lines.
	Log *slog.Logger
}

// Connect opens a connection that reconnects forever, so that a restarted
// broker is picked up again without restarting the service. A server that
// is not up yet is waited for; a server that refuses the credentials is an
// error at once, naming the connection and its seed file.
func Connect(opts ConnectOptions) (*nats.Conn, error) {
	log := opts.Log
	nopts := []nats.Option{
		nats.Name(opts.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "conn", opts.Name, "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats reconnected", "conn", opts.Name, "url", c.ConnectedUrlRedacted())
		}),
		// Permission violations arrive here, not as the publish's error.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Error("nats error", "conn", opts.Name, "subject", subject, "err", err)
		}),
		nats.ClosedHandler(func(c *nats.Conn) {
			if err := c.LastError(); err != nil {
				log.Error("nats connection closed", "conn", opts.Name, "err", err)
			}
		}),
	}
	creds := "no credentials"
	if opts.SeedFile != "" {
		nk, err := nats.NkeyOptionFromSeed(opts.SeedFile)
		if err != nil {
			return nil, fmt.Errorf("loading the NATS seed of %s from %s: %w", opts.Name, opts.SeedFile, err)
		}
		nopts = append(nopts, nk)
		creds = "seed " + opts.SeedFile
	}
	if opts.InboxPrefix != "" {
		nopts = append(nopts, nats.CustomInboxPrefix(opts.InboxPrefix))
	}
	// An embedded server of this process is reached through a pipe
	// (loopback TCP cost a fifth of a tool call's CPU in syscalls), but
	// only once the credentials passed over the network: on a pipe, a
	// refusal reads as a closed pipe after the server's write timeout.
	pipe := nats.SetCustomDialer(&dialer{net: net.Dialer{Timeout: nats.DefaultTimeout}})
	nc, err := nats.Connect(opts.URL, nopts...)
	switch {
	case err == nil:
		if inProcessServer(nc.ConnectedAddr()) == nil {
			return nc, nil
		}
		pc, err := nats.Connect(opts.URL, append(nopts, pipe)...)
		if err != nil {
			log.Warn("connecting in-process to the embedded NATS server failed; staying on TCP", "conn", opts.Name, "err", err)
			return nc, nil
		}
		nc.Close()
		return pc, nil
	case errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked):
		return nil, fmt.Errorf("NATS at %s refused %s (%s): %w", opts.URL, opts.Name, creds, err)
	}
	// Not reachable yet: keep trying in the background, as a broker that
	// starts after the service is normal (compose, Kubernetes).
	nc, err = nats.Connect(opts.URL, append(nopts, pipe, nats.RetryOnFailedConnect(true))...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS at %s: %w", opts.URL, err)
	}
	return nc, nil
}

// Probe reports whether nc is connected; it is a readiness check.
func Probe(nc *nats.Conn) func(context.Context) error {
	return func(context.Context) error {
		if nc.IsConnected() {
			return nil
		}
		return fmt.Errorf("nats connection is %s", nc.Status())
	}
}

// ServerOptions configures an embedded NATS server.
type ServerOptions struct {
	// Listen is host:port for clients; empty means 127.0.0.1 on a free port.
	Listen string
	// Users, when set, are the only clients admitted, each with its
	// permissions (see ServerUsers); nil admits anyone.
	Users []*server.NkeyUser
	// Log receives the server's own notices and errors.
	Log *slog.Logger
}

// Server is an embedded NATS server run as a svc.Service.
type Server struct {
	opts ServerOptions
	ns   *server.Server
}

// NewServer returns an embedded server that is not started.
func NewServer(opts ServerOptions) *Server { return &Server{opts: opts} }

// Name implements svc.Service.
func (s *Server) Name() string { return "nats" }

// Start runs the server and waits until it accepts connections.
func (s *Server) Start(context.Context) error {
	host, port := "127.0.0.1", -1 // -1: a random free port
	if s.opts.Listen != "" {
		h, p, err := net.SplitHostPort(s.opts.Listen)
		if err != nil {
			return fmt.Errorf("parsing NATS listen address %q: %w", s.opts.Listen, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("parsing NATS listen port %q: %w", p, err)
		}
		host, port = h, n
		if host == "" {
			host = "0.0.0.0"
		}
	}
	ns, err := server.NewServer(&server.Options{
		ServerName: "mirobody-embedded",
		Host:       host,
		Port:       port,
		Nkeys:      s.opts.Users,
		NoSigs:     true,
		NoLog:      s.opts.Log == nil,
	})
	if err != nil {
		return fmt.Errorf("creating embedded NATS server: %w", err)
	}
	if s.opts.Log != nil {
		ns.SetLoggerV2(&logAdapter{log: s.opts.Log}, false, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return errors.New("embedded NATS server did not become ready within 10s")
	}
	s.ns = ns
	if addr, ok := ns.Addr().(*net.TCPAddr); ok {
		register(host, addr.Port, ns)
	}
	return nil
}

// ClientURL returns the URL clients connect to.
func (s *Server) ClientURL() string { return s.ns.ClientURL() }

// Stop shuts the server down and waits for it.
func (s *Server) Stop(context.Context) error {
	if s.ns != nil {
		if addr, ok := s.ns.Addr().(*net.TCPAddr); ok {
			unregister(addr.Port, s.ns)
		}
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
	}
	return nil
}

// logAdapter routes the server's notices and errors into slog; debug and
// trace output is dropped.
type logAdapter struct{ log *slog.Logger }

func (l *logAdapter) Noticef(format string, v ...any) {
	l.log.Debug("nats server", "msg", fmt.Sprintf(format, v...))
}
func (l *logAdapter) Warnf(format string, v ...any) {
	l.log.Warn("nats server warning", "msg", fmt.Sprintf(format, v...))
}
func (l *logAdapter) Fatalf(format string, v ...any) {
	l.log.Error("nats server fatal", "msg", fmt.Sprintf(format, v...))
}
func (l *logAdapter) Errorf(format string, v ...any) {
	l.log.Error("nats server error", "msg", fmt.Sprintf(format, v...))
}
func (l *logAdapter) Debugf(string, ...any) {}
func (l *logAdapter) Tracef(string, ...any) {}
