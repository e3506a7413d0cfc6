// The page: what needs you, the sessions with their live cards, a session's
// conversation, the audit log.  Everything is read from the API again when the live
// stream says the daemon showed something.

import { ApiError, door, get, inTelegram, listen, post, upload } from "./api.js";
import { h, withCode } from "./dom.js";
import { markdown } from "./md.js";
import { choose, loadStrings, offered, t } from "./strings.js";
import { backButton, paint } from "./tg.js";

const view = document.getElementById("view");
const flash = document.getElementById("flash");
const ICON = { working: "⏳", waiting: "🔐", ready: "✅", unknown: "•", gone: "🔴" };
const WORDS = { working: "working", waiting: "waiting for you", ready: "ready", unknown: "starting", gone: "ended" };  // t() at use
// a sent message's status, as the server writes it (web/actions.py, web/live.py): t() at use
const STATUS = { sending: "sending", held: "held", typed: "typed", taken: "taken", "not taken": "not taken", "not delivered": "not delivered" };

let me = null;
// sessions a message is being sent to now: their Send stays off until it is answered
const sending = new Set();

function say(text, ok = true) {
  flash.textContent = text;
  flash.className = ok ? "ok" : "bad";
  flash.hidden = !text;
}

async function act(path, body, before = null) {
  try {
    const result = await post(path, body);
    say(result.message || "", result.ok !== false);
    if (before) before(result);
    refresh();
    return result;
  } catch (err) {
    say(err.message, false);
    return null;
  }
}

// the field as it is now (a refresh may have replaced the one an action started from)
function clear(selector) {
  const el = view.querySelector(selector);
  if (el) el.value = "";
}

// -- pieces ----------------------------------------------------------------------------

function headline(s) {
  // a hub's host that went quiet: its session's state is only what the host last said
  if (s.unreachable) return `❔ ${s.label} · ${t("unreachable")}`;
  const parts = [`${ICON[s.state] || "•"} ${s.label}`, s.waiting_for ? (s.waiting_for === "question" || s.waiting_for === "form" ? t("waiting for your answer") : t("waiting for your approval")) : t(WORDS[s.state] || "")];
  if (s.elapsed) parts.push(s.elapsed);
  if (s.model) parts.push(s.model);
  if (s.context_pct !== null) parts.push(`ctx ${Math.round(s.context_pct)}%`);
  if (s.cost_usd !== null) parts.push(`$${s.cost_usd.toFixed(2)}`);
  return parts.filter(Boolean).join(" · ");
}

// What the call would change: the chat's diff (clients/asking.py), each line marked - or +.
// A diff of several files (/diff) has each file's header: named, not marked - or +.
const FILE_LINE = /^(diff --git |index |--- |\+\+\+ |new file mode|deleted file mode)/;
function diffLines(text) {
  return h("pre", { class: "diff" }, text.split("\n").map((line) => h("span", {
    class: FILE_LINE.test(line) ? "file" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : null,
  }, `${line}\n`)));
}

function change(c) {
  if (!c.more) return diffLines(c.shown);
  return h("div", {}, diffLines(c.shown),
    h("details", {}, h("summary", {}, t("{n} more line(s): the whole diff", { n: c.more })), diffLines(c.whole)));
}

function permission(req) {
  const reason = h("input", { type: "text", class: "reason", placeholder: t("Reason (sent with ❌ Deny)"), "aria-label": "reason" });
  const buttons = req.answers.map((a) => h("button", {
    type: "button", "data-act": a.act, disabled: Boolean(req.refused || req.answered_by),
    onclick: () => act("/api/answer", { session: req.session, key: req.key, act: a.act, reason: a.act === "deny" ? reason.value : "" }),
  }, a.label));
  return h("article", { class: "request", "data-key": req.key },
    h("pre", { class: "ask" }, req.text),
    req.change ? change(req.change) : null,
    req.answered_by ? h("p", { class: "muted" }, t("Answered by {who}…", { who: req.answered_by })) : null,
    req.refused ? h("p", { class: "muted" }, req.refused) : null,
    h("div", { class: "buttons" }, buttons),
    req.refused ? null : reason);
}

