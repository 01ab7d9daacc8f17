package stack

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/mirobody/mirobody-go/agent-svc/scripted"
	"github.com/mirobody/mirobody-go/services/servicetest"
	"github.com/mirobody/mirobody-go/services/vfs/accounts"
)

// TestWebPasswordSignIn drives the web app in headless Chromium (issue
// 18): email and password sign in; the model picker lists the providers
// and the one picked is the one the scripted server receives; sign-out
// ends the session on the server, so its cookie, replayed, is a 401.
func TestWebPasswordSignIn(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // question -> the wire format and model that received it
	srv := scripted.New(func(r *scripted.Received) (scripted.Step, error) {
		mu.Lock()
		seen[r.LastUser()] = r.Format + " " + r.Model
		mu.Unlock()
		return scripted.Step{Text: "ok"}, nil
	})
	t.Cleanup(srv.Close)
	st := startChatStack(t, srv, nil)
	const email, password = "signin@example.com", "a long enough password"
	accts := accounts.NewAccounts(servicetest.Client(t, st.NATS))
	if _, err := accts.Create(context.Background(), &accounts.AccountCreateRequest{Email: email, Password: password}); err != nil {
		t.Fatal(err)
	}
	b := startBrowser(t)

	b.do("opening the sign-in page",
		chromedp.Navigate(st.URL+"/app/"),
		chromedp.WaitVisible(chromedp.ID("login-email")),
		chromedp.SendKeys(chromedp.ID("login-email"), email),
		chromedp.SendKeys(chromedp.ID("login-password"), "wrong password"),
		chromedp.Click(chromedp.ID("password-submit")),
	)
	b.waitFor("a wrong password is refused", `document.getElementById("password-error").textContent === "Wrong email or password."`)
	b.do("signing in with the password",
		chromedp.Evaluate[chromedp.Void](`document.getElementById("login-password").value = ""`),
		chromedp.SendKeys(chromedp.ID("login-password"), password),
	)
	b.screenshot("signin.png")
	b.do("submitting", chromedp.Click(chromedp.ID("password-submit")), chromedp.WaitVisible(chromedp.ID("composer-input")))
	if got := eval[string](b, `document.getElementById("whoami").textContent`); got != email {
		t.Errorf("signed in as %q, want %s", got, email)
	}

	// The picker: the deep agent's providers, "an" the default.
	b.waitFor("the picker lists the providers", `document.querySelectorAll("#composer-model option").length === 3`)
	labels := eval[[]string](b, `[...document.querySelectorAll("#composer-model option")].map((o) => o.textContent)`)
	if len(labels) != 3 || labels[1] != "an · claude-test (default)" || labels[2] != "oa · gpt-test" {
		t.Errorf("picker options %q", labels)
	}
	ask(b, "on the default")
	b.waitFor("the first turn ends", lastFinish+` === "stop"`)
	b.do("picking oa", chromedp.Evaluate[chromedp.Void](`(() => {
	  const s = document.getElementById("composer-model");
	  s.value = [...s.options].find((o) => o.textContent.startsWith("oa ")).value;
	})()`))
	ask(b, "on the picked one")
	b.waitFor("the second turn ends", `document.querySelectorAll("#transcript .msg-assistant[data-finish=stop]").length === 2`)
	b.screenshot("picker.png")
	mu.Lock()
	def, picked := seen["on the default"], seen["on the picked one"]
	mu.Unlock()
	if def != "anthropic claude-test" || picked != "openai gpt-test" {
		t.Errorf("the scripted server saw %q then %q, want the default an (anthropic claude-test) then the picked oa (openai gpt-test)", def, picked)
	}

	// A reload keeps the sign-in (the cookie, and /api/session for the
	// CSRF token); sign-out then ends it on the server.
	b.do("reloading", chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("composer-input")))
	cookies, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{st.URL + "/api/me"}})
	if err != nil {
		t.Fatal(err)
	}
	var cookie string
	for _, c := range cookies.Cookies {
		if c.Name == "mirobody_web" && c.HTTPOnly {
			cookie = c.Name + "=" + c.Value
		}
	}
	if cookie == "" {
		t.Fatalf("no HttpOnly session cookie for /api: %+v", cookies.Cookies)
	}
	if code := cookieGet(t, st.URL+"/api/me", cookie); code != http.StatusOK {
		t.Fatalf("the session cookie on /api/me: %d", code)
	}
	b.do("signing out", chromedp.Click(chromedp.ID("logout")), chromedp.WaitVisible(chromedp.ID("login-email")))
	if code := cookieGet(t, st.URL+"/api/me", cookie); code != http.StatusUnauthorized {
		t.Errorf("the replayed cookie after sign-out: %d, want 401", code)
	}
	b.noPageErrors()
}

// cookieGet sends GET u with a Cookie header and returns the status.
func cookieGet(t *testing.T, u, cookie string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	must(t, err)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
