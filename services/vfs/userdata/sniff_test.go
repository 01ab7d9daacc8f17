package userdata_test

import (
	"testing"

	"github.com/mirobody/mirobody-go/services/vfs/userdata"
)

func TestNotText(t *testing.T) {
	cases := []struct{ name, head, want string }{
		{"CSV", "indicator,value,unit,time\nGlucose,5.1,mmol/L,2026-01-01\n", ""},
		{"CSV with BOM", "\ufeffGlucose,5.1,mmol/L,2026-01-01\n", ""},
		{"JSON array", `[{"indicator":"Glucose","value":5.1}]`, ""},
		{"23andMe", "# rsid\tchromosome\tposition\tgenotype\nrs1\t1\t100\tAG\n", ""},
		{"empty", "", ""},
		{"PDF", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "application/pdf"},
		{"PNG", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"},
		{"xlsx", "PK\x03\x04\x14\x00\x06\x00", "application/zip"},
		{"gzip", "\x1f\x8b\x08\x00\x00\x00\x00\x00", "application/x-gzip"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := userdata.NotText([]byte(tc.head)); got != tc.want {
				t.Errorf("NotText = %q, want %q", got, tc.want)
			}
		})
	}
}
