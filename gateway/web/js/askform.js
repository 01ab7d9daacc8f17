// The form for a tool's question to the user (an `ask` event, agent-svc/
// design.md "Questions from tools"): built from the question's flat JSON
// Schema, as MCP elicitation allows (string, number, integer, boolean and
// enum properties), with required marks and defaults.

import { h } from "./dom.js";

/** field renders one property; value() reads it back (undefined when empty). */
function field(name, prop, required) {
  const id = `ask-${name}-${Math.random().toString(36).slice(2, 8)}`;
  const label = h("label", { for: id, class: "ask-label" }, prop.title || name, required ? h("span", { class: "ask-required", title: "required" }, " *") : null);
  const hint = prop.description ? h("div", { class: "small muted" }, prop.description) : null;
  const choices = prop.enum || prop.oneOf?.map((o) => o.const);
  let input;
  let value;
  if (prop.type === "boolean") {
    input = h("input", { id, type: "checkbox", name, class: "ask-input" });
    input.checked = prop.default === true;
    value = () => input.checked;
    return { el: h("div", { class: "ask-field ask-bool" }, input, label, hint), value, input };
  }
  if (choices) {
    const titles = prop.enumNames || prop.oneOf?.map((o) => o.title) || [];
    input = h("select", { id, name, class: "ask-input", required }, h("option", { value: "" }, required ? "Choose…" : "—"),
      choices.map((c, i) => h("option", { value: String(c) }, titles[i] || String(c))));
    if (prop.default !== undefined) input.value = String(prop.default);
    value = () => choices.find((c) => String(c) === input.value);
  } else if (prop.type === "number" || prop.type === "integer") {
    input = h("input", { id, name, type: "number", class: "ask-input", required, step: prop.type === "integer" ? "1" : "any",
      min: prop.minimum, max: prop.maximum });
    if (prop.default !== undefined) input.value = String(prop.default);
    value = () => (input.value === "" ? undefined : Number(input.value));
  } else {
    const type = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" }[prop.format] || "text";
    input = h("input", { id, name, type, class: "ask-input", required, minlength: prop.minLength, maxlength: prop.maxLength });
    if (prop.default !== undefined) input.value = String(prop.default);
    value = () => (input.value === "" ? undefined : input.value);
  }
  return { el: h("div", { class: "ask-field" }, label, input, hint), value, input };
}

/**
 * askForm shows the question of ev (message, schema) in parent and
 * resolves to the answer, the body of POST /api/runs/{id}/answer: accept
 * with the content, or decline.
 */
export function askForm(parent, ev) {
  return new Promise((resolve) => {
    const props = ev.schema?.properties || {};
    const required = new Set(ev.schema?.required || []);
    const fields = Object.entries(props).map(([name, p]) => [name, field(name, p, required.has(name))]);
    const note = h("div", { class: "small muted ask-note" });
    const form = h(
      "form",
      { class: "ask", "data-call-id": ev.id || "", "data-tool": ev.name || "" },
      h("div", { class: "ask-title" }, h("span", { class: "tool-name" }, ev.name || "tool"), " asks"),
      h("div", { class: "ask-message" }, ev.message || ""),
      fields.map(([, f]) => f.el),
      h(
        "div",
        { class: "approval-actions" },
        h("button", { type: "submit", class: "btn ask-submit" }, "Submit"),
        h("button", { type: "button", class: "btn ask-decline", onclick: () => done({ action: "decline" }, "Declined.") }, "Decline"),
      ),
      note,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const content = {};
      for (const [name, f] of fields) {
        const v = f.value();
        if (v !== undefined) content[name] = v;
      }
      done({ action: "accept", content }, "Sent.");
    });
    const done = (answer, text) => {
      for (const el of form.querySelectorAll("button, input, select")) el.disabled = true;
      note.textContent = text;
      resolve({ ...answer, tool_call_id: ev.id });
    };
    parent.append(form);
  });
}
