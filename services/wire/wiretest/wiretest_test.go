package wiretest

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

type inner struct {
	N int `json:"n,omitempty"`
}

type sample struct {
	inner
	S      string            `json:"s,omitempty"`
	B      bool              `json:"b,omitempty"`
	U      uint8             `json:"u,omitempty"`
	F      float64           `json:"f,omitempty"`
	P      *inner            `json:"p,omitempty"`
	L      []inner           `json:"l,omitempty"`
	M      map[string]string `json:"m,omitempty"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	T      time.Time         `json:"t,omitzero"`
	TP     *time.Time        `json:"tp,omitempty"`
	Bytes  []byte            `json:"bytes,omitempty"`
	Hidden string            `json:"-"`
	hidden string
}

// TestFill: every field JSON carries is set, so every key appears in the
// encoding, and the result is the same on every run.
func TestFill(t *testing.T) {
	var a, b sample
	Fill(&a)
	Fill(&b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("Fill is not deterministic:\n%+v\n%+v", a, b)
	}
	if a.Hidden != "" || a.hidden != "" {
		t.Errorf("filled fields JSON does not carry: %+v", a)
	}
	body, err := json.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"n", "s", "b", "u", "f", "p", "l", "m", "raw", "t", "tp", "bytes"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("%s is missing from %s", k, body)
		}
	}
}
