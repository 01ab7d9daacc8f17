package natsx

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"testing"
)

// Connect reaches an embedded server of this process through a pipe, for
// every loopback spelling of its address, and falls back to the network
// once the server is gone.
func TestConnectInProcess(t *testing.T) {
	s := NewServer(ServerOptions{})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	port := s.ns.Addr().(*net.TCPAddr).Port
	p := strconv.Itoa(port)
	tests := []struct {
		address string
		want    bool
	}{
		{"127.0.0.1:" + p, true},
		{"localhost:" + p, true},
		{"[::1]:" + p, true},
		{"10.1.2.3:" + p, false},
		{"127.0.0.1:1", false},
		{"no-port", false},
	}
	for _, tt := range tests {
		if got := inProcessServer(tt.address) != nil; got != tt.want {
			t.Errorf("inProcessServer(%q) = %v, want %v", tt.address, got, tt.want)
		}
	}

	nc, err := Connect(ConnectOptions{URL: s.ClientURL(), Name: "test", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if got := nc.ConnectedAddr(); got != "pipe" {
		t.Errorf("connected to %q, want the in-process pipe", got)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("round trip over the pipe: %v", err)
	}

	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if inProcessServer("127.0.0.1:"+p) != nil {
		t.Error("a stopped server is still reachable in-process")
	}
}
