package sessions_test

import (
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/services/vfs/sessions"
	"github.com/mirobody/mirobody-go/services/wire"
)

func TestCheckID(t *testing.T) {
	cases := []struct {
		id string
		ok bool
	}{
		{"abc", true},
		{"A-b_9", true},
		{strings.Repeat("x", 128), true},
		{sessions.NewID(), true},
		{"", false},
		{strings.Repeat("x", 129), false},
		{"../x", false},
		{"a b", false},
		{"a.b", false},
	}
	for _, tc := range cases {
		err := sessions.CheckID(tc.id)
		if tc.ok && err != nil || !tc.ok && !wire.IsCode(err, wire.InvalidArgument) {
			t.Errorf("CheckID(%q) = %v, want ok %v", tc.id, err, tc.ok)
		}
	}
	if sessions.NewID() == sessions.NewID() {
		t.Error("NewID repeats itself")
	}
}