// The agent's folder trust dialog (Claude Code's, Codex's): until it is answered the session does nothing, and a
// prompt typed into it would answer it (the server refuses prompts meanwhile).
function trustDialog(req) {
  const buttons = req.answers.map((a) => h("button", {
    type: "button", "data-act": a.act, class: a.act === "no" ? "danger" : null, disabled: Boolean(req.refused),
    onclick: () => act(`/api/sessions/${encodeURIComponent(req.session)}/trust`, { act: a.act }),
  }, a.label));
  return h("article", { class: "request trust", "data-key": `trust:${req.session}` },
    h("p", { class: "ask" }, req.text),
    req.refused ? h("p", { class: "muted" }, req.refused) : null,
    h("div", { class: "buttons" }, buttons));
}

function need(r) {
  if (r.kind === "trust") return trustDialog(r);
  if (r.kind === "form") return mcpForm(r);
  return r.kind === "question" ? question(r) : permission(r);
}

// What the server said when a form's answer was refused (a value it does not take): shown
// next to the form until it is answered, through the refreshes the live stream makes.
const formSaid = new Map();

// An MCP server's form (an elicitation): one input per field, as the form's schema asks
// for it; Send accepts with the values, Decline and Cancel send none.  A form the page
// cannot answer (the hook no longer waits, or fields it cannot draw) shows its words only:
// they say it is answered at the computer.
const STRING_TYPES = { email: "email", uri: "url", url: "url", date: "date" };

function formInput(f) {
  const common = { name: f.name, "data-kind": f.kind, "aria-label": f.title || f.name };
  if (f.kind === "enum") {
    const picked = f.default !== undefined ? f.default : "";
    // a blank choice first: an optional field may stay empty, a required one must be picked
    const blank = f.default !== undefined && f.required ? null : h("option", { value: "" }, "—");
    return h("select", { ...common, required: Boolean(f.required) }, blank,
      (f.options || []).map((value, i) => h("option", { value, selected: value === picked }, (f.labels || [])[i] || value)));
  }
  if (f.kind === "boolean") {
    // always sent (true or false): a checkbox has no "empty"
    return h("input", { ...common, type: "checkbox", checked: f.default === true });
  }
  if (f.kind === "integer" || f.kind === "number") {
    return h("input", { ...common, type: "number", inputmode: f.kind === "integer" ? "numeric" : "decimal",
      step: f.kind === "integer" ? "1" : "any", min: f.minimum ?? null, max: f.maximum ?? null,
      required: Boolean(f.required), value: f.default ?? null,
      placeholder: f.minimum !== undefined || f.maximum !== undefined ? `${f.minimum ?? "…"}–${f.maximum ?? "…"}` : null });
  }
  return h("input", { ...common, type: STRING_TYPES[f.format] || "text", minlength: f.min_length ?? null,
    maxlength: f.max_length ?? null, required: Boolean(f.required), value: f.default ?? null,
    placeholder: f.format && !STRING_TYPES[f.format] ? f.format : null });
}

function formField(f) {
  const input = formInput(f);
  const title = `${f.title || f.name}${f.required ? " *" : ""}`;
  const hint = f.description ? h("small", { class: "hint" }, f.description) : null;
  if (f.kind === "boolean") {
    return h("div", { class: "field" }, h("label", { class: "option" }, input, ` ${title}`), hint);
  }
  return h("div", { class: "field" }, h("label", {}, h("span", { class: "title" }, title), input), hint);
}

// The values to send: each field as the form types it; an empty optional field left out.
function formValues(form, fields) {
  const content = {};
  for (const f of fields) {
    const el = form.elements.namedItem(f.name);
    if (!el) continue;
    if (f.kind === "boolean") { content[f.name] = el.checked; continue; }
    if (el.value === "") continue;
    content[f.name] = f.kind === "integer" || f.kind === "number" ? Number(el.value) : el.value;
  }
  return content;
}

