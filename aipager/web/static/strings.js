// The page's words in the person's language (GET /strings, from the chat's catalogs): in
// Telegram the Mini App user's language, else the browser's.  The msgids are the English
// words; t() falls back to them, and fills {name} placeholders.

const TMA = "aipager.tma";  // where api.js keeps Telegram's initData
const CHOSEN = "aipager.lang";  // the person's own choice in the page's menu (this browser)
let words = {};
let languages = [];

// The language the page speaks; the server says its words in it too (api.js sends it).
export function language() {
  const chosen = localStorage.getItem(CHOSEN);
  if (chosen) return chosen;
  try {
    const user = new URLSearchParams(sessionStorage.getItem(TMA) || "").get("user");
    const code = user && JSON.parse(user).language_code;
    if (code) return code;
  } catch (err) {
    // no usable initData: the browser's language
  }
  return navigator.language || "";
}

export async function loadStrings() {
  try {
    const response = await fetch(`/strings?lang=${encodeURIComponent(language())}`);
    if (!response.ok) return;
    const found = await response.json();
    words = found.strings || {};
    languages = found.languages || [];
    document.documentElement.lang = (found.locale || "en").replace("_", "-");
    for (const el of document.querySelectorAll("[data-t]")) el.textContent = t(el.dataset.t);
  } catch (err) {
    words = {};  // English
  }
}

// The languages the menu offers (each named in its own words), and the choice made there.
export function offered() {
  return { languages, chosen: localStorage.getItem(CHOSEN) || "" };
}

export function choose(code) {
  if (code) localStorage.setItem(CHOSEN, code); else localStorage.removeItem(CHOSEN);
}

export function t(msgid, vars = {}) {
  const text = words[msgid] || msgid;
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}
