// Inside Telegram the page looks and behaves like Telegram, without Telegram's script: its
// theme's colours (passed in the launch address: api.js) and its back button, driven by the
// Mini App events Telegram's own script would send (postEvent / receiveEvent).

import { telegramTheme } from "./api.js";

// Telegram's theme keys → the page's colour variables (style.css)
const COLOURS = {
  bg_color: "--bg", text_color: "--fg", hint_color: "--muted", secondary_bg_color: "--card",
  link_color: "--accent", section_separator_color: "--line", destructive_text_color: "--bad",
};
const HEX = /^#[0-9a-fA-F]{6}$/;

export function paint() {
  const theme = telegramTheme();
  if (!theme) return false;
  const root = document.documentElement.style;
  for (const [key, variable] of Object.entries(COLOURS)) {
    if (HEX.test(theme[key] || "")) root.setProperty(variable, theme[key]);
  }
  if (HEX.test(theme.bg_color || "")) {
    // light or dark as the theme is, for the browser's own controls
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(theme.bg_color.slice(i, i + 2), 16));
    root.setProperty("color-scheme", r * 0.299 + g * 0.587 + b * 0.114 < 128 ? "dark" : "light");
  }
  return true;
}

// What Telegram's script does to talk to the app around the page.
function postEvent(type, data = {}) {
  const body = JSON.stringify(data);
  if (window.TelegramWebviewProxy) window.TelegramWebviewProxy.postEvent(type, body);
  else if (window.parent !== window) window.parent.postMessage(JSON.stringify({ eventType: type, eventData: data }), "*");
}

// Telegram's back button: shown away from the first view, and it goes back.
export function backButton(atHome, goBack) {
  const handlers = { back_button_pressed: goBack };
  // mobile apps call window.Telegram.WebView.receiveEvent; the web app posts a message
  window.Telegram = window.Telegram || {};
  window.Telegram.WebView = window.Telegram.WebView || {};
  window.Telegram.WebView.receiveEvent = (type) => { if (handlers[type]) handlers[type](); };
  window.addEventListener("message", (e) => {
    if (e.source !== window.parent || typeof e.data !== "string") return;
    try {
      const { eventType } = JSON.parse(e.data);
      if (handlers[eventType]) handlers[eventType]();
    } catch (err) {
      // not one of Telegram's events
    }
  });
  return () => postEvent("web_app_setup_back_button", { is_visible: !atHome() });
}