function mcpForm(req) {
  if (!req.answerable) {
    return h("article", { class: "request form", "data-key": req.key },
      h("pre", { class: "ask" }, req.text),
      req.refused ? h("p", { class: "muted" }, req.refused) : null);
  }
  const off = Boolean(req.refused || req.answered_by);
  let form = null;
  const send = async (action) => {
    const body = { session: req.session, key: req.key, action };
    if (action === "accept") body.content = formValues(form, req.fields);
    // what the server said is kept before the page reads the state again (the refresh
    // that follows draws the form with it)
    return act("/api/form", body, (r) => {
      if (r.ok === false) formSaid.set(req.key, r.message || "");
      else formSaid.delete(req.key);
    });
  };
  const said = formSaid.get(req.key);
  form = h("form", { class: "request form", "data-key": req.key, onsubmit: (event) => { event.preventDefault(); send("accept"); } },
    h("pre", { class: "ask" }, req.text),
    h("fieldset", { disabled: off }, req.fields.map(formField)),
    said ? h("p", { class: "bad said", role: "alert" }, said) : null,
    req.answered_by ? h("p", { class: "muted" }, t("Answered by {who}…", { who: req.answered_by })) : null,
    req.refused ? h("p", { class: "muted" }, req.refused) : null,
    h("div", { class: "buttons" },
      h("button", { type: "submit", "data-act": "accept", disabled: off }, t("✅ Send")),
      h("button", { type: "button", "data-act": "decline", disabled: off, onclick: () => send("decline") }, t("❌ Decline")),
      h("button", { type: "button", "data-act": "cancel", disabled: off, onclick: () => send("cancel") }, t("✖️ Cancel"))));
  return form;
}

function question(req) {
  const form = h("form", { class: "request question", "data-key": req.key });
  req.questions.forEach((q, qi) => {
    const name = `q${qi}`;
    const options = q.options.map((label, oi) => h("label", { class: "option" },
      h("input", { type: q.multi ? "checkbox" : "radio", name, value: String(oi) }), ` ${label}`));
    form.append(h("fieldset", {},
      h("legend", {}, `❓ ${req.label} · ${q.header || t("Claude asks")}`),
      h("p", {}, q.question), ...options,
      h("input", { type: "text", name: `${name}-text`, placeholder: t("Or answer in words"), "aria-label": "other answer" })));
  });
  const submit = (decline) => (event) => {
    event.preventDefault();
    const answers = decline ? null : req.questions.map((q, qi) => ({
      picks: [...form.querySelectorAll(`input[name="q${qi}"]:checked`)].map((i) => Number(i.value)),
      text: form.querySelector(`input[name="q${qi}-text"]`).value.trim(),
    }));
    act("/api/question", { session: req.session, key: req.key, answers });
  };
  form.addEventListener("submit", submit(false));
  form.append(h("div", { class: "buttons" },
    h("button", { type: "submit", disabled: Boolean(req.refused || req.answered_by) }, t("✅ Answer")),
    h("button", { type: "button", onclick: submit(true), disabled: Boolean(req.refused || req.answered_by) }, t("⏹ Decline"))));
  if (req.refused) form.append(h("p", { class: "muted" }, req.refused));
  return form;
}

function sessionCard(s, { open = true } = {}) {
  const buttons = [];
  if (open) buttons.push(h("a", { class: "button", href: `#/s/${encodeURIComponent(s.label)}` }, t("💬 Open")));
  if (me && me.may.prompt) buttons.push(h("a", { class: "button", href: `#/s/${encodeURIComponent(s.label)}/changes` }, t("📝 Changes")));
  if (s.live && (s.state === "working" || s.state === "waiting")) {
    buttons.push(h("button", { type: "button", onclick: () => act(`/api/sessions/${encodeURIComponent(s.name)}/stop`) }, t("⏹ Stop")));
  }
  if (s.live && me && me.may.manage) {
    const end = h("button", { type: "button", class: "danger", onclick: () => {
      if (end.dataset.sure) act(`/api/sessions/${encodeURIComponent(s.name)}/kill`);
      else { end.dataset.sure = "1"; end.textContent = t("🗑 Really end it?"); }
    } }, t("🗑 End"));
    buttons.push(end);
  }
  return h("article", { class: `session ${s.state}`, "data-session": s.name },
    h("h3", {}, headline(s)),
    s.card ? h("pre", { class: "card" }, s.card) : null,
    s.queued ? h("p", { class: "muted" }, t("{n} message(s) waiting to go in", { n: s.queued })) : null,
    h("div", { class: "buttons" }, buttons));
}

