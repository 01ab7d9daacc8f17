// The external MCP servers view, on the /api/mcp-servers contract: list
// (never secrets), add, enable or disable, delete.

import { api, ApiError } from "./api.js";
import { $, h, clear, when, confirmButton } from "./dom.js";

function health(hl) {
  const st = hl?.status || "unknown";
  const label = { ok: "ok", down: "down", unknown: "unknown" }[st] || st;
  const title = [hl?.error, hl?.checked_at ? `checked ${when(hl.checked_at)}` : ""].filter(Boolean).join(" · ");
  return h("span", { class: `badge health-${st}`, title: title || null }, label, hl?.tools !== undefined && st === "ok" ? ` · ${hl.tools} tools` : "");
}

function row(s) {
  const toggle = h("input", { type: "checkbox", "aria-label": `enable ${s.name}`, checked: s.enabled });
  toggle.addEventListener("change", async () => {
    toggle.disabled = true;
    try {
      const updated = await api(`/api/mcp-servers/${encodeURIComponent(s.name)}`, { method: "PATCH", body: { enabled: toggle.checked } });
      tr.replaceWith(row(updated));
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
      tr.remove();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) tr.remove();
      else $("mcp-error").textContent = `Could not delete ${s.name}: ${err.message}`;
    }
  });
  const tr = h("tr", { "data-name": s.name },
    h("td", {}, s.name),
    h("td", { class: "url" }, s.url),
    h("td", {}, s.auth || "none"),
    h("td", {}, health(s.health)),
    h("td", {}, toggle),
    h("td", { class: "actions" }, del));
  return tr;
}

async function load() {
  const body = $("mcp-table").tBodies[0];
  $("mcp-error").textContent = "";
  try {
    const { servers } = await api("/api/mcp-servers");
    clear(body);
    for (const s of servers || []) body.append(row(s));
    if (!servers?.length) body.append(h("tr", {}, h("td", { colspan: "6", class: "muted" }, "No servers yet.")));
  } catch (err) {
    clear(body);
    $("mcp-error").textContent = err instanceof ApiError && (err.status === 404 || err.status === 405)
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
    try {
      const mode = $("mcp-auth").value;
      if (mode === "bearer" && $("mcp-token").value) body.access_token = $("mcp-token").value;
      if (mode === "headers") body.headers = parseHeaders($("mcp-headers").value);
      await api("/api/mcp-servers", { method: "POST", body });
      $("mcp-form").reset();
      syncAuthFields();
      await load();
    } catch (err) {
      $("mcp-error").textContent = err instanceof ApiError && err.status === 409
        ? `A server named ${body.name} exists already.`
        : `Could not add the server: ${err.message}`;
    }
  });
  syncAuthFields();
}

/** show reloads the list each time the view opens. */
export function show() {
  load();
}
