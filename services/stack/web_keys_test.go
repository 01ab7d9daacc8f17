package stack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
)

// apiKeyJSON is an entry of GET /api/keys (and the body of POST).
type apiKeyJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	Current    bool       `json:"current"`
	Key        string     `json:"key"`
}

func apiDo(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	must(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp.StatusCode, b
}

func listKeys(t *testing.T, st *chatStack, token string) []apiKeyJSON {
	t.Helper()
	code, b := apiDo(t, http.MethodGet, st.URL+"/api/keys", token, "")
	var out struct{ Keys []apiKeyJSON }
	if code != http.StatusOK || json.Unmarshal(b, &out) != nil || out.Keys == nil {
		t.Fatalf("GET /api/keys: %d %s", code, b)
	}
	return out.Keys
}

func createKey(t *testing.T, st *chatStack, token, body string) apiKeyJSON {
	t.Helper()
	code, b := apiDo(t, http.MethodPost, st.URL+"/api/keys", token, body)
	var k apiKeyJSON
	if code != http.StatusCreated || json.Unmarshal(b, &k) != nil || !strings.HasPrefix(k.Key, accounts.KeyPrefix) {
		t.Fatalf("POST /api/keys %s: %d %s", body, code, b)
	}
	return k
}

// TestWebKeysAPI drives /api/keys against the real vfs-svc: a caller
// manages only its own keys, never mints a scope it lacks, and a revoked
// key stops working at once.
func TestWebKeysAPI(t *testing.T) {
	srv := scripted.New(scripted.Sequence())
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)

	keys := listKeys(t, st, st.Key)
	if len(keys) != 1 || !keys[0].Current || keys[0].Name != "chat" || !slices.Equal(keys[0].Scopes, []string{"mcp", "api"}) ||
		!strings.HasPrefix(keys[0].Prefix, accounts.KeyPrefix) || keys[0].CreatedAt.IsZero() {
		t.Fatalf("keys %+v", keys)
	}
	mcpOnly := createKey(t, st, st.Key, `{"name":"laptop","scopes":["mcp"]}`)
	apiOnly := createKey(t, st, st.Key, `{"name":"script","scopes":["api","api"]}`)
	if mcpOnly.Name != "laptop" || !slices.Equal(mcpOnly.Scopes, []string{"mcp"}) || !slices.Equal(apiOnly.Scopes, []string{"api"}) || mcpOnly.Current {
		t.Fatalf("created %+v %+v", mcpOnly, apiOnly)
	}
	// A key without scopes inherits its creator's, not vfs-svc's default.
	if k := createKey(t, st, apiOnly.Key, `{"name":"inherited"}`); !slices.Equal(k.Scopes, []string{"api"}) {
		t.Fatalf("inherited scopes %v", k.Scopes)
	}
	other, err := accounts.NewAccounts(servicetest.Client(t, st.NATS)).Create(context.Background(), &accounts.AccountCreateRequest{Email: "other@example.com"})
	must(t, err)
	otherKey, err := accounts.NewAccounts(servicetest.Client(t, st.NATS)).CreateKey(context.Background(), &accounts.KeyCreateRequest{AccountID: other.ID, Name: "other"})
	must(t, err)

	cases := []struct {
		name, method, path, token, body string
		code                            int
		msg                             string
	}{
		{"no name", http.MethodPost, "/api/keys", st.Key, `{"scopes":["mcp"]}`, http.StatusBadRequest, "key name"},
		{"not JSON", http.MethodPost, "/api/keys", st.Key, `{`, http.StatusBadRequest, "JSON object"},
		{"unknown scope", http.MethodPost, "/api/keys", st.Key, `{"name":"x","scopes":["admin"]}`, http.StatusBadRequest, "unknown scope"},
		{"scope not held", http.MethodPost, "/api/keys", apiOnly.Key, `{"name":"x","scopes":["mcp"]}`, http.StatusForbidden, "is not held by the key"},
		{"mcp key on /api", http.MethodGet, "/api/keys", mcpOnly.Key, "", http.StatusForbidden, "lacks scope"},
		{"no token", http.MethodGet, "/api/keys", "", "", http.StatusUnauthorized, ""},
		{"another account's key", http.MethodDelete, "/api/keys/" + otherKey.APIKey.ID, st.Key, "", http.StatusNotFound, "no key"},
		{"malformed id", http.MethodDelete, "/api/keys/nope", st.Key, "", http.StatusBadRequest, "not a UUID"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, b := apiDo(t, tc.method, st.URL+tc.path, tc.token, tc.body)
			if code != tc.code || !strings.Contains(string(b), tc.msg) {
				t.Fatalf("%d %s, want %d with %q", code, b, tc.code, tc.msg)
			}
		})
	}
	if got := listKeys(t, st, otherKey.Key); len(got) != 1 || got[0].Name != "other" {
		t.Fatalf("the other account sees %+v", got)
	}

	if code, b := apiDo(t, http.MethodDelete, st.URL+"/api/keys/"+apiOnly.ID, st.Key, ""); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", code, b)
	}
	servicetest.Eventually(t, 5*time.Second, func() bool {
		code, _ := apiDo(t, http.MethodGet, st.URL+"/api/me", apiOnly.Key, "")
		return code == http.StatusUnauthorized
	}, "a revoked key is refused")
	var names []string
	for _, k := range listKeys(t, st, st.Key) {
		names = append(names, k.Name)
	}
	if slices.Contains(names, "script") || !slices.Contains(names, "laptop") {
		t.Fatalf("keys after revoking: %v", names)
	}
}
