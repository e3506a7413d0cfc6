"""A permission request as every client shows it: its words, what it would change, its answers.

The chat and the page used to build these each on their own, and drifted: the page showed
a Write over an existing file as every line ``+`` (the edit's own lines) while the chat
showed the real diff.  Both now take the view from here (pure: no I/O, no client), so a
change to what a request shows lands in both.

Words come from ``locales.tr``: the chat and the page each set the catalog they render in
(``bot.i18n.use``, the page's ``locales.rendering`` per request).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from aipager import locales
from aipager.texts import render
from aipager.port.model import Request, Session
from aipager.port.outputs import Permission
from aipager.locales import N_
from aipager.locales import tr as _

#: characters of an edit's diff shown with its request (past it: its head, and the whole
#: apart: a .diff file in the chat, a fold on the page)
DIFF_SHOWN = 2500
#: the answers a permission request offers when its output names none
DEFAULT_BUTTONS = ("allow", "deny", "stop")


@dataclass(frozen=True)
class Change:
    """What the call would change, as shown with its request."""

    #: the lines shown (a unified diff without its header, else the edit's own lines)
    shown: str = ""
    #: the whole diff when ``shown`` is only its head ("" otherwise)
    whole: str = ""
    #: lines of the diff left out of ``shown``
    more: int = 0
    #: ``shown`` is the real diff against the file on disk (not the edit's own lines)
    real: bool = False


@dataclass(frozen=True)
class Answer:
    """One way to answer: the act the daemon takes and its button's words."""

    act: str
    label: str


def change(out: Permission, limit: int = DIFF_SHOWN) -> Change:
    """The real diff when the daemon could make one, else the edit's own lines.

    A Write over an existing file has a preview of every new line as ``+``: only the diff
    shows what it removes, so the diff always wins."""
    if out.diff:
        body = diff_body(out.diff)
        if len(body) > limit:
            shown, more = head(body, limit)
            return Change(shown, out.diff, more, real=True)
        return Change(body, real=True)
    if out.preview and "\n" in out.preview:
        return Change(out.preview.split("\n", 1)[1])  # without its "📝 Write: path" line
    return Change()


def diff_body(diff: str) -> str:
    """A unified diff without its ---/+++ header (the request names the file)."""
    lines = diff.splitlines()
    while lines and lines[0].startswith(("--- ", "+++ ")):
        lines.pop(0)
    return "\n".join(lines)


def head(body: str, limit: int) -> tuple[str, int]:
    """The first whole lines of ``body`` within ``limit`` characters, and how many were left."""
    lines, size, kept = body.splitlines(), 0, []
    for line in lines:
        if size + len(line) + 1 > limit:
            break
        kept.append(line)
        size += len(line) + 1
    return "\n".join(kept), len(lines) - len(kept)


def answers(out: Permission, scope_labels: list[str], *, edit: bool = True) -> list[Answer]:
    """The request's answers in the chat's order: allow and deny, one per suggestion Claude
    Code made, always, edit (``edit``: the client can take a corrected command), stop."""
    buttons = out.buttons or list(DEFAULT_BUTTONS)
    plan = out.tool == render.PLAN_TOOL
    found = []
    if "allow" in buttons:
        found += [Answer("allow", _("✅ Approve plan") if plan else _("✅ Allow")),
                  Answer("deny", _("✍️ Keep planning") if plan else _("❌ Deny"))]
    found += [Answer(f"s{i}", label) for i, label in enumerate(scope_labels)
              if f"s{i}" in buttons]
    if "always" in buttons:
        found.append(Answer("always", _("🟢 Always allow")))
    if edit and "edit" in buttons:
        found.append(Answer("edit", _("✏️ Edit")))
    found.append(Answer("stop", _("⏹ Stop")))
    return found


def own_request(sess: Session | None, key: str) -> Request | None:
    """This machine's open request ``key`` when its texts are rendered again in a language
    other than English (a hub host's arrives slim: its texts stay as the host wrote them)."""
    if locales.english() or sess is None or "@" in sess.name:
        return None
    return next((r for r in sess.requests if r.key == key), None)


def words(out: Permission, sess: Session | None) -> str:
    """The request's text in the language rendered in, with what "Always allow" would
    remember when it is offered; Claude's description, the command and the path as they are."""
    req = own_request(sess, out.key)
    text = render.request(sess.label, req) if sess is not None and req is not None \
        else out.text
    rule = always_rule(sess, out.key) if "always" in (out.buttons or ()) else ""
    if rule:
        text += "\n" + _("🟢 Always allow remembers: {rule}").format(rule=rule)
    return text


def scope_labels(out: Permission, sess: Session | None) -> list[str]:
    """The per-suggestion answers' words in the language rendered in; the same suggestions in
    the same order, so each label keeps its act (as they came when they cannot be matched)."""
    req = own_request(sess, out.key)
    labels = render.scope_labels(req) if req is not None else []
    return labels if len(labels) == len(out.scopes) else list(out.scopes)


