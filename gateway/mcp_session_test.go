package gateway

import (
	"strings"
	"testing"
	"time"
)

func TestSealer(t *testing.T) {
	keys, random, err := sessionKeys([]string{testSecret}, "")
	must(t, err)
	if random {
		t.Fatal("configured keys reported as random")
	}
	old, err := newSealer(keys, time.Hour)
	must(t, err)
	now := time.Unix(1_800_000_000, 0)
	old.now = func() time.Time { return now }
	id := old.seal(session{Version: "2025-06-18", Account: "a"})

	rotated, err := newSealer(append([][]byte{make([]byte, 32)}, keys...), time.Hour)
	must(t, err)
	tests := []struct {
		name    string
		s       *sealer
		id      string
		account string
		at      time.Time
		ok      bool
	}{
		{"same key", old, id, "a", now, true},
		{"rotated keys still open", rotated, id, "a", now, true},
		{"other account", old, id, "b", now, false},
		{"anonymous", old, id, "", now, false},
		{"expired", old, id, "a", now.Add(time.Hour + time.Second), false},
		{"from the future", old, id, "a", now.Add(-2 * time.Minute), false},
		{"tampered", old, id[:len(id)-2] + strings.Repeat("A", 2), "a", now, false},
		{"garbage", old, "not base64!", "a", now, false},
		{"short", old, "AAAA", "a", now, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.now = func() time.Time { return tc.at }
			s, err := tc.s.open(tc.id, tc.account)
			if (err == nil) != tc.ok {
				t.Fatalf("open: %v, want ok=%v", err, tc.ok)
			}
			if tc.ok && s.Version != "2025-06-18" {
				t.Errorf("version %q", s.Version)
			}
		})
	}
	// A new key seals ids the old key set cannot open.
	rotated.now = func() time.Time { return now }
	if _, err := old.open(rotated.seal(session{Version: "x"}), ""); err == nil {
		t.Error("an id sealed with an unknown key opened")
	}
}

func TestSessionKeys(t *testing.T) {
	if _, _, err := sessionKeys([]string{"c2hvcnQ="}, ""); err == nil {
		t.Error("a 5-byte key was accepted")
	}
	a, _, _ := sessionKeys(nil, "secret")
	b, _, _ := sessionKeys(nil, "secret")
	if string(a[0]) != string(b[0]) {
		t.Error("SECRET_KEY derivation differs between replicas")
	}
	if _, random, _ := sessionKeys(nil, ""); !random {
		t.Error("no key and no secret must report a random key")
	}
}

func TestLimits(t *testing.T) {
	l := newLimits(limitsOptions{PerAccount: 60, PerIP: 0, Streams: 2})
	now := time.Unix(0, 0)
	l.now = func() time.Time { return now }
	for i := range 6 { // burst: a tenth of 60/min
		if _, ok := l.allow("acct:x", true); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	wait, ok := l.allow("acct:x", true)
	if ok || retryAfter(wait) != "1" {
		t.Fatalf("over the burst: ok=%v wait=%v", ok, wait)
	}
	now = now.Add(time.Second)
	if _, ok := l.allow("acct:x", true); !ok {
		t.Error("refused after the bucket refilled")
	}
	if _, ok := l.allow("ip:1.2.3.4", false); !ok {
		t.Error("PerIP 0 must not limit")
	}
	r1, ok1 := l.openStream("k")
	_, ok2 := l.openStream("k")
	_, ok3 := l.openStream("k")
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("streams: %v %v %v, want true true false", ok1, ok2, ok3)
	}
	r1()
	r1() // releasing twice gives back one stream only
	if _, ok := l.openStream("k"); !ok {
		t.Error("a released stream was not given back")
	}
	if _, ok := l.openStream("k"); ok {
		t.Error("a double release gave back two streams")
	}
}
