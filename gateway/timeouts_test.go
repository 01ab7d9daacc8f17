package gateway

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestReadTimeoutSparesLongAnswers: HTTP_READ_TIMEOUT_S bounds reading
// the request only; a tool call that answers after it is not cancelled
// (net/http lifts the read deadline once the body is read).
func TestReadTimeoutSparesLongAnswers(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.HTTPReadTimeoutS = 1
	url := startGateway(t, cfg)
	resp, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{"ms":2500}}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "slow done") {
		t.Fatalf("%d %s, want the slow result", resp.StatusCode, body)
	}
}

// dial opens a raw connection to the gateway of cfg.
func dial(t *testing.T, s *Service) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr())
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedWithin reports whether the server ends conn (answering or not)
// before limit.
func closedWithin(t *testing.T, conn net.Conn, r io.Reader, limit time.Duration) bool {
	t.Helper()
	must(t, conn.SetReadDeadline(time.Now().Add(limit)))
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestSlowClientsAreCut: a client that stops sending its body, or keeps an
// idle connection, is disconnected after HTTP_READ_TIMEOUT_S or
// HTTP_IDLE_TIMEOUT_S.
func TestSlowClientsAreCut(t *testing.T) {
	f := startFakes(t)
	cfg := testConfig(t, f.url)
	cfg.HTTPReadTimeoutS, cfg.HTTPIdleTimeoutS = 1, 1
	s := startService(t, cfg)

	t.Run("stalled body", func(t *testing.T) {
		conn := dial(t, s)
		_, err := io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
		must(t, err)
		if !closedWithin(t, conn, conn, 10*time.Second) {
			t.Fatal("a stalled body kept the connection open")
		}
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		conn := dial(t, s)
		_, err := io.WriteString(conn, "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: x\r\n\r\n")
		must(t, err)
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		must(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("%d close=%v, want a kept-alive 200", resp.StatusCode, resp.Close)
		}
		if !closedWithin(t, conn, br, 10*time.Second) {
			t.Fatal("an idle connection stayed open")
		}
	})
}
