"""A command's result in words: the one sentence every surface shows for it.

The service decides (``aipager.daemon.service``); the chat's toasts and replies, the
page's flash line and a hub's relayed answers all say what this module says, in the
person's language (``tr``: the surface's translator; English without one), so the
surfaces cannot drift apart.
"""

from __future__ import annotations

import os
from typing import Callable, Literal, Mapping

from aipager.agents import Agent
from aipager.locales import N_
from aipager.port.results import (Already, AuditRecords, ByHook, ByKeys, Changes, Compacting, Declined, Ended,
                                  Failed, FileNotKept, FilesKept, Gone, Held, InTerminal, KeysFailed, Refused, Result,
                                  Invitation, Joined, Resumed, RoleGiven, Started, Stopping, Switching, Trusted,
                                  Typed)
from aipager.port.commands import Mode
from aipager.port.rights import Reason
from aipager.proto.errors import AipagerError

Tr = Callable[[str], str]

#: why nothing was done; ``{subject}`` is the session's label, the folder or the name
REASONS: dict[Reason, str] = {
    Reason.POLICY_UNUSABLE: N_("aipager's safety policy cannot be read right now, so members "
                               "may do nothing here until the owner fixes it."),
    Reason.MAY_NOT_PROMPT: N_("Your role may not send messages to Claude here."),
    Reason.ADMIN_ONLY: N_("Only an admin may do that here."),
    Reason.MAY_NOT_ANSWER: N_("Your role may not answer Claude's requests."),
    Reason.AUTHOR_STOPS: N_("Only the task's author or an admin may do that."),
    Reason.AUTHOR_ANSWERS: N_("Only the task's author or an admin may answer this."),
    Reason.EMPTY: N_("An empty message: nothing to send."),
    Reason.NOT_RUNNING: N_("{session} is not running."),
    Reason.NOT_WORKING: N_("{session} is not working on anything."),
    Reason.TRUST_FIRST: N_("{session} waits for you to trust its folder first."),
    Reason.NO_TRUST_DIALOG: N_("{session} does not ask about its folder."),
    Reason.NO_FOLDER: N_("There is no folder {folder} on this computer."),
    Reason.RESERVED_NAME: N_("{name} is the name of a command; pick another name"),
    Reason.ALREADY_RUNNING: N_("{name} is already running."),
    Reason.NOT_OPEN: N_("This request is no longer open."),
    Reason.NO_MODE: N_("There is no permission mode {name}."),
    Reason.NO_AGENT: N_("There is no coding agent {name} here."),
    Reason.FOLDER_UNKNOWN: N_("aipager does not know {session}'s folder yet."),
    Reason.NO_MODEL: N_("Which model? For example: /model opus, /model sonnet."),
    Reason.NOT_ENDED: N_("{session} has no ended conversation to resume."),
    Reason.OWNER_ASSIGNS: N_("Only the owner hands out or changes owner and admin roles."),
    Reason.NOT_INVITED: N_("That invitation code is not valid (used, expired or mistyped)."),
    Reason.MEMBER_ALREADY: N_("You are a member already; the code stays valid."),
    Reason.NO_FILE: N_("No file came with it."),
}

#: the permission modes a session may start in, as the chat and the page offer them
MODE_NAMES: dict[Mode, str] = {
    Mode.CLAUDE: N_("🤖 Auto: ordinary commands run, risky ones ask (Claude Code's own)"),
    Mode.ASK: N_("✋ Ask: every edit and command waits for a yes"),
    Mode.EDITS: N_("📝 Edits go through, commands ask"),
    Mode.PLAN: N_("🗺 Plan: Claude reads and plans, changes nothing"),
}



def agent_label(agent: Agent, env: Mapping[str, str], tr: Tr) -> str:
    """An agent as /settings and the page's start form name it: its title, and whether this
    computer has its program."""
    try:
        agent.binary(env)
    except AipagerError:
        return tr(N_("{agent} (not installed on the computer)")).format(agent=agent.title)
    return agent.title


_FAILED = {
    "deliver": N_("🤷 Not delivered to {session}: {reason}"),
    "start": N_("Cannot start the session: {error}"),
    "stop": N_("Cannot stop {session}: {error}"),
    "end": N_("Cannot end {session}: {error}"),
    "answer": N_("Could not answer: {reason}"),
    "diff": N_("Cannot read the changes of {session}: {error}"),
    "compact": N_("Cannot compact {session}: {error}"),
    "model": N_("Cannot switch {session}: {error}"),
    "resume": N_("Cannot resume {session}: {error}"),
    "role": N_("🔒 {error}"),
    "join": N_("Could not add you: {error}"),
}


def _label(session: str) -> str:
    return session.removeprefix("claude-")


def reason(declined: Declined, tr: Tr = N_) -> str:
    subject = declined.subject
    return tr(REASONS[declined.reason]).format(session=_label(subject), folder=subject,
                                               name=subject)


