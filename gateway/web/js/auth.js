// Sign-in state. The API key lives in sessionStorage: it lasts while the
// tab is open, is not shared with other tabs, and is never a cookie, so it
// is only sent where the app puts it (the Authorization header).
//
// Another sign-in method plugs in here: it obtains a token that /api
// accepts as a bearer token, calls auth.set(token), and adds its button to
// #login-methods. An OAuth session login would do that after the
// authorization code flow.

const KEY = "mirobody.token";

/** auth holds the bearer token of the signed-in user. */
export const auth = {
  /** token returns the current token, or "". */
  token() {
    return sessionStorage.getItem(KEY) || "";
  },
  /** set signs in with token. */
  set(token) {
    sessionStorage.setItem(KEY, token);
  },
  /** clear signs out. */
  clear() {
    sessionStorage.removeItem(KEY);
  },
};
