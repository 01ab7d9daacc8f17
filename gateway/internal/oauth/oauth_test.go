package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/ssrf"
)

func TestOAuthRedirectURIs(t *testing.T) {
	registered := []string{"http://127.0.0.1/callback", "http://localhost:8080/cb?x=1", "https://app.example/oauth/cb", "cursor://anysphere.cursor/cb", "ms-msdt:/id"}
	for _, tc := range []struct {
		uri  string
		want bool
	}{
		{"https://app.example/oauth/cb", true},
		{"https://app.example/oauth/cb/", false},
		{"https://app.example/oauth/cb?extra=1", false},
		{"https://app.example:444/oauth/cb", false},
		{"http://127.0.0.1:53111/callback", true}, // RFC 8252: any loopback port
		{"http://127.0.0.1/callback", true},
		{"http://127.0.0.1:53111/other", false},
		{"http://[::1]:53111/callback", false}, // a different loopback host is another URI
		{"http://localhost:9999/cb?x=1", true},
		{"http://localhost:9999/cb?x=2", false},
		{"http://127.0.0.1.evil.example:80/callback", false},
		{"cursor://anysphere.cursor/cb", true},
		{"cursor://anysphere.cursor/cb2", false},
		{"https://app.example/oauth/cb#frag", false},
		{"ms-msdt:/id", false}, // registered before the allow-list
	} {
		if got := redirectAllowed(registered, tc.uri); got != tc.want {
			t.Errorf("redirectAllowed(%q) = %v, want %v", tc.uri, got, tc.want)
		}
	}
	for _, tc := range []struct {
		uris []string
		ok   bool
	}{
		{[]string{"https://app.example/cb"}, true},
		{[]string{"http://127.0.0.1:3000/cb", "http://[::1]/cb", "http://localhost/cb"}, true},
		{[]string{"com.example.app:/oauth"}, true},
		{nil, false},
		{[]string{"http://app.example/cb"}, false},
		{[]string{"https://app.example/cb#x"}, false},
		{[]string{"javascript:alert(1)"}, false},
		// Issue 15 finding 8: schemes a deny-list missed. Only https,
		// loopback http, reverse-DNS private-use schemes and the named
		// native clients pass.
		{[]string{"ms-msdt:/id%20PCWDiagnostic"}, false},
		{[]string{"search-ms:query=x"}, false},
		{[]string{"view-source:https://app.example/"}, false},
		{[]string{"jar:https://app.example/a.jar!/"}, false},
		{[]string{"ftp://app.example/cb"}, false},
		{[]string{"ws://127.0.0.1/cb"}, false},
		{[]string{"mailto:a@app.example"}, false},
		{[]string{"intent://cb#Intent;end"}, false},
		{[]string{"JavaScript:alert(1)"}, false},
		{[]string{"HTTPS://app.example/cb"}, true},
		{[]string{"com.example.app://oauth/cb"}, true},
		{[]string{"cursor://anysphere.cursor-retrieval/oauth/callback"}, true},
		{[]string{"vscode://vscode.github-authentication/did-authenticate"}, true},
		{[]string{"/relative"}, false},
		{[]string{"https:///nohost"}, false},
	} {
		if err := validRedirectURIs(tc.uris); (err == nil) != tc.ok {
			t.Errorf("validRedirectURIs(%q) = %v, want ok=%v", tc.uris, err, tc.ok)
		}
	}
}

func TestOAuthSSRFGuard(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"8.8.8.8", true}, {"2606:4700::1111", true},
		{"127.0.0.1", false}, {"::1", false}, {"10.1.2.3", false}, {"192.168.0.1", false}, {"172.16.0.1", false},
		{"169.254.169.254", false}, {"fe80::1", false}, {"fc00::1", false}, {"100.64.0.1", false}, {"0.0.0.0", false},
		{"::ffff:127.0.0.1", false}, {"224.0.0.1", false}, {"::", false},
	} {
		if got := ssrf.Refusal(netip.MustParseAddr(tc.addr)) == ""; got != tc.public {
			t.Errorf("ssrf.Refusal(%s) == \"\" is %v, want %v", tc.addr, got, tc.public)
		}
	}

	var docURL string
	mux := http.NewServeMux()
	mux.HandleFunc("/client.json", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Doc","redirect_uris":["http://127.0.0.1/cb"]}`, docURL)
	})
	mux.HandleFunc("/big.json", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"client_name":"%s"}`, strings.Repeat("x", metadataMaxBytes))
	})
	mux.HandleFunc("/moved.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/client.json", http.StatusFound)
	})
	mux.HandleFunc("/secret.json", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["http://127.0.0.1/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, docURL)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	docURL = srv.URL + "/client.json"
	log := servicetest.Logger(t)
	ctx := context.Background()

	guarded := newClientResolver(nil, false, log)
	if _, err := guarded.resolve(ctx, docURL); !errors.Is(err, errUnknownClient) {
		t.Errorf("an http loopback document was accepted: %v", err)
	}
	// https to a loopback address is refused at dial time, after DNS.
	guarded.http.Transport.(*http.Transport).TLSClientConfig = srv.Client().Transport.(*http.Transport).TLSClientConfig
	if _, err := guarded.fetch(ctx, "https://"+strings.TrimPrefix(srv.URL, "http://")+"/client.json"); err == nil || !strings.Contains(err.Error(), "not public") {
		t.Errorf("a loopback address was dialed: %v", err)
	}

	open := newClientResolver(nil, true, log)
	c, err := open.resolve(ctx, docURL)
	if err != nil || c.Name != "Doc" || !c.Document {
		t.Fatalf("document client: %+v %v", c, err)
	}
	for _, path := range []string{"/big.json", "/moved.json", "/secret.json", "/missing.json", "/"} {
		if _, err := open.fetch(ctx, srv.URL+path); err == nil {
			t.Errorf("%s was accepted", path)
		}
	}
}

func TestOAuthBox(t *testing.T) {
	b, err := newBox([]byte("secret"))
	must(t, err)
	sealed, err := b.seal(purposeRequest, authRequest{ClientID: "c"}, time.Minute)
	must(t, err)
	var got authRequest
	if err := b.open(purposeRequest, sealed, &got); err != nil || got.ClientID != "c" {
		t.Fatalf("open: %+v %v", got, err)
	}
	if b.open(purposeSession, sealed, &got) == nil {
		t.Error("a request opened as a login session")
	}
	if b.open(purposeRequest, sealed[:len(sealed)-2]+"AA", &got) == nil {
		t.Error("a tampered value opened")
	}
	other, _ := newBox([]byte("other secret"))
	if other.open(purposeRequest, sealed, &got) == nil {
		t.Error("opened under another secret")
	}
	b.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	if b.open(purposeRequest, sealed, &got) == nil {
		t.Error("an expired value opened")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
