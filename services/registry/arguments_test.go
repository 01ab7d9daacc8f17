package registry

import (
	"encoding/json"
	"testing"

	"github.com/mirobody/mirobody-go/services/wire"
)

func TestArguments(t *testing.T) {
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "absent", in: "", want: "{}"},
		{name: "null", in: " null ", want: "{}"},
		{name: "object", in: ` {"a": 1} `, want: `{"a": 1}`},
		{name: "array", in: `[1]`, wantErr: true},
		{name: "string", in: `"x"`, wantErr: true},
		{name: "truncated object", in: `{"a":`, wantErr: true},
		{name: "invalid UTF-8", in: "{\"a\":\"\xff\"}", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Arguments("echo", json.RawMessage(tt.in))
			if tt.wantErr {
				if !wire.IsCode(err, wire.InvalidArgument) {
					t.Fatalf("Arguments(%q) = %s, %v; want invalid_argument", tt.in, got, err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Arguments(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
}