// -- views -----------------------------------------------------------------------------

// Starting a session asks for its folder: the ones Claude Code trusts first (no trust
// dialog), then this computer's default, or any folder typed in.
async function startForm(name) {
  let found = { trusted: [], default: "" };
  try { found = await get("/api/folders"); } catch (err) { /* the default folder then */ }
  const choices = [...found.trusted];
  if (found.default && !choices.includes(found.default)) choices.push(found.default);
  const folder = h("select", { name: "folder", "aria-label": t("folder") },
    choices.map((f) => h("option", { value: f }, found.trusted.includes(f) ? `📁 ${f}` : `📁 ${f} · ${t("Claude Code will ask to trust it")}`)));
  const other = h("input", { type: "text", name: "other", placeholder: t("or another folder (a full path)"), "aria-label": t("another folder") });
  // the permission mode it starts in (the server names them in the person's language)
  const mode = h("select", { name: "mode", "aria-label": t("permission mode") },
    (found.modes || []).map((m) => h("option", { value: m.value }, m.label)));
  // the coding agent it runs (Claude Code first); the folders' trust is Claude Code's own
  const agents = found.agents || [];
  const agent = h("select", { name: "agent", "aria-label": t("coding agent"),
    onchange: () => folder.querySelectorAll("option").forEach((o) => {
      o.textContent = agent.value === "claude" && !found.trusted.includes(o.value)
        ? `📁 ${o.value} · ${t("Claude Code will ask to trust it")}` : `📁 ${o.value}`;
    }) }, agents.map((a) => h("option", { value: a.value }, a.label)));
  const submit = (e) => {
    e.preventDefault();
    const where = other.value.trim() || folder.value;
    act("/api/sessions", { name: name.value, folder: where, mode: mode.value,
                           agent: agents.length ? agent.value : "" }).then((r) => {
      if (r && r.ok) { clear("form.new input[name=name]"); clear("form.new input[name=other]"); }
    });
  };
  return h("form", { class: "new", onsubmit: submit },
    h("div", { class: "row" }, name, h("button", { type: "submit" }, t("🆕 Start a session"))),
    agents.length > 1 ? h("label", { class: "folder" }, t("Agent"), agent) : null,
    h("label", { class: "folder" }, t("Folder"), folder), other,
    (found.modes || []).length ? h("label", { class: "folder" }, t("Mode"), mode) : null);
}

async function home() {
  const state = await get("/api/state");
  const needs = state.needs.map(need);
  const live = state.sessions.filter((s) => s.live);
  const ended = state.sessions.filter((s) => !s.live);
  const name = h("input", { type: "text", name: "name", placeholder: t("name"), pattern: "[A-Za-z0-9_][A-Za-z0-9_\\-]{0,63}", required: true, "aria-label": "session name" });
  const start = me.may.manage ? await startForm(name) : null;
  return [
    h("section", { id: "needs" }, h("h2", {}, t("Needs you")),
      needs.length ? needs : h("p", { class: "muted" }, t("Nothing waits for you."))),
    h("section", { id: "sessions" }, h("h2", {}, t("Sessions")),
      live.length ? live.map((s) => sessionCard(s)) : h("p", { class: "muted" }, withCode(t("No session runs. Start one here or with `aipager session NAME`."))),
      start,
      ended.length ? h("details", {}, h("summary", {}, t("Ended ({n})", { n: ended.length })), ended.map((s) => sessionCard(s))) : null),
  ];
}

