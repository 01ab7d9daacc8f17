package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseGrants(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []string
		want    []Grant
		wantErr string
	}{
		{"empty", []string{"", " "}, nil, ""},
		{"read-only by default", []string{"maps=/usr/share/maps"}, []Grant{{Module: "maps", Path: "/usr/share/maps"}}, ""},
		{"explicit modes", []string{"reports=/srv/reports:rw", "maps=/srv/maps/:ro"},
			[]Grant{{Module: "reports", Path: "/srv/reports", Write: true}, {Module: "maps", Path: "/srv/maps"}}, ""},
		{"a colon inside the path stays", []string{"odd=/srv/a:b"}, []Grant{{Module: "odd", Path: "/srv/a:b"}}, ""},
		{"relative path", []string{"maps=srv/maps"}, nil, "must be absolute"},
		{"no module", []string{"/srv/maps"}, nil, "is not module="},
		{"bad module name", []string{"my-tool=/srv"}, nil, "is not module="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseGrants(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}
