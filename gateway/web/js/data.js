// The data view: health CSV and genetic raw-file uploads with progress,
// then what was imported (kinds, indicators, imports), a chart per
// indicator and deletes per kind or per import, all from /api/data.

import { api, upload } from "./api.js";
import { $, h, clear, append, when, confirmButton } from "./dom.js";
import { lineChart } from "./chart.js";

const KINDS = {
  health: { path: "/api/data/health", type: (f) => (/\.json$/i.test(f.name) ? "application/json" : "text/csv") },
  genetic: { path: "/api/data/genetic", type: () => "text/plain" },
};

const MAX_SHOWN_ERRORS = 50;

function lineErrors(errors, total) {
  const rows = (errors || []).slice(0, MAX_SHOWN_ERRORS).map((e) => h("tr", {}, h("td", { class: "num" }, String(e.line)), h("td", {}, e.message || "")));
  const more = total > rows.length ? h("p", { class: "small muted" }, `${total - rows.length} more invalid lines not shown.`) : null;
  return [h("table", { class: "table line-errors" }, h("thead", {}, h("tr", {}, h("th", {}, "Line"), h("th", {}, "Problem"))), h("tbody", {}, rows)), more];
}

function showResult(box, status, body) {
  clear(box);
  box.className = "result";
  if (status === 200 && body) {
    box.classList.add("ok");
    box.append(h("p", {}, `Imported ${body.valid} valid rows: ${body.inserted} new, ${body.written - body.inserted} updated.`));
    if (body.error_count) append(box, h("p", {}, `${body.error_count} invalid lines were skipped:`), lineErrors(body.errors, body.error_count));
    return;
  }
  box.classList.add("failed");
  if (status === 422 && body) {
    append(box, h("p", {}, `Nothing was imported: ${body.error_count} invalid line${body.error_count === 1 ? "" : "s"}. Fix ${body.error_count === 1 ? "it" : "them"}, or tick “keep the valid rows”.`),
      lineErrors(body.errors, body.error_count));
    return;
  }
  box.append(h("p", {}, body?.message || `The upload failed (HTTP ${status}).`));
}

function wire(kind) {
  const { path, type } = KINDS[kind];
  const form = $(`${kind}-form`);
  const bar = $(`${kind}-progress`);
  const box = $(`${kind}-result`);
  const button = $(`${kind}-upload`);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const file = $(`${kind}-file`).files[0];
    if (!file) return;
    const q = $(`${kind}-partial`).checked ? "?partial=true" : "";
    clear(box).className = "result";
    box.append(h("p", { class: "muted" }, `Uploading ${file.name}…`));
    bar.hidden = false;
    bar.value = 0;
    button.disabled = true;
    try {
      const { status, body } = await upload(path + q, file, {
        contentType: type(file),
        onProgress: (f) => {
          if (f === null) {
            bar.removeAttribute("value"); // indeterminate while the server imports
            clear(box).append(h("p", { class: "muted" }, `Importing ${file.name}…`));
          } else bar.value = Math.round(f * 100);
        },
      });
      bar.value = 100;
      showResult(box, status, body);
      if (status === 200) load(); // not awaited: the form is ready again at once
    } catch (err) {
      showResult(box, 0, { message: err.message });
    } finally {
      button.disabled = false;
      bar.hidden = true;
    }
  });
}

const KIND_NAMES = { health: "Health records", genetic: "Genetic variants" };

// Charts drawn by the last load, removed before the next one, and the
// number of the newest load: an older one still running stops drawing.
let charts = [];
let generation = 0;

function day(iso) {
  return iso ? new Date(iso).toLocaleDateString() : "—";
}

function table(head, rows) {
  return h("table", { class: "table" }, h("thead", {}, h("tr", {}, head.map((t) => h("th", {}, t)))), h("tbody", {}, rows));
}

// del makes a confirmed delete button that reloads the view afterwards.
function del(label, what, path) {
  return confirmButton(label, "Really delete?", async () => {
    try {
      await api(path, { method: "DELETE" });
    } catch (err) {
      $("data-error").textContent = `Could not delete ${what}: ${err.message}`;
    }
    await load();
  }, { title: `Delete ${what}` });
}

function kindsTable(kinds) {
  return table(["Kind", "Rows", "From", "To", ""], kinds.map((k) => h("tr", { "data-kind": k.kind },
    h("td", {}, KIND_NAMES[k.kind] || k.kind),
    h("td", { class: "num", "data-label": "Rows" }, String(k.rows)),
    h("td", { "data-label": "From" }, day(k.first)),
    h("td", { "data-label": "To" }, day(k.last)),
    h("td", { class: "actions" }, del("Delete all", `all ${k.kind} data`, `/api/data/${encodeURIComponent(k.kind)}`)))));
}

function importsTable(imports) {
  return table(["Imported", "Kind", "Rows", ""], imports.map((i) => h("tr", { "data-import": i.id },
    h("td", {}, when(i.time)),
    h("td", { "data-label": "Kind" }, KIND_NAMES[i.kind] || i.kind),
    h("td", { class: "num", "data-label": "Rows" }, i.rows === i.written ? String(i.rows) : `${i.rows} of ${i.written}`),
    h("td", { class: "actions" }, del("Delete", "this import", `/api/data/imports/${encodeURIComponent(i.id)}`)))));
}

// chartCard shows one indicator's series, one chart per unit.
async function chartCard(ind, gen) {
  const plots = h("div", { class: "chart-plots" }, h("p", { class: "muted small" }, "Loading…"));
  const card = h("div", { class: "card chart", "data-indicator": ind.indicator },
    h("h4", {}, ind.indicator),
    h("p", { class: "muted small" }, `${ind.count} measurement${ind.count === 1 ? "" : "s"}, ${day(ind.first)} – ${day(ind.last)}`),
    plots);
  const draw = async () => {
    const { series } = await api(`/api/data/health/series?indicator=${encodeURIComponent(ind.indicator)}`);
    if (gen !== generation) return;
    clear(plots);
    for (const s of series) {
      const el = h("div", { class: "plot", "data-unit": s.unit });
      plots.append(el);
      charts.push(lineChart(el, { label: ind.indicator, unit: s.unit, points: s.points }));
    }
    card.dataset.drawn = "";
  };
  return { card, draw };
}

async function load() {
  const gen = ++generation;
  const box = $("data-overview");
  $("data-error").textContent = "";
  let sum;
  try {
    sum = await api("/api/data");
  } catch (err) {
    if (gen === generation) $("data-error").textContent = `Could not list your data: ${err.message}`;
    return;
  }
  if (gen !== generation) return;
  for (const destroy of charts) destroy();
  charts = [];
  clear(box);
  if (!sum.kinds.length) {
    box.append(h("p", { class: "muted", id: "data-empty" }, "Nothing imported yet."));
    return;
  }
  box.append(h("h3", {}, "What you imported"), kindsTable(sum.kinds));
  const cards = await Promise.all(sum.indicators.map((ind) => chartCard(ind, gen)));
  if (cards.length) box.append(h("h3", {}, "Indicators over time"), h("div", { class: "charts" }, cards.map((c) => c.card)));
  if (sum.imports.length) box.append(h("h3", {}, "Imports"), importsTable(sum.imports));
  try {
    await Promise.all(cards.map((c) => c.draw())); // after the cards are laid out: charts take their width
  } catch (err) {
    if (gen === generation) $("data-error").textContent = `Could not chart your data: ${err.message}`;
  }
}

/** init wires the data view once. */
export function init() {
  wire("health");
  wire("genetic");
}

/** show is called each time the view opens. */
export function show() {
  load();
}