function entry(e) {
  const by = e.who === "the terminal" ? t("the terminal") : e.who || "";
  const status = STATUS[e.status] ? t(STATUS[e.status]) : e.status;
  const who = { prompt: `🗣 ${by}`, sent: `🗣 ${by || t("you")} · ${status}`, answer: "🤖 Claude", notice: "ℹ️", verdict: "🔐", file: `📎 ${t("a file from Claude")}` }[e.kind] || e.kind;
  const when = new Date(e.at * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return h("li", { class: `entry ${e.kind}` }, h("div", { class: "who" }, `${who} · ${when}`),
    e.kind === "answer" ? markdown(e.text) : e.kind === "file" ? sentFiles(e) : h("div", { class: "text" }, e.text));
}

// What Claude sent (SendUserFile): a download of each checked copy, and why one was not kept.
function sentFiles(e) {
  return h("div", { class: "files" },
    e.caption ? h("div", { class: "text" }, e.caption) : null,
    (e.sent || []).map((f) => h("div", {}, h("a", { href: `/api/files/${encodeURIComponent(f.id)}`, download: f.name }, `📎 ${f.name}`))),
    (e.refused || []).map((r) => h("div", { class: "bad" }, `🚫 ${r.name}: ${r.reason}`)));
}

async function conversation(label) {
  const sessions = await get("/api/sessions");
  const found = sessions.find((s) => s.label === label || s.name === label);
  if (!found) return [h("p", {}, t("No session called {name}.", { name: label }))];
  const data = await get(`/api/sessions/${encodeURIComponent(found.name)}`);
  const draftKey = `aipager.draft.${found.name}`;
  const text = h("textarea", { name: "text", rows: 3, placeholder: t("Message {session}", { session: found.label }), "aria-label": "prompt" });
  // the draft survives a refresh, a reload and a daemon restart (kept in this browser)
  text.value = localStorage.getItem(draftKey) || "";
  text.addEventListener("input", () => {
    if (text.value) localStorage.setItem(draftKey, text.value); else localStorage.removeItem(draftKey);
  });
  const button = h("button", { type: "submit" }, t("➤ Send"));
  const send = async (e) => {
    e.preventDefault();
    if (sending.has(found.name) || !text.value.trim()) return;
    // one key per message: a second Send of it (a double click, a retry) types nothing more
    const once = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
    sending.add(found.name);
    button.disabled = true;
    try {
      const result = await act(`/api/sessions/${encodeURIComponent(found.name)}/prompt`, { text: text.value, once });
      if (result && result.ok) {
        localStorage.removeItem(draftKey);
        clear("form.prompt textarea");
      }
    } finally {
      sending.delete(found.name);
      const now = view.querySelector("form.prompt button[type=submit]");
      if (now) now.disabled = false;
    }
  };
  if (sending.has(found.name)) button.disabled = true;
  text.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send(e); });
  // files for the message: kept on the computer in your own folder; their paths join the text
  const picker = h("input", { type: "file", name: "attach", class: "attach", multiple: true, "aria-label": t("attach files") });
  picker.addEventListener("change", async () => {
    if (!picker.files.length) return;
    try {
      const result = await upload(`/api/sessions/${encodeURIComponent(found.name)}/files`, picker.files);
      say(result.message || "", result.ok !== false);
      if (result.ok) {
        const now = view.querySelector("form.prompt textarea") || text;
        now.value = `${now.value.trimEnd()}${now.value.trim() ? " " : ""}${result.paths.join(" ")}`;
        localStorage.setItem(draftKey, now.value);
      }
    } catch (err) {
      say(err.message, false);
    }
    picker.value = "";
  });
  const attach = h("button", { type: "button", class: "attach-button", title: t("attach files"), onclick: () => picker.click() }, "📎");
  const form = h("form", { class: "prompt", onsubmit: send }, attach, picker, text, button);
  const needs = (data.needs || []).map((r) => {
    const node = need(r);
    // the request a chat message opened the page at
    if (r.key === door.request) node.classList.add("opened");
    return node;
  });
  return [
    h("p", {}, h("a", { href: "#/" }, t("← all sessions"))),
    sessionCard(data.session, { open: false }),
    needs.length ? h("section", { id: "needs" }, h("h2", {}, t("Needs you")), needs) : null,
    h("section", { id: "conversation" }, h("h2", {}, t("Conversation")),
      data.conversation.length ? h("ol", { class: "talk" }, data.conversation.map(entry))
        : h("p", { class: "muted" }, t("Nothing said here since the daemon started."))),
    me.may.prompt && data.session.live ? form : null,
  ];
}

