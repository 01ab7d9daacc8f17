// The chat view: the session list, the transcript and the composer.

import { api, request, ApiError } from "./api.js";
import { $, h, clear, when, confirmButton } from "./dom.js";
import { choice, initPicker } from "./models.js";
import { events } from "./sse.js";
import { Turn, userMessage } from "./turn.js";
import * as attach from "./attach.js";

const PAGE = 20;

let sessionID = ""; // the open session, "" for a new chat
// running is the turn streaming now: {ctrl, runID, stopping}. Aborting
// ctrl only stops reading; the run goes on server-side (stopRun stops it).
let running = null;
let cursor = "";

function transcript() {
  return $("transcript");
}

function scrollDown(force) {
  const t = transcript();
  if (force || t.scrollHeight - t.scrollTop - t.clientHeight < 120) t.scrollTop = t.scrollHeight;
}

function setBusy(busy) {
  $("composer-send").disabled = busy;
  $("composer-stop").hidden = !busy;
  $("composer").classList.toggle("busy", busy);
}

function showEmpty(show) {
  const empty = $("chat-empty");
  empty.hidden = !show;
}

function resetTranscript() {
  const t = transcript();
  const empty = $("chat-empty");
  clear(t).append(empty);
  showEmpty(true);
}

function markCurrent() {
  let title = "";
  for (const li of $("session-list").children) {
    const current = li.dataset.id === sessionID;
    li.classList.toggle("current", current);
    if (current) title = li.session?.title || "";
  }
  $("chat-title").textContent = sessionID ? title : "New chat";
}

/**
 * shortWhen is a session's time in a sidebar line: the time of day for
 * today, else the day and time, so two chats with the same title differ.
 */
function shortWhen(iso) {
  const d = new Date(iso);
  if (!iso || Number.isNaN(d.getTime())) return when(iso);
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  if (d.toDateString() === new Date().toDateString()) return time;
  return `${d.toLocaleDateString([], { month: "short", day: "numeric" })}, ${time}`;
}

function sessionItem(s) {
  const title = h("span", { class: "session-title" }, s.title || "Untitled");
  const open = h("a", { href: `#/chat/${encodeURIComponent(s.id)}`, class: "session-link", title: s.title || "" },
    title,
    h("span", { class: "session-meta", title: when(s.updated) }, `${shortWhen(s.updated)} · ${s.turns} turn${s.turns === 1 ? "" : "s"}`));
  open.addEventListener("click", () => setDrawer(false));
  const rename = h("button", { type: "button", class: "small icon rename", title: "Rename this session" }, "✎");
  rename.addEventListener("click", () => renameSession(li, s));
  const del = confirmButton("×", "Delete?", () => deleteSession(s.id), { title: "Delete this session", class: "danger small icon" });
  const li = h("li", { "data-id": s.id }, open, rename, del);
  li.session = s;
  return li;
}

/** renameSession edits a session's title in place: Enter or leaving the field saves, Escape cancels. */
function renameSession(li, s) {
  const link = li.querySelector(".session-link");
  const input = h("input", { type: "text", class: "session-rename", value: s.title || "", maxlength: "120", "aria-label": "Session title" });
  link.hidden = true;
  li.prepend(input);
  input.focus();
  input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    if (save && title && title !== s.title) {
      try {
        const updated = await api(`/api/sessions/${encodeURIComponent(s.id)}`, { method: "PATCH", body: { title } });
        s.title = updated.title;
        link.querySelector(".session-title").textContent = s.title;
        link.title = s.title;
        if (s.id === sessionID) $("chat-title").textContent = s.title;
      } catch (err) {
        $("sessions-error").textContent = `Could not rename the session: ${err.message}`;
      }
    }
    input.remove();
    link.hidden = false;
  };
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.isComposing) {
      e.preventDefault();
      finish(true);
    } else if (e.key === "Escape") {
      finish(false);
    }
  });
  input.addEventListener("blur", () => finish(true));
}

