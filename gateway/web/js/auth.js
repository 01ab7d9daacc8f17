// Sign-in state. The API key lives in sessionStorage: it lasts while the
// tab is open, is not shared with other tabs, and is never a cookie, so it
// is only sent where the app puts it (the Authorization header).
//
// Another sign-in method plugs in here: it obtains a token that /api
// accepts as a bearer token, calls auth.set(token), and adds its button to
// #login-methods. An OAuth session login would do that after the
// authorization code flow.

const KEY = "mirobody.token";
const NOTE = "mirobody.signed-out";

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
  /**
   * signOut forgets the token and reloads the app, which drops every
   * view's state and any stream still open. note is shown on the sign-in
   * form after the reload.
   */
  signOut(note = "") {
    sessionStorage.removeItem(KEY);
    if (note) sessionStorage.setItem(NOTE, note);
    location.replace(new URL("/app/", location.href));
  },
  /** takeNote returns and forgets the note of the last signOut. */
  takeNote() {
    const note = sessionStorage.getItem(NOTE) || "";
    sessionStorage.removeItem(NOTE);
    return note;
  },
};
