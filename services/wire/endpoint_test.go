package wire_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/wire"
)

// TestServeRefusesForeignSubjects: a service registers only subjects of
// its own, with a group and a verb.
func TestServeRefusesForeignSubjects(t *testing.T) {
	url := servicetest.NATS(t)
	s, err := wire.NewService(servicetest.Conn(t, url), wire.ServiceOptions{Name: "svc", Version: "0.1.0", Log: servicetest.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	h := func(context.Context, *wire.Empty) (*wire.Empty, error) { return &wire.Empty{}, nil }
	for _, subject := range []string{"other.g.v", "svc.verb", "svc", "svc.g.", "svc..v", "svcx.g.v", "svc.g.*", "svc.g.>"} {
		if err := wire.Serve(s, wire.Endpoint[wire.Empty, wire.Empty]{Subject: subject}, h); err == nil {
			t.Errorf("%q: registered", subject)
		}
	}
	for _, subject := range []string{"svc.g.v", "svc.g.sub.v"} {
		if err := wire.Serve(s, wire.Endpoint[wire.Empty, wire.Empty]{Subject: subject}, h); err != nil {
			t.Errorf("%q: %v", subject, err)
		}
		if _, err := (wire.Endpoint[wire.Empty, wire.Empty]{Subject: subject}).Call(context.Background(), servicetest.Client(t, url), &wire.Empty{}); err != nil {
			t.Errorf("calling %q: %v", subject, err)
		}
	}
}

func TestEventFamily(t *testing.T) {
	changed := wire.Event[wire.Empty]{Subject: "events.x.changed.*"}
	one := changed.For("acct-1")
	if one.Subject != "events.x.changed.acct-1" || changed.Token(one.Subject) != "acct-1" {
		t.Errorf("For/Token: %q, %q", one.Subject, changed.Token(one.Subject))
	}
	url := servicetest.NATS(t)
	c := servicetest.Client(t, url)
	if err := changed.Publish(context.Background(), c, &wire.Empty{}); err == nil {
		t.Error("published on a wildcard subject")
	}
	got := make(chan *nats.Msg, 1)
	sub, err := c.Conn().ChanSubscribe(changed.Subject, got)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := one.Publish(context.Background(), c, &wire.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := changed.Decode(<-got); err != nil {
		t.Fatal(err)
	}
}
