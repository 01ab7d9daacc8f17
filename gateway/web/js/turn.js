// Rendering of one assistant turn from its events (agent-svc/design.md
// "Chat turns"): the live stream and a stored transcript go through the
// same code.

import { h, append, clear } from "./dom.js";
import { Markdown } from "./markdown.js";
import { lineChart } from "./chart.js";
import { askForm } from "./askform.js";

const STATUS_LABEL = { ok: "done", partial: "partial", error: "failed" };
const TODO_MARK = { completed: "✓", in_progress: "▸", pending: "○" };
const FINISH_NOTE = {
  error: "The turn failed.",
  unavailable: "The agent stopped responding; the turn goes on once an agent is back. Reopen the session later for its answer.",
  empty: "The model returned nothing.",
  cancelled: "Stopped.",
  running: "Still running; reopen the session later for its answer.",
};

function preview(args) {
  let s = "";
  try {
    s = JSON.stringify(args ?? {});
  } catch {
    s = String(args);
  }
  return s.length > 90 ? `${s.slice(0, 89)}…` : s;
}

function pretty(args) {
  try {
    return JSON.stringify(args ?? {}, null, 2);
  } catch {
    return String(args);
  }
}

/** Turn renders the events of one assistant turn into a message element. */
export class Turn {
  constructor() {
    this.el = h("div", { class: "msg msg-assistant" });
    this.body = h("div", { class: "msg-body" });
    this.foot = h("div", { class: "msg-foot" });
    append(this.el, this.body, this.foot);
    this.text = null; // the Markdown block text deltas go to now
    this.reasoning = null;
    this.todos = null;
    this.calls = new Map();
    this.usage = { input: 0, output: 0 };
    this.sessionID = "";
    this.finished = false;
    this.el.classList.add("streaming");
  }

  /** apply renders one event; unknown types are ignored. */
  apply(ev) {
    switch (ev.type) {
      case "start":
        this.sessionID = ev.session_id || "";
        break;
      case "text":
        if (!this.text) {
          this.text = new Markdown();
          this.body.append(this.text.el);
          this.reasoning = null;
        }
        this.text.append(ev.text || "");
        break;
      case "reasoning":
        if (!this.reasoning) {
          const content = h("div", { class: "reasoning-text" });
          const box = h("details", { class: "reasoning" }, h("summary", {}, "Reasoning"), content);
          this.reasoning = content;
          this.body.append(box);
          this.endText();
        }
        this.reasoning.append(ev.reasoning || "");
        break;
      case "tool_call":
        this.toolCall(ev);
        break;
      case "tool_result":
        this.toolResult(ev);
        break;
      case "todos":
        this.renderTodos(ev.items || []);
        break;
      case "usage":
        this.usage.input += ev.input_tokens || 0;
        this.usage.output += ev.output_tokens || 0;
        break;
      case "notice":
        this.block("notice", ev.message);
        break;
      case "error":
        this.block("error-block", ev.message || "error");
        break;
      case "end":
        this.finish(ev.finish_reason || "stop");
        break;
      case "approval":
      case "ask":
        break; // askApproval and ask render them, for the live stream only
      default:
        break; // heartbeat, and types newer than this page
    }
  }

  /** endText renders the text block now, as it has all its deltas. */
  endText() {
    this.text?.flush();
    this.text = null;
  }

  block(cls, message) {
    this.body.append(h("div", { class: cls }, message || ""));
    this.endText();
    this.reasoning = null;
  }

  toolCall(ev) {
    const status = h("span", { class: "badge running" }, "running");
    const result = h("pre", { class: "tool-output", hidden: true });
    const card = h(
      "details",
      { class: "tool-call", "data-call-id": ev.id || "", "data-tool": ev.name || "" },
      h("summary", {}, h("span", { class: "tool-name" }, ev.name || "tool"), " ", h("code", { class: "tool-args" }, preview(ev.args)), " ", status),
      h("div", { class: "tool-section" }, "Arguments"),
      h("pre", { class: "tool-input" }, pretty(ev.args)),
      h("div", { class: "tool-section", hidden: true }, "Result"),
      result,
    );
    this.body.append(card);
    this.calls.set(ev.id, { card, status, result });
    this.endText();
    this.reasoning = null;
  }

  toolResult(ev) {
    let call = this.calls.get(ev.tool_call_id);
    if (!call) {
      this.toolCall({ id: ev.tool_call_id, name: "tool", args: {} });
      call = this.calls.get(ev.tool_call_id);
    }
    const st = ev.status || "ok";
    call.status.className = `badge ${st}`;
    call.status.textContent = STATUS_LABEL[st] || st;
    call.card.classList.add(`status-${st}`);
    call.result.hidden = false;
    call.result.previousElementSibling.hidden = false;
    let content = ev.content || "";
    if (ev.error_kind) content = `[${ev.error_kind}] ${content}`;
    call.result.textContent = content;
    const chart = st === "ok" ? chartOf(ev.content) : null;
    if (chart) this.chart(call.card, chart);
    if (ev.truncated) call.result.after(h("div", { class: "small muted" }, "The result was truncated for the model."));
  }