def always_rule(sess: Session | None, key: str) -> str:
    """The rules and folders "Always allow" remembers for request ``key`` (at most four)."""
    if sess is None:
        return ""
    req = next((r for r in sess.requests if r.key == key), None)
    if req is None:
        return ""
    return always_rule_of(req.suggestions)


def always_rule_of(suggestions: list) -> str:
    """The rules and folders ``suggestions`` would have Claude Code remember (at most four),
    as Claude Code writes them: ``Bash(npm test:*)``, ``folder /srv``."""
    rules = []
    for s in suggestions:
        if not isinstance(s, dict):
            continue
        for rule in s.get("rules") or []:
            if isinstance(rule, dict) and rule.get("toolName"):
                content = rule.get("ruleContent")
                rules.append(f"{rule['toolName']}({content})" if content else rule["toolName"])
        for folder in s.get("directories") or []:
            rules.append(f"folder {folder}")
    return ", ".join(rules[:4])


#: how long what a toast has Claude Code remember may be (Telegram shows 200 characters)
GRANTED_MAX = 70
#: for how long and where Claude Code keeps what a scoped answer had it remember, as a toast
#: says it
_KEPT = {"session": N_("For this session only"), "localSettings": N_("In this project, for you"),
         "projectSettings": N_("In this project, for everyone"),
         "userSettings": N_("In all your projects"), "cliArg": N_("For this run only")}


def granted(scope: dict[str, Any]) -> str:
    """What a scoped answer granted, as the toast after the tap says it: the call is allowed,
    and what Claude Code (2.1.328, read on the real program) does with the one suggestion
    it was handed: a folder makes reads there stop asking (a command that changes a file
    there still asks), accept-edits mode stops asking for file edits and common file
    commands in the session's folders, a rule stops asking for what it matches.  Claude
    Code's own words for where it is kept; "" when ``scope`` is none of those."""
    where = _KEPT.get(str(scope.get("destination")))
    if where is None:
        return ""
    kind = scope.get("type")
    if kind == "addDirectories":
        folders = ", ".join(str(d) for d in scope.get("directories") or [])
        if not folders:
            return ""
        return _("Allowed. {where}, reads in {folders} no longer ask; a change there still "
                 "asks.").format(where=_(where), folders=render.cut_middle(folders, GRANTED_MAX))
    if kind == "setMode" and scope.get("mode") == "acceptEdits":
        return _("Allowed. {where}, file edits and common file commands in the session's "
                 "folders no longer ask.").format(where=_(where))
    if kind == "setMode" and scope.get("mode") in render.MODES:
        return _("Allowed. {where}: {mode}.").format(where=_(where),
                                                      mode=_(render.MODES[scope["mode"]]))
    if kind == "addRules":
        rules = always_rule_of([scope])
        if not rules:
            return ""
        return _("Allowed. {where}, Claude Code no longer asks for {rules}.").format(
            where=_(where), rules=render.cut_middle(rules, GRANTED_MAX))
    return ""


def verdict(via: str, answer: str, who: str, at: float, answers: str = "",
            scope: dict[str, Any] | None = None, edited: str = "") -> str:
    """Who answered a request, how and when: the line under it once it is answered, in the
    chat (in place of its buttons) and in the page's conversation.  ``via``: ``hook`` or
    ``keys`` ("" or ``terminal``: at the computer); ``answers``: a question's answers,
    shown above; ``scope``: what a scoped "always" remembered; ``edited``: the command or
    path an edited allow ran with instead of the one shown above."""
    when = time.strftime("%H:%M", time.localtime(at))
    if via in ("", "terminal"):
        return _("⌨️ answered in the terminal")
    if answer == "allow" and edited:
        return _("✏️ Edited by {who} · {time}, and allowed with this instead:").format(
            who=who, time=when) + "\n" + edited
    if answer == "question_answer":
        return (answers + "\n" + _("✅ Answered by {who} · {time}").format(
            who=who, time=when)).strip()
    if answer == "question_decline":
        return _("⏹ Declined by {who}").format(who=who)
    if answer == "form_accept":
        return (answers + "\n" + _("✅ Sent by {who} · {time}").format(
            who=who, time=when)).strip()
    if answer == "form_decline":
        return _("❌ Declined by {who} · {time}").format(who=who, time=when)
    if answer == "form_cancel":
        return _("✖️ Cancelled by {who} · {time}").format(who=who, time=when)
    if answer == "allow_always" and isinstance(scope, dict) and scope:
        return _("{scope} · chosen by {who} · {time}").format(
            scope=render.suggestion_label(scope), who=who, time=when)
    words = {"allow": N_("✅ Allowed by {who} · {time}"),
             "allow_always": N_("🟢 Always allowed by {who} · {time}"),
             "deny": N_("❌ Denied by {who} · {time}"),
             "stop": N_("⏹ Stopped by {who} · {time}")}.get(answer,
                                                             N_("✅ Answered by {who} · {time}"))
    return _(words).format(who=who, time=when)


__all__ = ["Answer", "Change", "DEFAULT_BUTTONS", "DIFF_SHOWN", "GRANTED_MAX", "always_rule",
           "always_rule_of", "answers", "change", "diff_body", "granted", "head",
           "own_request", "scope_labels", "verdict", "words"]