/** setDrawer opens or closes the session list where it is a drawer (narrow screens). */
function setDrawer(open) {
  $("view-chat").classList.toggle("drawer-open", open);
  $("sessions-toggle").setAttribute("aria-expanded", String(open));
}

/** loadSessions reads the first page of sessions, or the next with more. */
async function loadSessions(more = false) {
  const list = $("session-list");
  $("sessions-error").textContent = "";
  try {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (more && cursor) q.set("cursor", cursor);
    const page = await api(`/api/sessions?${q}`);
    if (!more) clear(list);
    for (const s of page.sessions || []) list.append(sessionItem(s));
    cursor = page.next_cursor || "";
    $("sessions-more").hidden = !cursor;
    $("sessions-empty").hidden = list.children.length > 0;
    markCurrent();
  } catch (err) {
    $("sessions-error").textContent = `Could not list sessions: ${err.message}`;
  }
}

async function deleteSession(id) {
  try {
    await api(`/api/sessions/${encodeURIComponent(id)}`, { method: "DELETE" });
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) {
      $("sessions-error").textContent = `Could not delete the session: ${err.message}`;
      return;
    }
  }
  $("session-list").querySelector(`li[data-id="${CSS.escape(id)}"]`)?.remove();
  $("sessions-empty").hidden = $("session-list").children.length > 0;
  if (id === sessionID) newChat();
}

/** newChat leaves a running turn to finish on the server and starts over with no session. */
function newChat() {
  if (running) running.ctrl.abort();
  sessionID = "";
  resetTranscript();
  markCurrent();
  history.replaceState(null, "", "#/chat");
  $("composer-input").focus();
}

/** openSession shows a stored session's transcript. */
async function openSession(id) {
  if (running) running.ctrl.abort();
  sessionID = id;
  markCurrent();
  resetTranscript();
  showEmpty(false);
  const t = transcript();
  try {
    const s = await api(`/api/sessions/${encodeURIComponent(id)}`);
    if (sessionID !== id) return; // another session was opened meanwhile
    for (const turn of s.turns || []) {
      const evs = Array.isArray(turn.events) ? turn.events : [];
      const files = evs.find((ev) => ev.type === "start")?.attachments || [];
      t.append(userMessage(turn.question || "", files.map((f) => f.name)));
      const view = new Turn();
      t.append(view.el);
      if (evs.length) for (const ev of evs) view.apply(ev);
      else view.apply({ type: "text", text: turn.answer || "" });
      view.finish(turn.finish_reason || "stop");
    }
    scrollDown(true);
  } catch (err) {
    t.append(h("div", { class: "error-block" }, `Could not open the session: ${err.message}`));
  }
}

