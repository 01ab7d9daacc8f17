package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
)

// apiCall sends one /api request with the stack's key and decodes a JSON
// answer into out (when not nil); it returns the status and the raw body.
func (st *chatStack) apiCall(t *testing.T, method, path, contentType string, body io.Reader, out any) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, st.URL+path, body)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+st.Key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	if out != nil && resp.StatusCode == http.StatusOK {
		must(t, json.Unmarshal(raw, out))
	}
	return resp.StatusCode, string(raw)
}

// dataSummary is GET /api/data as the tests read it.
type dataSummary struct {
	Kinds []struct {
		Kind string `json:"kind"`
		Rows int64  `json:"rows"`
	} `json:"kinds"`
	Indicators []struct {
		Indicator string `json:"indicator"`
		Unit      string `json:"unit"`
		Count     int64  `json:"count"`
	} `json:"indicators"`
	Imports []struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
		Rows int64  `json:"rows"`
	} `json:"imports"`
}

// TestDataAPIAndCLI: binary uploads are refused with the accepted formats
// named; /api/data lists kinds, indicators and imports, the series endpoint
// returns an indicator over time per unit, and the CLI lists, prints and
// deletes through the same vfs-svc endpoints.
func TestDataAPIAndCLI(t *testing.T) {
	srv := scripted.New(scripted.Demo)
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)

	refusals := []struct{ name, path, contentType, body, want string }{
		{"PDF as health data", "/api/data/health", "application/pdf", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n", "application/pdf"},
		{"PDF sent as CSV", "/api/data/health", "text/csv", "%PDF-1.4\n1 0 obj\n", "application/pdf"},
		{"PNG as genetic data", "/api/data/genetic", "", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"},
		{"zip (xlsx)", "/api/data/health", "", "PK\x03\x04\x14\x00\x06\x00", "application/zip"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			code, body := st.apiCall(t, http.MethodPost, tc.path, tc.contentType, strings.NewReader(tc.body), nil)
			if code != http.StatusUnsupportedMediaType || !strings.Contains(body, tc.want) || !strings.Contains(body, "accepted is") {
				t.Errorf("%d %s", code, body)
			}
		})
	}
	var sum dataSummary
	if code, body := st.apiCall(t, http.MethodGet, "/api/data", "", nil, &sum); code != http.StatusOK || len(sum.Kinds) != 0 || len(sum.Imports) != 0 {
		t.Fatalf("refused uploads stored data: %d %s", code, body)
	}

	csv, err := os.ReadFile("../../examples/health.csv")
	must(t, err)
	if code, body := st.apiCall(t, http.MethodPost, "/api/data/health", "text/csv", bytes.NewReader(csv), nil); code != http.StatusOK {
		t.Fatalf("import: %d %s", code, body)
	}
	later := "Glucose,5.9,mmol/L,2026-04-01T08:00:00Z,lab\nGlucose,6.1,mmol/L,2026-02-03T08:10:00Z,lab\n" // one new, one already stored
	if code, body := st.apiCall(t, http.MethodPost, "/api/data/health", "text/csv", strings.NewReader(later), nil); code != http.StatusOK {
		t.Fatalf("second import: %d %s", code, body)
	}
	st.apiCall(t, http.MethodGet, "/api/data", "", nil, &sum)
	if len(sum.Kinds) != 1 || sum.Kinds[0].Rows != 31 || len(sum.Indicators) != 18 || len(sum.Imports) != 2 ||
		sum.Imports[0].Rows != 2 || sum.Imports[1].Rows != 29 {
		t.Fatalf("summary = %+v", sum)
	}

	var series struct {
		Indicator string `json:"indicator"`
		Series    []struct {
			Unit   string `json:"unit"`
			Points []struct {
				Value float64 `json:"value"`
			} `json:"points"`
		} `json:"series"`
	}
	if code, body := st.apiCall(t, http.MethodGet, "/api/data/health/series?indicator=glucose", "", nil, &series); code != http.StatusOK ||
		series.Indicator != "Glucose" || len(series.Series) != 2 || series.Series[0].Unit != "mmol/L" || len(series.Series[0].Points) != 3 ||
		series.Series[0].Points[2].Value != 5.9 || series.Series[1].Unit != "mg/dL" {
		t.Errorf("series: %d %s", code, body)
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/api/data/health/series", http.StatusBadRequest},
		{http.MethodGet, "/api/data/health/series?indicator=Glucose&start=yesterday", http.StatusBadRequest},
		{http.MethodDelete, "/api/data/imports/not-a-uuid", http.StatusBadRequest},
		{http.MethodDelete, "/api/data/imports/00000000-0000-4000-8000-000000000000", http.StatusNotFound},
	} {
		if code, body := st.apiCall(t, tc.method, tc.path, "", nil, nil); code != tc.want {
			t.Errorf("%s %s = %d %s, want %d", tc.method, tc.path, code, body, tc.want)
		}
	}

	// The CLI, on the same endpoints.
	t.Setenv("NATS_URL", st.NATS)
	cli := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := Main(context.Background(), append(append([]string{"data"}, args...), "--account", "chat@example.com", "--config", "testdata/empty.yaml"), &out, &errOut); code != 0 {
			t.Fatalf("mirobody data %v = %d: %s %s", args, code, out.String(), errOut.String())
		}
		return out.String()
	}
	pdf := t.TempDir() + "/report.pdf"
	must(t, os.WriteFile(pdf, []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"), 0o644))
	var out, errOut bytes.Buffer
	if code := Main(context.Background(), []string{"data", "import", "--health", pdf, "--account", "chat@example.com", "--config", "testdata/empty.yaml"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "is application/pdf, not text: --health takes CSV") {
		t.Errorf("data import of a PDF = %d: %s", code, errOut.String())
	}
	ls := cli("ls")
	for _, want := range []string{"health", "Glucose", "mmol/L", "Vitamin D (25-OH)", sum.Imports[0].ID, sum.Imports[1].ID} {
		if !strings.Contains(ls, want) {
			t.Errorf("data ls lacks %q:\n%s", want, ls)
		}
	}
	if out := cli("series", "--indicator", "glucose"); strings.Count(out, "\n") != 5 || !strings.Contains(out, "2026-04-01T08:00:00Z  5.9") || !strings.Contains(out, "98     mg/dL") {
		t.Errorf("data series:\n%s", out)
	}
	if out := cli("delete", "--import", sum.Imports[1].ID); !strings.Contains(out, "(29 rows)") {
		t.Errorf("data delete --import: %s", out)
	}
	st.apiCall(t, http.MethodGet, "/api/data", "", nil, &sum)
	if len(sum.Imports) != 1 || sum.Kinds[0].Rows != 2 || len(sum.Indicators) != 1 {
		t.Errorf("after deleting the first import: %+v", sum)
	}
	if out := cli("delete", "--kind", "health"); !strings.Contains(out, "(2 rows)") {
		t.Errorf("data delete --kind: %s", out)
	}
	if out := cli("ls"); out != "no data\n" {
		t.Errorf("data ls after delete: %q", out)
	}
}
