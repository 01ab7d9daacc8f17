// The external MCP servers view, on the /api/mcp-servers contract: list
// (never secrets), add, enable or disable, delete.

import { api, ApiError } from "./api.js";
import { $, h, clear, when, confirmButton } from "./dom.js";

function health(s) {
  // A switched-off server has no connection, so no health to show.
  if (!s.enabled) return h("span", { class: "badge health health-off" }, "off");
  const hl = s.health;
  const st = hl?.status || "unknown";
  const title = [hl?.error, hl?.checked_at ? `checked ${when(hl.checked_at)}` : ""].filter(Boolean).join(" · ");
  const tools = st === "ok" && typeof hl.tools === "number" ? ` · ${hl.tools} ${hl.tools === 1 ? "tool" : "tools"}` : "";
  const badge = h("span", { class: `badge health health-${st}`, title: title || null }, st, tools);
  // Why a server is down is what its owner needs to fix it: shown, not
  // only a tooltip.
  return st === "down" && hl.error ? [badge, h("div", { class: "small muted health-error" }, hl.error)] : badge;
}

function row(s) {
  const toggle = h("input", { type: "checkbox", "aria-label": `enable ${s.name}`, checked: s.enabled });
  toggle.addEventListener("change", async () => {
    toggle.disabled = true;
    try {
      const updated = await api(`/api/mcp-servers/${encodeURIComponent(s.name)}`, { method: "PATCH", body: { enabled: toggle.checked } });
      tr.replaceWith(row(updated));
      // A server switched on is connected again by the next listing,
      // which gives it its health back.
      if (updated.enabled) await load();
    } catch (err) {
      toggle.checked = !toggle.checked;
      $("mcp-error").textContent = `Could not update ${s.name}: ${err.message}`;
    } finally {
      toggle.disabled = false;
    }
  });
  const del = confirmButton("Delete", "Really delete?", async () => {
    try {
      await api(`/api/mcp-servers/${encodeURIComponent(s.name)}`, { method: "DELETE" });
      removeRow(tr);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) removeRow(tr);
      else $("mcp-error").textContent = `Could not delete ${s.name}: ${err.message}`;
    }
  });
  const tr = h("tr", { "data-name": s.name },
    h("td", {}, s.name),
    h("td", { class: "url" }, s.url),
    h("td", { "data-label": "Auth" }, s.auth || "none"),
    h("td", { "data-label": "Health" }, health(s)),
    h("td", { "data-label": "Enabled" }, toggle),
    h("td", { class: "actions" }, del));
  return tr;
}

const empty = () => h("tr", {}, h("td", { colspan: "6", class: "muted" }, "No servers yet."));

/** removeRow drops a deleted server's row, leaving the empty note if it was the last. */
function removeRow(tr) {
  const body = tr.parentElement;
  tr.remove();
  if (body && !body.querySelector("tr[data-name]")) body.replaceChildren(empty());
}

async function load() {
  const body = $("mcp-table").tBodies[0];
  $("mcp-error").textContent = "";
  try {
    const { servers } = await api("/api/mcp-servers");
    clear(body);
    for (const s of servers || []) body.append(row(s));
    if (!servers?.length) body.append(empty());
  } catch (err) {
    clear(body);
    // Only a missing route means a gateway without the endpoints; any
    // other failure (registry-svc down, say) is reported as it is.
    $("mcp-error").textContent = err instanceof ApiError && err.status === 404
      ? "This server does not offer MCP server management."
      : `Could not list MCP servers: ${err.message}`;
  }
}

/** parseHeaders reads "Name: value" lines; a malformed line throws. */
function parseHeaders(text) {
  const out = {};
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line) continue;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`header line ${i + 1} is not "Name: value"`);
    out[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return out;
}

function syncAuthFields() {
  const mode = $("mcp-auth").value;
  $("mcp-token-field").hidden = mode !== "bearer";
  $("mcp-headers-field").hidden = mode !== "headers";
}

/** init wires the MCP servers view once. */
export function init() {
  $("mcp-auth").addEventListener("change", syncAuthFields);
  $("mcp-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("mcp-error").textContent = "";
    const body = { name: $("mcp-name").value.trim(), url: $("mcp-url").value.trim() };
    // One add at a time: a second click would only meet its own 409.
    $("mcp-add").disabled = true;
    try {
      const mode = $("mcp-auth").value;
      if (mode === "bearer" && $("mcp-token").value) body.access_token = $("mcp-token").value;
      if (mode === "headers") body.headers = parseHeaders($("mcp-headers").value);
      await api("/api/mcp-servers", { method: "POST", body });
      $("mcp-form").reset();
      syncAuthFields();
      await load();
    } catch (err) {
      // The server's message says what is wrong (a taken or invalid
      // name, a URL the SSRF policy refuses); the form keeps the input.
      $("mcp-error").textContent = `Could not add the server: ${err.message}`;
    } finally {
      $("mcp-add").disabled = false;
    }
  });
  syncAuthFields();
}

/** show reloads the list each time the view opens. */
export function show() {
  load();
}
