// The app shell: sign-in, navigation between views, sign-out.

import { api, ApiError, onUnauthorized } from "./api.js";
import { auth } from "./auth.js";
import { $ } from "./dom.js";
import * as chat from "./chat.js";
import * as data from "./data.js";
import * as keys from "./keys.js";
import * as mcp from "./mcp.js";

const views = { chat, data, keys, mcp };
let started = false;

function showLogin(message = "") {
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message;
  $("login-email").focus();
}

/** route shows the view the address names: #/chat[/id], #/data, #/keys, #/mcp. */
function route() {
  const [, name, ...rest] = location.hash.split("/");
  const view = views[name] ? name : "chat";
  for (const n of Object.keys(views)) $(`view-${n}`).hidden = n !== view;
  for (const a of $("nav").querySelectorAll("a")) a.classList.toggle("active", a.dataset.view === view);
  views[view].show(decodeURIComponent(rest.join("/")));
}

async function enter(me) {
  $("whoami").textContent = me.email || "";
  $("login").hidden = true;
  $("app").hidden = false;
  if (!started) {
    started = true;
    for (const v of Object.values(views)) v.init();
    addEventListener("hashchange", route);
  }
  route();
}

/** verify checks token against /api/me. */
async function verify(token) {
  return api("/api/me", { token });
}

function loginError(err) {
  if (err instanceof ApiError && err.status === 401) return "That key was not accepted: it is wrong or was revoked.";
  if (err instanceof ApiError && err.status === 403) return "That key lacks the api scope this app needs.";
  return `Could not sign in: ${err.message}`;
}

$("login-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const token = $("login-key").value.trim();
  if (!token.startsWith("mb_")) {
    $("login-error").textContent = "Mirobody API keys start with mb_.";
    return;
  }
  $("login-submit").disabled = true;
  $("login-error").textContent = "";
  try {
    const me = await verify(token);
    auth.set(token);
    $("login-key").value = "";
    await enter(me);
  } catch (err) {
    $("login-error").textContent = loginError(err);
  } finally {
    $("login-submit").disabled = false;
  }
});

$("password-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  $("password-submit").disabled = true;
  $("password-error").textContent = "";
  try {
    const s = await api("/api/session/login", {
      method: "POST",
      token: "",
      body: { email: $("login-email").value.trim(), password: $("login-password").value },
    });
    auth.setSession(s.csrf);
    $("login-password").value = "";
    await enter(s);
  } catch (err) {
    $("password-error").textContent =
      err instanceof ApiError && err.status === 401 ? "Wrong email or password." : `Could not sign in: ${err.message}`;
  } finally {
    $("password-submit").disabled = false;
  }
});

$("logout").addEventListener("click", () => auth.signOut());
onUnauthorized(() => auth.signOut("You were signed out: your sign-in is no longer accepted."));

/** resume picks up a password sign-in whose cookie is still good. */
async function resume() {
  try {
    const s = await api("/api/session", { token: "" });
    if (!s.csrf) return false;
    auth.setSession(s.csrf);
    await enter(s);
    return true;
  } catch {
    return false;
  }
}

async function boot() {
  const token = auth.token();
  if (!token) {
    const note = auth.takeNote();
    if (!note && (await resume())) return;
    showLogin(note);
    return;
  }
  try {
    await enter(await verify(token));
  } catch (err) {
    auth.clear();
    showLogin(loginError(err));
  }
}

boot();
