// A small Markdown renderer that builds DOM nodes (never HTML from text): fenced code,
// headings, ordered and nested lists, tables, quotes, paragraphs; inline code, bold,
// italics, strikethrough and http(s) links.

import { h } from "./dom.js";

const INLINE = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|(\[[^\]]+\]\([^)\s]+\))|(~~[^~]+~~)/;
const ITEM = /^(\s*)(?:[-*+]|(\d+)[.)])\s+/;
const ROW = /^\s*\|.*\|\s*$/;
const RULE = /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/;

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
    else if (m[5]) out.push(h("del", {}, ...inline(tok.slice(2, -2))));
    else {
      const [, label, url] = /^\[([^\]]+)\]\(([^)\s]+)\)$/.exec(tok);
      out.push(/^https?:\/\//i.test(url)
        ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, label) : tok);
    }
    rest = rest.slice(m.index + tok.length);
  }
  return out;
}

// A table row's cells ("| a | b |" → ["a", "b"]).
function cells(line) {
  return line.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim());
}

// The list starting at lines[i], with the lists indented under its items inside them;
// returns it and the line after it.
function items(lines, i) {
  const first = ITEM.exec(lines[i]);
  const depth = first[1].length;
  const list = h(first[2] ? "ol" : "ul");
  if (first[2] && first[2] !== "1") list.setAttribute("start", first[2]);
  let li = null;
  while (i < lines.length) {
    const m = ITEM.exec(lines[i]);
    if (m && m[1].length > depth && li) {
      const [inner, next] = items(lines, i);
      li.append(inner);
      i = next;
      continue;
    }
    if (!m || m[1].length < depth) break;
    li = h("li", {}, ...inline(lines[i].replace(ITEM, "")));
    list.append(li);
    i++;
  }
  return [list, i];
}

export function markdown(text) {
  const root = h("div", { class: "md" });
  const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
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
    if (ITEM.test(line)) {
      const [list, next] = items(lines, i);
      root.append(list);
      i = next;
      continue;
    }
    if (ROW.test(line) && i + 1 < lines.length && RULE.test(lines[i + 1])) {
      const rows = [];
      rows.push(cells(line));
      i += 2;
      while (i < lines.length && ROW.test(lines[i])) rows.push(cells(lines[i++]));
      root.append(h("div", { class: "scroll" }, h("table", {},
        h("thead", {}, h("tr", {}, rows[0].map((c) => h("th", {}, ...inline(c))))),
        h("tbody", {}, rows.slice(1).map((r) => h("tr", {}, r.map((c) => h("td", {}, ...inline(c)))))))));
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
    while (i < lines.length && lines[i].trim() && !/^\s*(```|#{1,6}\s|[-*+]\s|\d+[.)]\s|>)/.test(lines[i]) && !ROW.test(lines[i])) {
      para.push(lines[i++]);
    }
    if (!para.length) para.push(lines[i++]);
    root.append(h("p", {}, ...inline(para.join("\n"))));
  }
  return root;
}
