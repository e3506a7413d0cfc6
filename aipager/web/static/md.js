// A small Markdown renderer that builds DOM nodes (never HTML from text): fenced code,
// headings, lists, quotes, paragraphs; inline code, bold, italics and http(s) links.

import { h } from "./dom.js";

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))/;

function inline(text) {
  const out = [];
  let rest = text;
  while (rest) {
    const m = INLINE.exec(rest);
    if (!m) { out.push(rest); break; }
    if (m.index) out.push(rest.slice(0, m.index));
    const tok = m[0];
    if (m[1]) out.push(h("code", {}, tok.slice(1, -1)));
    else if (m[2]) out.push(h("strong", {}, ...inline(tok.slice(2, -2))));
    else if (m[3]) out.push(h("em", {}, ...inline(tok.slice(1, -1))));
    else {
      const [, label, url] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(tok);
      out.push(/^https?:\/\//i.test(url)
        ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, label) : tok);
    }
    rest = rest.slice(m.index + tok.length);
  }
  return out;
}

export function markdown(text) {
  const root = h("div", { class: "md" });
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*```(.*)$/.exec(line);
    if (fence) {
      const body = [];
      i++;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) body.push(lines[i++]);
      i++;
      root.append(h("pre", {}, h("code", {}, body.join("\n"))));
      continue;
    }
    const head = /^(#{1,6})\s+(.*)$/.exec(line);
    if (head) {
      root.append(h(`h${Math.min(6, head[1].length + 2)}`, {}, ...inline(head[2])));
      i++;
      continue;
    }
    const item = /^\s*(?:[-*+]|(\d+)[.)])\s+/;
    if (item.test(line)) {
      const ordered = Boolean(item.exec(line)[1]);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length && item.test(lines[i])) {
        list.append(h("li", {}, ...inline(lines[i].replace(item, ""))));
        i++;
      }
      root.append(list);
      continue;
    }
    if (/^\s*>/.test(line)) {
      const quote = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) quote.push(lines[i++].replace(/^\s*>\s?/, ""));
      root.append(h("blockquote", {}, ...inline(quote.join(" "))));
      continue;
    }
    if (!line.trim()) { i++; continue; }
    const para = [];
    while (i < lines.length && lines[i].trim() && !/^\s*(```|#{1,6}\s|[-*+]\s|\d+[.)]\s|>)/.test(lines[i])) {
      para.push(lines[i++]);
    }
    if (!para.length) para.push(lines[i++]);
    root.append(h("p", {}, ...inline(para.join("\n"))));
  }
  return root;
}