  /** chart draws a tool result's chart below its tool card, one plot per series. */
  chart(card, spec) {
    const box = h("figure", { class: "chat-chart" }, h("figcaption", {}, spec.title || "Chart"));
    card.after(box);
    this.endText();
    for (const s of spec.series.slice(0, 6)) {
      if (!Array.isArray(s.t) || !Array.isArray(s.v) || s.t.length !== s.v.length) continue;
      const el = h("div", { class: "plot", "data-series": s.name || "" });
      box.append(el);
      const points = s.t.map((t, i) => ({ time: new Date(t * 1000).toISOString(), value: s.v[i] }));
      lineChart(el, { label: s.name || "", unit: s.unit || "", points });
    }
  }

  renderTodos(items) {
    if (!this.todos) {
      this.todos = h("ul", { class: "todo-list" });
      this.body.append(h("div", { class: "todos" }, h("div", { class: "todos-title" }, "Plan"), this.todos));
      this.endText();
      this.reasoning = null;
    }
    clear(this.todos);
    for (const it of items) {
      const st = it.status || "pending";
      this.todos.append(h("li", { class: `todo ${st}` }, h("span", { class: "todo-mark" }, TODO_MARK[st] || "○"), it.content || ""));
    }
  }

  /**
   * askApproval shows a tool call that waits for the user and resolves to
   * the decision (the body of POST /api/runs/{id}/approve): approve, edit
   * (the arguments as edited in the box) or reject (with the reason).
   */
  askApproval(ev) {
    return new Promise((resolve) => {
      const args = h("textarea", { class: "approval-args", rows: 6, spellcheck: "false" });
      args.value = pretty(ev.args);
      const reason = h("input", { class: "approval-reason", type: "text", placeholder: "Reason (the model sees it)" });
      const note = h("div", { class: "small muted approval-note" });
      const box = h(
        "div",
        { class: "approval", "data-call-id": ev.id || "", "data-tool": ev.name || "" },
        h("div", { class: "approval-title" }, "Approve this tool call? ", h("span", { class: "tool-name" }, ev.name || "tool")),
        args,
        reason,
        h(
          "div",
          { class: "approval-actions" },
          h("button", { type: "button", class: "btn approval-approve", onclick: () => done({ decision: "approve" }) }, "Approve"),
          h("button", { type: "button", class: "btn approval-edit", onclick: () => edit() }, "Run edited"),
          h("button", { type: "button", class: "btn approval-reject", onclick: () => done({ decision: "reject", reason: reason.value.trim() }) }, "Reject"),
        ),
        note,
      );
      const edit = () => {
        let parsed;
        try {
          parsed = JSON.parse(args.value);
        } catch {
          note.textContent = "The arguments are not valid JSON.";
          return;
        }
        done({ decision: "edit", arguments: parsed });
      };
      const done = (d) => {
        for (const b of box.querySelectorAll("button, textarea, input")) b.disabled = true;
        note.textContent = d.decision === "approve" ? "Approved." : d.decision === "edit" ? "Approved with edits." : "Rejected.";
        resolve({ ...d, tool_call_id: ev.id });
      };
      this.body.append(box);
      this.endText();
      this.reasoning = null;
    });
  }

  /**
   * ask shows a tool's question as a form and resolves to the answer
   * (the body of POST /api/runs/{id}/answer).
   */
  ask(ev) {
    const answer = askForm(this.body, ev);
    this.endText();
    this.reasoning = null;
    return answer;
  }

  /** finish marks the turn over, with a note unless it ended normally. */
  finish(reason) {
    if (this.finished) return;
    this.finished = true;
    this.endText();
    this.el.classList.remove("streaming");
    this.el.dataset.finish = reason;
    for (const { status } of this.calls.values()) {
      if (status.classList.contains("running")) {
        status.className = "badge error";
        status.textContent = "no result";
      }
    }
    if (FINISH_NOTE[reason]) this.foot.append(h("div", { class: `finish finish-${reason}` }, FINISH_NOTE[reason]));
    if (this.usage.input || this.usage.output) {
      this.foot.append(h("div", { class: "usage" }, `${this.usage.input} tokens in · ${this.usage.output} out`));
    }
  }
}

/** userMessage renders a question and the names of its attachments. */
export function userMessage(text, files = []) {
  const msg = h("div", { class: "msg msg-user" }, h("div", { class: "text" }, text));
  if (files.length) msg.append(h("ul", { class: "msg-files" }, ...files.map((n) => h("li", { class: "file-chip" }, n))));
  return msg;
}

/**
 * chartOf returns the chart spec a tool result carries ({type:
 * "timeseries", title, series: [{name, unit, t, v}]}, registry-svc/design.md
 * "Charts in chat"), or null.
 */
function chartOf(content) {
  if (!content || content[0] !== "{") return null;
  try {
    const c = JSON.parse(content).chart;
    if (c?.type === "timeseries" && Array.isArray(c.series) && c.series.length) return c;
  } catch {
    // not JSON: no chart
  }
  return null;
}
