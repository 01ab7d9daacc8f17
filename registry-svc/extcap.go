package registrysvc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
)

// cappedTransport bounds what an external server can make registry-svc
// hold: no response body is read whole past max bytes. A JSON answer to a
// request, or one event of an SSE stream, that grows past max is
// dropped without being kept, and the request gets a JSON-RPC error
// instead, so the SDK reports a clear error for that call and the session
// survives; any other body fails its read. Without it a server answering
// 40 MB results grew registry-svc by gigabytes (issue 15).
type cappedTransport struct {
	base http.RoundTripper
	max  int
	log  *slog.Logger
}

// errTooLarge is the read error of a body past the cap.
var errTooLarge = errors.New("response larger than EXTERNAL_MAX_RESULT_BYTES")

// RoundTrip implements http.RoundTripper.
func (t *cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	id := requestID(r)
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "text/event-stream":
		resp.Body = &cappedEvents{src: bufio.NewReader(resp.Body), body: resp.Body, max: t.max, id: id,
			dropped: func() { t.dropped(r) }}
	case id != nil && mt == "application/json" && resp.StatusCode/100 == 2:
		body, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.max)+1))
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reading the answer: %w", err)
		}
		if len(body) > t.max {
			t.dropped(r)
			body = errorAnswer(id, t.max)
		}
		resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	default:
		resp.Body = &cappedBody{r: resp.Body, left: t.max}
	}
	return resp, nil
}

func (t *cappedTransport) dropped(r *http.Request) {
	t.log.Warn("an external MCP server sent a message over EXTERNAL_MAX_RESULT_BYTES; it is refused", "host", r.URL.Host, "limit_bytes", t.max)
}

// requestID is the JSON-RPC id of the request r carries, or nil (a GET, a
// notification, an OAuth request).
func requestID(r *http.Request) json.RawMessage {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil
	}
	defer body.Close()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.NewDecoder(body).Decode(&m) != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return nil
	}
	return m.ID
}

// errorAnswer is a JSON-RPC error answer to request id saying that its
// answer was over max bytes.
func errorAnswer(id json.RawMessage, max int) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code":    -32603,
		"message": fmt.Sprintf("the server's answer is larger than %d bytes (EXTERNAL_MAX_RESULT_BYTES) and was not read", max),
	}})
	return b
}

// cappedBody fails its read once more than left bytes were read.
type cappedBody struct {
	r    io.ReadCloser
	left int
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errTooLarge
	}
	if len(p) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= n
	if b.left < 0 {
		return n + b.left, errTooLarge
	}
	return n, err
}

func (b *cappedBody) Close() error { return b.r.Close() }

// cappedEvents passes an SSE stream on one whole event at a time, holding
// at most max bytes of it. An event that grows past max is skipped; on the
// stream answering a request (id set) it is replaced by the JSON-RPC error
// answer to that request, which ends the stream.
type cappedEvents struct {
	src     *bufio.Reader
	body    io.Closer
	max     int
	id      json.RawMessage
	dropped func()

	event []byte // the event being read
	out   []byte // a complete event not yet returned
	err   error  // returned once out is empty
}

func (c *cappedEvents) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		c.next()
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

func (c *cappedEvents) Close() error { return c.body.Close() }

// next reads one line of the current event.
func (c *cappedEvents) next() {
	line, midLine, err := c.line(c.max - len(c.event))
	if errors.Is(err, errTooLarge) {
		c.event = nil
		c.dropped()
		if c.id != nil {
			c.out = append(append([]byte("event: message\ndata: "), errorAnswer(c.id, c.max)...), "\n\n"...)
			c.err = io.EOF
			return
		}
		c.err = c.skip(midLine)
		return
	}
	c.event = append(c.event, line...)
	if err != nil {
		c.out, c.event, c.err = c.event, nil, err
		return
	}
	if bytes.Equal(line, []byte("\n")) || bytes.Equal(line, []byte("\r\n")) {
		c.out, c.event = c.event, nil
	}
}

// line reads one line of at most budget bytes; past that it returns
// errTooLarge and whether the line was cut.
func (c *cappedEvents) line(budget int) ([]byte, bool, error) {
	var line []byte
	for {
		frag, err := c.src.ReadSlice('\n')
		if len(line)+len(frag) > budget {
			return nil, !bytes.HasSuffix(frag, []byte("\n")), errTooLarge
		}
		line = append(line, frag...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, false, err
		}
	}
}

// skip discards the rest of an event: up to and including its blank line.
func (c *cappedEvents) skip(midLine bool) error {
	start := !midLine
	for {
		frag, err := c.src.ReadSlice('\n')
		if start && (bytes.Equal(frag, []byte("\n")) || bytes.Equal(frag, []byte("\r\n"))) {
			return nil
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			start = false
		case err != nil:
			return err
		default:
			start = true
		}
	}
}
