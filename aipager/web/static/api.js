// How the page talks to the daemon: the JSON API and the live stream.
//
// In Telegram the page is a Mini App: Telegram opens it with its signed initData in the
// address's fragment (#tgWebAppData=…); every request then carries it as
// "Authorization: tma <initData>".  In a browser on the machine the session cookie
// (set by the link `aipager start` printed) does instead.

import { language } from "./strings.js";

const KEY = "aipager.tma";
const THEME = "aipager.tma.theme";

// Telegram's launch parameters ride in the fragment: initData, and the theme of the app that
// opened the page (tg.js paints with it).  Both are kept for this tab and the fragment tidied.
function takeInitData() {
  const hash = location.hash.startsWith("#") ? location.hash.slice(1) : "";
  const params = new URLSearchParams(hash);
  const found = params.get("tgWebAppData");
  const theme = params.get("tgWebAppThemeParams");
  if (found) sessionStorage.setItem(KEY, found);
  if (theme) sessionStorage.setItem(THEME, theme);
  if (found || theme) history.replaceState(null, "", location.pathname + "#/");
  return sessionStorage.getItem(KEY);
}

// Telegram's theme colours ({bg_color, text_color, …}), or null outside Telegram.
export function telegramTheme() {
  try {
    const theme = JSON.parse(sessionStorage.getItem(THEME) || "null");
    return theme && typeof theme === "object" ? theme : null;
  } catch (err) {
    return null;
  }
}

// A chat message opens the page at a session or one of its requests
// (?session=…&request=…: bot/private.py's Door); read before the address is tidied.
function takeDoor() {
  const query = new URLSearchParams(location.search);
  return { session: query.get("session") || "", request: query.get("request") || "" };
}

export const door = takeDoor();
const initData = takeInitData();
// Opened inside Telegram: a refused sign-in is then initData past its age (an hour by
// default), which only opening the Mini App again renews.
export const inTelegram = Boolean(initData);

function headers(extra = {}) {
  // the server's words (an action's result, a request's buttons) in the page's language
  const all = { ...extra, "X-Aipager-Lang": language() };
  return initData ? { ...all, Authorization: `tma ${initData}` } : all;
}

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function read(response) {
  const type = response.headers.get("Content-Type") || "";
  const body = type.includes("json") ? await response.json() : { message: await response.text() };
  if (response.status === 409) return body;  // an action that did not happen: body says why
  if (!response.ok) throw new ApiError(response.status, body.error || body.message || response.statusText);
  return body;
}

export async function get(path) {
  return read(await fetch(path, { headers: headers(), cache: "no-store" }));
}

export async function post(path, body = {}) {
  return read(await fetch(path, {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body),
  }));
}

// Files for a prompt (multipart: the browser writes the boundary).
export async function upload(path, files) {
  const form = new FormData();
  for (const file of files) form.append("file", file, file.name);
  return read(await fetch(path, { method: "POST", headers: headers(), body: form }));
}

// The live stream: server-sent events read from a fetch (EventSource cannot carry the
// Mini App's Authorization header).  Reconnects on its own; onState(true|false).
export function listen(onEvent, onState) {
  let delay = 500;
  async function connect() {
    try {
      const response = await fetch("/api/events", { headers: headers(), cache: "no-store" });
      if (!response.ok) throw new ApiError(response.status, "no live stream");
      onState(true);
      delay = 500;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (data) onEvent(JSON.parse(data));
        }
      }
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) { onState(false); return; }
    }
    onState(false);
    setTimeout(connect, delay);
    delay = Math.min(delay * 2, 10000);
  }
  connect();
}
