// h("div", {class: "x", onclick: fn}, "text", child…): an element; text stays text.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

// A sentence whose `commands` are written between backticks (the catalogs' way): text, with
// each command as <code> (built as elements: no markup is ever parsed from the words).
export function withCode(sentence) {
  return String(sentence).split("`").map((part, i) => (i % 2 ? h("code", {}, part) : part));
}
