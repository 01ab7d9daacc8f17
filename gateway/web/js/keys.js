// The API keys view: list, create (the secret is shown once) and revoke.

import { api } from "./api.js";
import { auth } from "./auth.js";
import { $, h, clear, when, confirmButton } from "./dom.js";

async function load() {
  const body = $("keys-table").tBodies[0];
  $("keys-error").textContent = "";
  try {
    const { keys } = await api("/api/keys");
    clear(body);
    for (const k of keys || []) body.append(row(k));
    if (!keys?.length) body.append(h("tr", {}, h("td", { colspan: "6", class: "muted" }, "No keys.")));
  } catch (err) {
    $("keys-error").textContent = `Could not list keys: ${err.message}`;
  }
}

function row(k) {
  const revoke = confirmButton(k.current ? "Revoke (signs you out)" : "Revoke", "Really revoke?", async () => {
    try {
      await api(`/api/keys/${encodeURIComponent(k.id)}`, { method: "DELETE" });
      if (k.current) auth.signOut("You revoked the key you were signed in with.");
      else tr.remove();
    } catch (err) {
      $("keys-error").textContent = `Could not revoke ${k.name}: ${err.message}`;
    }
  });
  const tr = h("tr", { "data-id": k.id },
    h("td", {}, k.name, k.current ? h("span", { class: "badge ok" }, "this session") : null),
    h("td", { "data-label": "Key" }, h("code", {}, `${k.prefix || "mb_"}…`)),
    h("td", { "data-label": "Scopes" }, (k.scopes || []).join(", ")),
    h("td", { "data-label": "Created" }, when(k.created_at)),
    h("td", { "data-label": "Last used" }, when(k.last_used_at)),
    h("td", { class: "actions" }, revoke));
  return tr;
}

/** init wires the keys view once. */
export function init() {
  $("key-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = $("key-name").value.trim();
    const scopes = ["mcp", "api"].filter((s) => $(`key-scope-${s}`).checked);
    $("keys-error").textContent = "";
    if (!scopes.length) {
      $("keys-error").textContent = "Pick at least one scope.";
      return;
    }
    try {
      const k = await api("/api/keys", { method: "POST", body: { name, scopes } });
      $("new-key").textContent = k.key;
      $("new-key-box").hidden = false;
      $("key-name").value = "";
      await load();
    } catch (err) {
      $("keys-error").textContent = `Could not create the key: ${err.message}`;
    }
  });
  $("new-key-copy").addEventListener("click", async () => {
    const text = $("new-key").textContent;
    try {
      await navigator.clipboard.writeText(text);
      $("new-key-copy").textContent = "Copied";
    } catch {
      // No clipboard access (not a secure context): select it for a manual copy.
      getSelection().selectAllChildren($("new-key"));
    }
  });
}

/** show reloads the list each time the view opens; a shown secret is hidden again. */
export function show() {
  $("new-key-box").hidden = true;
  $("new-key").textContent = "";
  $("new-key-copy").textContent = "Copy";
  load();
}