// What the session changed in its folder (git diff), as far as this person may read: read
// when the view opens or on ↻, not on every live event (each read runs git).
async function changes(label) {
  const sessions = await get("/api/sessions");
  const found = sessions.find((s) => s.label === label || s.name === label);
  if (!found) return [h("p", {}, t("No session called {name}.", { name: label }))];
  const data = await get(`/api/sessions/${encodeURIComponent(found.name)}/changes`);
  return [
    h("p", {}, h("a", { href: `#/s/${encodeURIComponent(found.label)}` }, t("← {session}", { session: found.label }))),
    h("section", { id: "changes" }, h("h2", {}, t("Changes")),
      data.message.split("\n").map((line) => h("p", { class: data.ok ? "head" : "bad" }, line)),
      data.ok && data.diff ? diffLines(data.diff.replace(/\n$/, "")) : null,
      h("div", { class: "buttons" }, h("button", { type: "button", onclick: () => render() }, t("↻ Read again")))),
  ];
}

async function auditLog() {
  const records = await get("/api/audit?limit=200");
  const rows = records.map((r) => {
    const { ts, action, who, session, ...rest } = r;
    const details = Object.entries(rest).filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => `${k}=${typeof v === "object" ? JSON.stringify(v) : v}`).join(" ");
    return h("tr", {}, h("td", {}, ts || ""), h("td", {}, action || ""), h("td", {}, who || ""),
      h("td", {}, (session || "").replace(/^claude-/, "")), h("td", { class: "details" }, details));
  });
  return [h("section", { id: "audit" }, h("h2", {}, t("Audit log")),
    rows.length ? h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, [t("time"), t("action"), t("who"), t("session"), t("details")].map((w) => h("th", {}, w)))),
      h("tbody", {}, rows))) : h("p", { class: "muted" }, t("Nothing recorded yet.")))];
}

// -- routing and refreshing ------------------------------------------------------------

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  if (hash.startsWith("s/") && hash.endsWith("/changes")) {
    const view = () => changes(decodeURIComponent(hash.slice(2, -"/changes".length)));
    view.still = true;  // live events do not read it again
    return view;
  }
  if (hash.startsWith("s/")) return () => conversation(decodeURIComponent(hash.slice(2)));
  if (hash === "audit") return auditLog;
  return home;
}

// What the person has typed or ticked survives a refresh (the live stream refreshes often).
function fieldKey(el) {
  const owner = el.closest("[data-key], [data-session], form");
  const scope = owner ? owner.dataset.key || owner.dataset.session || owner.className : "";
  const which = el.type === "radio" || el.type === "checkbox" ? `=${el.value}` : "";
  return `${scope}|${el.name}${which}`;
}

function keepFields() {
  const kept = new Map();
  const focused = document.activeElement;
  if (focused && view.contains(focused) && !focused.matches("input, textarea")) {
    // a button, a link or a menu: the same one has the focus after the refresh
    kept.set("focus", focusKey(focused));
  }
  for (const el of view.querySelectorAll("input, textarea, select")) {
    if (el.type === "file") continue;  // a file picker's value cannot be put back
    kept.set(fieldKey(el), { value: el.value, checked: el.checked, focused: el === document.activeElement,
      start: el.selectionStart, end: el.selectionEnd });
  }
  return kept;
}

function focusKey(el) {
  const owner = el.closest("[data-key], [data-session], form");
  const scope = owner ? owner.dataset.key || owner.dataset.session || owner.className : "";
  return `${scope}|${el.tagName}|${el.dataset.act || el.getAttribute("href") || el.name || el.textContent}`;
}

function putFields(kept) {
  const focus = kept.get("focus");
  if (focus) {
    const again = [...view.querySelectorAll("button, a, select")].find((el) => focusKey(el) === focus);
    if (again) again.focus();
  }
  for (const el of view.querySelectorAll("input, textarea, select")) {
    if (el.type === "file") continue;
    const was = kept.get(fieldKey(el));
    if (!was) continue;
    if (el.type === "radio" || el.type === "checkbox") el.checked = was.checked;
    else if (el.value !== was.value) {
      el.value = was.value;
      // what hangs on a choice (the folders' trust note on the agent's) follows it again
      if (el.tagName === "SELECT") el.dispatchEvent(new Event("change"));
    }
    if (was.focused) {
      el.focus();
      if (was.start !== null && el.setSelectionRange) el.setSelectionRange(was.start, was.end);
    }
  }
}

