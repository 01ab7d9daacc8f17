// The data view: health CSV and genetic raw-file uploads with progress.

import { upload } from "./api.js";
import { $, h, clear, append } from "./dom.js";

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
    } catch (err) {
      showResult(box, 0, { message: err.message });
    } finally {
      button.disabled = false;
      bar.hidden = true;
    }
  });
}

/** init wires the data view once. */
export function init() {
  wire("health");
  wire("genetic");
}

/** show is called each time the view opens. */
export function show() {}