/** newSessionID returns a random session id (crypto.randomUUID needs a secure context; this does not). */
function newSessionID() {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

/** send runs one chat turn and streams it into the transcript. */
async function send(question) {
  const t = transcript();
  showEmpty(false);
  const files = attach.hasFiles() ? await attach.take() : null;
  t.append(userMessage(question, files ? files.files.map((f) => f.name) : []));
  const view = new Turn();
  t.append(view.el);
  scrollDown(true);
  const ctrl = new AbortController();
  const run = { ctrl, runID: "", stopping: false };
  running = run;
  setBusy(true);
  // A new chat names its session before the first request: a turn
  // stopped before its first event then still leaves the page in the
  // session the server saved, and the next question continues it.
  if (!sessionID) {
    sessionID = newSessionID();
    history.replaceState(null, "", `#/chat/${encodeURIComponent(sessionID)}`);
  }
  // can_ask: this page answers a tool's questions (ask events).
  const body = { question, session_id: sessionID, can_ask: true };
  if (files) body.attachments = files.attachments;
  const agent = $("composer-agent").value;
  if (agent) body.agent = agent;
  Object.assign(body, choice());
  try {
    let resp;
    try {
      resp = await request("/api/chat", { method: "POST", body, signal: ctrl.signal });
    } catch (err) {
      files?.restore(); // refused before the run: the files stay queued
      throw err;
    }
    const state = {};
    for (;;) {
      let approval = null;
      for await (const ev of events(resp.body, state)) {
        if (ev.type === "title" && ev.text) showTitle(sessionID, ev.text);
        view.apply(ev);
        if (ev.type === "approval" || ev.type === "ask") approval = ev;
        if (ev.type === "start" && ev.id) {
          run.runID = ev.id;
          if (run.stopping) cancelRun(run); // Stop was pressed before the run had an id
        }
        if (ev.type === "start" && ev.session_id && ev.session_id !== sessionID) {
          sessionID = ev.session_id;
          // The address names the session without reopening it.
          history.replaceState(null, "", `#/chat/${encodeURIComponent(sessionID)}`);
        }
        scrollDown(false);
      }
      if (!approval || !run.runID) break;
      // The run waits for the user (its state is on the server, so the
      // page may close meanwhile); then its stream goes on from here.
      scrollDown(true);
      const id = encodeURIComponent(run.runID);
      if (approval.type === "ask") {
        const answer = await view.ask(approval);
        await api(`/api/runs/${id}/answer`, { method: "POST", body: answer, signal: ctrl.signal });
      } else {
        const decision = await view.askApproval(approval);
        await api(`/api/runs/${id}/approve`, { method: "POST", body: decision, signal: ctrl.signal });
      }
      resp = await request(`/api/runs/${id}/stream?after=${encodeURIComponent(state.lastId || "0")}`, { signal: ctrl.signal });
    }
    if (!view.finished) view.apply({ type: "error", message: "The connection closed before the turn ended." });
  } catch (err) {
    if (ctrl.signal.aborted) view.finish("cancelled");
    else view.apply({ type: "error", message: err.message });
  } finally {
    if (!view.finished) view.finish("error");
    if (running === run) running = null;
    setBusy(false);
    scrollDown(false);
    loadSessions();
  }
}

/** showTitle shows a session's generated title in the bar and the list. */
function showTitle(id, title) {
  const li = $("session-list").querySelector(`li[data-id="${CSS.escape(id)}"]`);
  if (li?.session) {
    li.session.title = title;
    li.querySelector(".session-title").textContent = title;
  }
  if (id === sessionID) $("chat-title").textContent = title;
}

/** stopRun stops the running turn: the run ends cancelled, and its stream says so. */
function stopRun() {
  if (!running || running.stopping) return;
  running.stopping = true;
  if (running.runID) cancelRun(running);
}

/** cancelRun asks the server to stop a run; if it cannot, the page stops reading. */
async function cancelRun(run) {
  try {
    await api(`/api/runs/${encodeURIComponent(run.runID)}/cancel`, { method: "POST" });
  } catch {
    run.ctrl.abort();
  }
}

/** init wires the chat view once. */
export function init() {
  const input = $("composer-input");
  initPicker();
  attach.init();
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const q = input.value.trim();
    if ((!q && !attach.hasFiles()) || running) return;
    input.value = "";
    send(q);
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("composer-stop").addEventListener("click", stopRun);
  $("new-chat").addEventListener("click", () => {
    setDrawer(false);
    newChat();
  });
  $("sessions-toggle").addEventListener("click", () => setDrawer(!$("view-chat").classList.contains("drawer-open")));
  $("drawer-backdrop").addEventListener("click", () => setDrawer(false));
  $("sessions").addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !e.target.classList.contains("session-rename")) setDrawer(false);
  });
  $("sessions-more").addEventListener("click", () => loadSessions(true));
}

/**
 * show opens the chat view on a session id; without one it keeps what the
 * view showed last (New chat starts over).
 */
export function show(id) {
  if (id && id !== sessionID) openSession(id);
  else if (!id && sessionID) history.replaceState(null, "", `#/chat/${encodeURIComponent(sessionID)}`);
  loadSessions();
  $("composer-input").focus();
}
