// DOM helpers. Everything the page shows is built with these, and text is
// only ever set as text (never innerHTML), so model and tool output cannot
// become markup.

/**
 * h creates an element. attrs sets attributes, except "class" (className),
 * "on<event>" (a listener) and "hidden" (a boolean). Children are nodes or
 * strings (inserted as text); null and false are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "hidden") el.hidden = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, ...children);
  return el;
}

/** append adds children (nodes or text) to el. */
export function append(el, ...children) {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** $ returns the element with id, which must exist. */
export function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`no element #${id}`);
  return el;
}

/** clear removes every child of el. */
export function clear(el) {
  el.replaceChildren();
  return el;
}

/** when formats an ISO time for people, or "—" for none. */
export function when(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

/**
 * confirmButton makes a button that asks for a second click before acting,
 * instead of a modal confirm() dialog.
 */
export function confirmButton(label, confirmLabel, action, attrs = {}) {
  let armed = false;
  let timer = 0;
  const btn = h("button", { type: "button", class: "danger small", ...attrs }, label);
  btn.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      btn.textContent = confirmLabel;
      btn.classList.add("armed");
      timer = setTimeout(() => {
        armed = false;
        btn.textContent = label;
        btn.classList.remove("armed");
      }, 4000);
      return;
    }
    clearTimeout(timer);
    btn.disabled = true;
    try {
      await action();
    } finally {
      btn.disabled = false;
      armed = false;
      btn.textContent = label;
      btn.classList.remove("armed");
    }
  });
  return btn;
}
