package natsx

import (
	"net"
	"strconv"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
)

// inProcess is the embedded servers running in this process, by client
// port. It is process-wide on purpose: the all-in-one binary starts the
// server in one component and connects from four others that know only
// NATS_URL, and a server in this process is a fact about the process.
var inProcess = struct {
	mu      sync.Mutex
	servers map[int]embedded
}{servers: map[int]embedded{}}

// embedded is one running embedded server and the host it listens on.
type embedded struct {
	host string
	ns   *server.Server
}

// register makes ns reachable in-process at its client port.
func register(host string, port int, ns *server.Server) {
	inProcess.mu.Lock()
	defer inProcess.mu.Unlock()
	inProcess.servers[port] = embedded{host: host, ns: ns}
}

// unregister forgets ns, if it is still the server at port.
func unregister(port int, ns *server.Server) {
	inProcess.mu.Lock()
	defer inProcess.mu.Unlock()
	if inProcess.servers[port].ns == ns {
		delete(inProcess.servers, port)
	}
}

// inProcessServer returns the embedded server of this process that address
// (host:port, as nats.go dials it) reaches, or nil. Only a loopback host or
// the server's own listen host counts: another machine may use the port.
func inProcessServer(address string) *server.Server {
	host, p, err := net.SplitHostPort(address)
	if err != nil {
		return nil
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return nil
	}
	inProcess.mu.Lock()
	e, ok := inProcess.servers[port]
	inProcess.mu.Unlock()
	if !ok {
		return nil
	}
	ip := net.ParseIP(host)
	if host == e.host || host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return e.ns
	}
	return nil
}

// dialer connects to an embedded server of this process through an
// in-process pipe, and to any other server over the network. It decides
// per dial, so that a reconnect after the server restarted (or moved out
// of the process) reaches whatever serves the address then.
type dialer struct{ net net.Dialer }

// Dial implements nats.CustomDialer.
func (d *dialer) Dial(network, address string) (net.Conn, error) {
	if ns := inProcessServer(address); ns != nil {
		if c, err := ns.InProcessConn(); err == nil {
			return c, nil
		}
	}
	return d.net.Dial(network, address)
}
