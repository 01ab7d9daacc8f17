package seal

import (
	"bytes"
	"errors"
	"testing"
)

func TestSealOpen(t *testing.T) {
	a, err := Derive([]byte("secret"), "purpose a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Derive([]byte("secret"), "purpose b")
	if err != nil {
		t.Fatal(err)
	}
	sealed := a.Seal([]byte("hello"), []byte("row 1"))
	again := a.Seal([]byte("hello"), []byte("row 1"))
	if bytes.Equal(sealed, again) {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	if got, err := a.Open(sealed, []byte("row 1")); err != nil || string(got) != "hello" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	tampered := bytes.Clone(sealed)
	tampered[len(tampered)-1] ^= 1
	for name, tc := range map[string]struct {
		box    *Box
		sealed []byte
		ad     string
	}{
		"other purpose": {b, sealed, "row 1"},
		"other ad":      {a, sealed, "row 2"},
		"tampered":      {a, tampered, "row 1"},
		"truncated":     {a, sealed[:10], "row 1"},
		"empty":         {a, nil, "row 1"},
	} {
		if _, err := tc.box.Open(tc.sealed, []byte(tc.ad)); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: err %v, want ErrOpen", name, err)
		}
	}
	if _, err := New([]byte("short")); err == nil {
		t.Error("New accepted a 5-byte key")
	}
}
