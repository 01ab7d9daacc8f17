// Markdown for model output: marked renders it, DOMPurify keeps only plain
// document markup, and links open in a new tab without a referrer or an
// opener. HTML the model writes is shown as text, never parsed.

import { Marked } from "../vendor/marked/marked.esm.js";
import DOMPurify from "../vendor/dompurify/purify.es.js";
import { h } from "./dom.js";

/** The URL schemes a link may use; anything else loses its href. */
const SAFE_LINK = /^(?:https?:|mailto:)/i;

const escapes = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
const escapeHTML = (s) => String(s).replace(/[&<>"']/g, (c) => escapes[c]);

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // Raw HTML, block or inline, is model text like any other: escaping it
    // here means the sanitizer below is a second line, not the only one.
    html({ text }) {
      return escapeHTML(text);
    },
    // Images would load from wherever the model points (and the CSP blocks
    // other origins anyway); they are shown as links instead.
    image({ href, text }) {
      return `<a href="${escapeHTML(href)}">${escapeHTML(text || href)}</a>`;
    },
  },
});

const purify = DOMPurify(window);
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.nodeName !== "A") return;
  const href = node.getAttribute("href") || "";
  if (!SAFE_LINK.test(href.trim())) {
    node.removeAttribute("href");
    return;
  }
  node.setAttribute("target", "_blank");
  node.setAttribute("rel", "noopener noreferrer");
});

// Only document structure: no class or style (the page's CSS and CSP are
// not the model's to use), no forms, media or frames (a task list's
// checkbox goes too; its text stays).
const PURIFY = {
  ALLOWED_TAGS: ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "table", "thead", "tbody", "tr", "th", "td"],
  ALLOWED_ATTR: ["href", "title", "align", "start"],
  // DOMPurify checks every attribute value with this, not only URLs: a
  // value with no scheme (align="right") passes, and of the schemes only
  // ours. The hook above then keeps an href only when it is absolute.
  ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
  RETURN_DOM_FRAGMENT: true,
};

/** render returns the sanitized DOM of markdown source src. */
export function render(src) {
  const frag = purify.sanitize(marked.parse(src).trim(), PURIFY);
  for (const pre of frag.querySelectorAll("pre")) {
    const copy = h("button", { type: "button", class: "copy-code small", title: "Copy the code" }, "Copy");
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(pre.querySelector("code")?.textContent ?? pre.textContent);
        copy.textContent = "Copied";
      } catch {
        copy.textContent = "Copy failed";
      }
      setTimeout(() => (copy.textContent = "Copy"), 1500);
    });
    const wrap = h("div", { class: "code-block" });
    pre.replaceWith(wrap);
    wrap.append(pre, copy);
  }
  return frag;
}

/**
 * Markdown is a block of streamed model text: append adds a delta and
 * re-renders the whole source at most once a frame, so a half-finished
 * table or code fence settles as more text arrives.
 */
export class Markdown {
  constructor() {
    this.el = h("div", { class: "text md" });
    this.src = "";
    this.frame = 0;
  }

  /** append adds streamed text. */
  append(text) {
    this.src += text;
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  /** flush renders what has arrived now. */
  flush() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.el.replaceChildren(render(this.src));
  }
}
