// Sign-in state. Two methods:
//
// - An API key, kept in sessionStorage: it lasts while the tab is open, is
//   not shared with other tabs, and is never a cookie, so it is only sent
//   where the app puts it (the Authorization header).
// - Email and password: the gateway sets an HttpOnly session cookie that
//   only /api receives, and answers a CSRF token that the app repeats in
//   the X-CSRF-Token header (gateway/design.md "Web app sign-in"). The
//   token is kept in sessionStorage too; after a reload /api/session gives
//   it again.

const KEY = "mirobody.token";
const CSRF = "mirobody.csrf";
const NOTE = "mirobody.signed-out";

/** auth holds the credentials of the signed-in user. */
export const auth = {
  /** token returns the API key in use, or "" (none, or a cookie session). */
  token() {
    return sessionStorage.getItem(KEY) || "";
  },
  /** csrf returns the cookie session's CSRF token, or "". */
  csrf() {
    return sessionStorage.getItem(CSRF) || "";
  },
  /** set signs in with an API key. */
  set(token) {
    sessionStorage.removeItem(CSRF);
    sessionStorage.setItem(KEY, token);
  },
  /** setSession records a cookie session by its CSRF token. */
  setSession(csrf) {
    sessionStorage.removeItem(KEY);
    sessionStorage.setItem(CSRF, csrf);
  },
  /** clear forgets both. */
  clear() {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(CSRF);
  },
  /**
   * signOut ends a cookie session on the server (so the cookie stops
   * working even if copied), forgets the credentials and reloads the app,
   * which drops every view's state and any stream still open. note is
   * shown on the sign-in form after the reload.
   */
  async signOut(note = "") {
    const csrf = auth.csrf();
    if (csrf) {
      try {
        await fetch("/api/session/logout", { method: "POST", credentials: "same-origin", headers: { "X-CSRF-Token": csrf } });
      } catch {
        // Offline: the cookie expires on its own; the reload still signs out here.
      }
    }
    auth.clear();
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

/**
 * credentials returns the fetch options and headers that authenticate a
 * request: the API key (token, or the signed-in one) as a bearer token and
 * never cookies; without a key, the session cookie and its CSRF token.
 */
export function credentials(token) {
  const key = token ?? auth.token();
  if (key) return { credentials: "omit", headers: { Authorization: `Bearer ${key}` } };
  const csrf = auth.csrf();
  return { credentials: "same-origin", headers: csrf ? { "X-CSRF-Token": csrf } : {} };
}