def words(result: Result, tr: Tr = N_, done: str = "", *,
          about: Literal["request", "question", "form"] = "request") -> str:
    """What ``result`` says to the person who asked; ``done``: the words of an answer that
    went through (the surface's "Allowed", "Answered"…); ``about``: what was answered (a
    permission request, Claude's question, an MCP server's form), named alike on every
    surface."""
    question, form = about == "question", about == "form"
    match result:
        case ByHook() | ByKeys():
            return done
        case Already() if question:
            return tr(N_("That question was already answered."))
        case Already() if form:
            return tr(N_("That form was already answered."))
        case Already():
            return tr(N_("Already answered."))
        case Gone() if question:
            return tr(N_("This question is no longer open."))
        case Gone() if form:
            return tr(N_("This form is no longer open."))
        case Gone():
            return tr(N_("This request is no longer open."))
        case InTerminal():
            return tr(N_("This one waits in the terminal now: answer it there."))
        case KeysFailed(reason=why) | Refused(reason=why):
            return tr(N_("Could not answer: {reason}")).format(reason=why)
        case Declined():
            return reason(result, tr)
        case Typed(session=session):
            return tr(N_("👀 Typed into {session}.")).format(session=_label(session))
        case Held(session=session, until="task", author=author):
            return tr(N_("⏳ queued after {author}'s task in {session}")).format(
                author=tr(author), session=_label(session))
        case Held(session=session, until="start"):
            return tr(N_("⏳ Held for {session}: it has not shown its input line yet; this "
                         "goes in when it does.")).format(session=_label(session))
        case Held(session=session):
            return tr(N_("⏳ Held for {session}: Claude is waiting for an answer above; "
                         "this goes in when that is settled.")).format(session=_label(session))
        case Failed(error=error, session=session, doing=doing, cause=cause):
            if cause == "not_running":
                error = tr(N_("the session is not running"))
            elif cause == "other":
                error = tr(N_("could not type it ({error})")).format(error=error)
            return tr(_FAILED[doing]).format(session=_label(session), reason=error, error=error)
        case Started(name=name, folder=folder):
            return tr(N_("🆕 {name} started in {folder}.")).format(name=_label(name), folder=folder)
        case Stopping(session=session, pressed=True):
            return tr(N_("⏹ Stop sent to {session}.")).format(session=_label(session))
        case Stopping():
            return tr(N_("Stop sent already."))
        case Ended(session=session, ended=True):
            return tr(N_("🗑 {session} ended.")).format(session=_label(session))
        case Ended(session=session):
            return tr(N_("{session} was not running.")).format(session=_label(session))
        case Changes():
            return changes_head(result, tr)
        case Compacting(session=session):
            return tr(N_("📦 /compact sent to {session}.")).format(session=_label(session))
        case Switching(session=session, model=model):
            return tr(N_("🧠 {session}: switching to {model}.")).format(session=_label(session),
                                                                       model=model)
        case Resumed(session=session, folder=folder):
            return tr(N_("↩️ {session} resumed in {folder}.")).format(session=_label(session),
                                                                     folder=folder)
        case RoleGiven(label=label, role="none"):
            return tr(N_("{label} is not a member now.")).format(label=label)
        case RoleGiven(label=label, role=role):
            return tr(N_("{label} is now {role}.")).format(label=label, role=role)
        case AuditRecords(records=records):
            return tr(N_("{count} audit records.")).format(count=len(records))
        case Invitation(role=role, code=code):
            return tr(N_("Invitation for one person as {role}, valid for a day: they "
                         "send /join {code} here.")).format(role=role, code=code)
        case Joined(label=label, role=role):
            return tr(N_("Welcome, {label}: you joined as {role}.")).format(label=label,
                                                                            role=role)
        case FilesKept(paths=kept):
            return tr(N_("📎 Kept for your message: {names}")).format(
                names=", ".join(os.path.basename(p) for p in kept))
        case FileNotKept(name=name, reason=why):
            return tr(N_("📎 {name} was not saved: {reason}")).format(name=name, reason=why)
        case Trusted(session=session, folder=folder):
            return tr(N_("📁 {session} may use {folder}.")).format(session=_label(session),
                                                                 folder=folder)
    return tr(N_("Nothing was done."))


def changes_head(result: Changes, tr: Tr = N_) -> str:
    """What ``/diff`` says above the diff itself: how much changed, what is not shown."""
    session = _label(result.session)
    if not result.repo:
        return tr(N_("📝 {session}'s folder is not in a git repository: there is nothing to "
                     "compare its files with.")).format(session=session)
    if not result.files:
        head = tr(N_("📝 {session}: nothing changed since the last commit.")).format(
            session=session)
    else:
        head = tr(N_("📝 {session}: changed since the last commit (files: {count})")).format(
            session=session, count=len(result.files))
    lines = [head]
    if result.hidden:
        lines.append(tr(N_("Not shown, as your role may not read them (files: {count})")).format(
            count=result.hidden))
    if result.cut:
        lines.append(tr(N_("The diff is long: only its beginning is here.")))
    return "\n".join(lines)


def ok(result: Result) -> bool:
    """Whether the person's wish was done (or is on its way)."""
    match result:
        case (ByHook() | ByKeys() | Typed() | Held() | Started() | Stopping() | Trusted()
              | Changes() | Compacting() | Switching() | Resumed() | RoleGiven() | Invitation()
              | Joined() | FilesKept() | AuditRecords()):
            return True
        case Ended(ended=ended):
            return ended
    return False


__all__ = ["MODE_NAMES", "REASONS", "agent_label", "changes_head", "ok", "reason", "words"]