function same(shown, nodes) {
  return shown.length === nodes.length && nodes.every((node, i) => node.isEqualNode(shown[i]));
}

let rendering = null;
let again = false;

async function render() {
  if (rendering) { again = true; return rendering; }
  rendering = (async () => {
    do {
      again = false;
      try {
        const nodes = (await route()()).filter(Boolean);  // a null would show as "null"
        // Nothing changed (a live event about something this view does not show): keep
        // the nodes, so a tap landing while the view refreshes still hits what it aimed at.
        if (same(view.children, nodes)) continue;
        const kept = keepFields();
        view.replaceChildren(...nodes);
        putFields(kept);
      } catch (err) {
        if (err instanceof ApiError && err.status === 401 && inTelegram) {
          view.replaceChildren(h("p", {}, t("Telegram's sign-in for this page has run out. Close aipager and open it again from the bot.")));
        } else if (err instanceof ApiError && err.status === 401) {
          view.replaceChildren(h("p", {}, withCode(t("Not signed in. Open the link `aipager start` printed on this computer, or open aipager from its Telegram bot."))));
        } else {
          view.replaceChildren(h("p", { class: "bad" }, t("Could not load: {error}", { error: err.message })));
        }
      }
    } while (again);
  })();
  await rendering;
  rendering = null;
}

let timer = null;
function refresh() {
  if (route().still) return;
  clearTimeout(timer);
  timer = setTimeout(render, 120);
}

// Where Telegram's back button leads from the view shown: a session's changes → the session,
// anything else → the first view.
function parentView() {
  const hash = location.hash.replace(/^#\/?/, "");
  return hash.endsWith("/changes") ? `#/${hash.slice(0, -"/changes".length)}` : "#/";
}

// The page's language: Auto (Telegram's or the browser's) or one chosen here.
function languageMenu() {
  const menu = document.getElementById("lang");
  const { languages, chosen } = offered();
  if (!languages.length) return;
  menu.replaceChildren(h("option", { value: "" }, t("🌐 Auto")),
    ...languages.map((l) => h("option", { value: l.code }, l.name)));
  menu.value = chosen;
  menu.setAttribute("aria-label", t("language"));
  menu.hidden = false;
  menu.onchange = async () => {
    choose(menu.value);
    await loadStrings();
    languageMenu();
    render();
  };
}

// The keyboard beyond Ctrl+Enter: "/" goes to the message box (or the new session's name),
// Escape leaves a box and clears the last word shown; Tab and Enter reach every button.
function keys(e) {
  const typing = e.target.matches && e.target.matches("input, textarea, select");
  if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
    const box = view.querySelector("form.prompt textarea, form.new input[name=name]");
    if (box) { e.preventDefault(); box.focus(); }
  } else if (e.key === "Escape") {
    if (typing) e.target.blur();
    say("");
  }
}

async function start() {
  document.addEventListener("keydown", keys);
  if (paint() || inTelegram) {
    const showBack = backButton(() => !location.hash.replace(/^#\/?/, ""), () => { location.hash = parentView(); });
    showBack();
    window.addEventListener("hashchange", showBack);
  }
  await loadStrings();
  languageMenu();
  if (door.session) history.replaceState(null, "", `${location.pathname}#/s/${encodeURIComponent(door.session)}`);
  try {
    me = await get("/api/me");
    document.getElementById("me").textContent = `${me.label} · ${me.role}`;
    // private mode: the chat carries names and buttons only, the content is read here
    document.getElementById("private").hidden = !me.private;
    document.getElementById("nav-audit").hidden = !me.may.manage;
  } catch (err) {
    me = { may: {} };
  }
  await render();
  const dot = document.getElementById("live");
  listen(() => refresh(), (on) => { dot.className = on ? "dot on" : "dot"; });
  window.addEventListener("hashchange", () => { say(""); render(); });
}

start();
