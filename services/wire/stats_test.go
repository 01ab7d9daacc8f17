package wire_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestStats: $SRV.STATS carries wire's own account of each endpoint as its
// data, with the errors and processing time that micro's top-level fields
// cannot see (handlers answer from their own goroutine).
func TestStats(t *testing.T) {
	url := servicetest.NATS(t)
	startEcho(t, url, nil, nil)
	c := servicetest.Client(t, url)
	ctx := context.Background()

	const sleep = 20 * time.Millisecond
	requests := []struct {
		req      echoReq
		wantCode wire.Code
	}{
		{echoReq{Text: "a"}, ""},
		{echoReq{Text: "b", Sleep: int(sleep / time.Millisecond)}, ""},
		{echoReq{Text: "c", Fail: "secret"}, wire.Internal},
		{echoReq{Text: "d"}, ""},
		{echoReq{Text: "ghost", Fail: "not_found"}, wire.NotFound},
	}
	for _, r := range requests {
		_, err := echo.Call(ctx, c, &r.req)
		if wire.CodeOf(err) != r.wantCode {
			t.Fatalf("echo %+v: %v, want code %q", r.req, err, r.wantCode)
		}
	}
	if _, err := wire.SysPing("echo").Call(ctx, c, &wire.Empty{}); err != nil {
		t.Fatal(err)
	}

	subject, err := micro.ControlSubject(micro.StatsVerb, "echo", "")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := servicetest.Conn(t, url).Request(subject, nil, 5*time.Second)
	if err != nil {
		t.Fatalf("requesting %s: %v", subject, err)
	}
	var stats micro.Stats
	if err := json.Unmarshal(msg.Data, &stats); err != nil {
		t.Fatalf("decoding %s: %v", msg.Data, err)
	}
	data := map[string]wire.EndpointStats{}
	for _, e := range stats.Endpoints {
		var d wire.EndpointStats
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatalf("decoding the data of %s: %s: %v", e.Subject, e.Data, err)
		}
		data[e.Subject] = d
	}

	echo := data["echo.test.echo"]
	if echo.NumRequests != 5 || echo.NumErrors != 2 {
		t.Errorf("echo: %d requests, %d errors; want 5 and 2", echo.NumRequests, echo.NumErrors)
	}
	if !strings.HasPrefix(echo.LastError, "not_found: ") || !strings.Contains(echo.LastError, "ghost") {
		t.Errorf("echo: last error %q, want the not_found one", echo.LastError)
	}
	if echo.ProcessingTime < sleep || echo.AverageProcessingTime != echo.ProcessingTime/5 {
		t.Errorf("echo: processing %v, average %v; want at least %v, and the average of 5", echo.ProcessingTime, echo.AverageProcessingTime, sleep)
	}
	if ping := data["echo.sys.ping"]; ping.NumRequests != 1 || ping.NumErrors != 0 || ping.ProcessingTime <= 0 {
		t.Errorf("ping: %+v, want one request without error and a processing time", ping)
	}
	if info := data["echo.sys.info"]; info.NumRequests != 0 || info.LastError != "" {
		t.Errorf("info: %+v, want no requests", info)
	}
}
