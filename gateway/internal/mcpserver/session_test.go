package mcpserver

import (
	"strings"
	"testing"
	"time"
)

// testSecret is base64 of 32 bytes.
const testSecret = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

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

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
