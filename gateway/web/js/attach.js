// Attachments of the next chat message: the file picker, drag and drop
// onto the chat, and pasted files. The files travel base64-encoded in
// POST /api/chat's attachments (agent-svc/design.md "Attachments"); the
// server checks their sizes and types and explains a refusal.

import { $, h, clear } from "./dom.js";

let pending = []; // File objects waiting for the next message

function render() {
  const list = $("composer-files");
  clear(list);
  list.hidden = pending.length === 0;
  pending.forEach((f, i) => {
    const remove = h("button", { type: "button", class: "small icon", title: `Remove ${f.name}` }, "×");
    remove.addEventListener("click", () => {
      pending.splice(i, 1);
      render();
    });
    list.append(h("li", { class: "file-chip", "data-name": f.name }, h("span", {}, f.name), h("span", { class: "muted small" }, ` ${size(f.size)}`), remove));
  });
}

function size(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(0)} KB`;
  return `${(n / (1 << 20)).toFixed(1)} MB`;
}

/** add queues files for the next message. */
export function add(files) {
  for (const f of files) if (f && f.name !== undefined) pending.push(f);
  render();
}

/** hasFiles reports whether files wait for the next message. */
export function hasFiles() {
  return pending.length > 0;
}

function base64(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).replace(/^data:[^,]*,/, ""));
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

/**
 * take returns the queued files as the request's attachments, and a
 * function that puts them back (a request the server refused keeps them).
 */
export async function take() {
  const files = pending;
  pending = [];
  render();
  const attachments = await Promise.all(files.map(async (f) => ({ name: f.name, type: f.type || "", data: await base64(f) })));
  return {
    files,
    attachments,
    restore: () => {
      pending = files.concat(pending);
      render();
    },
  };
}

/** init wires the picker, drag and drop and paste once. */
export function init() {
  const picker = $("composer-file");
  $("composer-attach").addEventListener("click", () => picker.click());
  picker.addEventListener("change", () => {
    add(picker.files);
    picker.value = "";
  });
  const zone = $("view-chat");
  zone.addEventListener("dragover", (e) => {
    if (![...(e.dataTransfer?.types || [])].includes("Files")) return;
    e.preventDefault();
    zone.classList.add("dropping");
  });
  zone.addEventListener("dragleave", (e) => {
    if (e.target === zone || !zone.contains(e.relatedTarget)) zone.classList.remove("dropping");
  });
  zone.addEventListener("drop", (e) => {
    if (!e.dataTransfer?.files?.length) return;
    e.preventDefault();
    zone.classList.remove("dropping");
    add(e.dataTransfer.files);
  });
  $("composer-input").addEventListener("paste", (e) => {
    const files = [...(e.clipboardData?.files || [])];
    if (!files.length) return;
    e.preventDefault();
    add(files);
  });
}
