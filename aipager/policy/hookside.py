"""Hook-side policy steps: the Python twin of ``_fasthook/hookside.pxi``.

CONTRACT.  The hook (both twins) runs, for every event of a session aipager
started:

    outcome = before_forward(name, event, ctx)   # may send own datagrams first
    forward the event (never for PreModelSwitch)
    outcome = after_forward(name, event, ctx)     # PreToolUse decision

``ctx`` has ``session`` (str, ``claude-<name>``), ``env`` (mapping),
``send(dict)`` (sends one datagram, never blocks) and ``raw`` (stdin bytes).
A step returns None (nothing to print) or an ``Outcome``: the hook prints
``stdout`` and exits with ``exit_code`` (the last step with an Outcome wins).
If a step raises, the hook reports ``report_error`` and, for PreToolUse,
denies (fail closed).

Steps:
- UserPromptSubmit (before): pick up the permission notes, send
  ``queue_pickup`` (before the event is forwarded), write the task snapshot
  and the open-task mark, print extra context for Claude when there is any.
- Stop (before): delete the open-task mark unless a note is outstanding
  (Claude holds a queued message that becomes the next task at once).
- SessionStart with source startup/clear (before): delete the mark.
- PreModelSwitch (before): allow only aipager's own switch (``marker``).
- PreToolUse (after): the decision; SendUserFile file checks.

Builtins only at import time: this runs inside a freshly started interpreter
that Claude Code waits on.
"""

from __future__ import annotations

import time

from aipager.policy import snapshot
from aipager.proto import fsio

# imported where needed: _match_py (PreToolUse), notes (UserPromptSubmit,
# Stop), floor and rules (only when a task gets rules) -- a declined
# PreToolUse or prompt loads only what its own step uses

SAFETY_PREFIX = "aipager safety policy: "
#: hookside.pxi POL_REASON_UNUSABLE (generated from here by setup.py)
REASON_UNUSABLE = "the tool call could not be read; denied to be safe"


class Outcome:
    __slots__ = ("stdout", "exit_code")

    def __init__(self, stdout: str = "", exit_code: int = 0) -> None:
        self.stdout = stdout
        self.exit_code = exit_code


def fail_exit(name: str | None) -> int:
    """Exit code when the hook cannot run its steps: 2 (a refusal) for PreToolUse."""
    return 2 if name == "PreToolUse" else 0


def before_forward(name: str, event: dict, ctx) -> Outcome | None:
    if name == "UserPromptSubmit":
        try:
            return prompt_submitted(event, ctx, time.time())
        except Exception:  # noqa: BLE001 - the event must still be forwarded
            # a failed pick-up must not leave the previous task's rights
            # behind: without a snapshot, PreToolUse applies the floor
            from aipager.proto import paths

            fsio.unlink_quiet(paths.policy_file(ctx.env, ctx.session))
            return None
    if name in ("Stop", "StopFailure"):
        from aipager.policy import notes

        if not notes.outstanding(ctx.env, ctx.session):
            snapshot.clear_mark(ctx.env, ctx.session)
        return None
    if name == "SessionStart":
        if event.get("source") in ("startup", "clear"):
            snapshot.clear_mark(ctx.env, ctx.session)
        return None
    if name == "PreModelSwitch":
        from aipager.policy import marker

        if marker.claim(ctx.env, ctx.session, event):
            return Outcome(marker.allow_output())
        return None
    return None


def after_forward(name: str, event: dict, ctx) -> Outcome | None:
    if name != "PreToolUse":
        return None
    return pre_tool_use(event, ctx)


# --- UserPromptSubmit -------------------------------------------------------


def _author(note) -> dict:
    doc = note.doc
    author = doc["author"]
    return {
        "user_id": author.get("user_id"),
        "label": author.get("label"),
        "role": author.get("role"),
        "msg_id": doc.get("msg_id"),
        "chat_id": doc.get("chat_id"),
    }


def task_rules(env, consumed: list, waiting: list, now: float) -> dict:
    """The snapshot for a prompt that took ``consumed`` notes while ``waiting``
    (not taken: still waiting, expired, or of another version) were left.

    Every usable waiting note is a possible author too, so its rules count:
    the task never gets more than the strictest of them (a note a crash left
    behind restricts, it never lends rights)."""
    from aipager.policy import floor, notes, rules

    if not consumed and not waiting:
        # nobody's message is waiting: the person at the terminal typed this
        return snapshot.make("terminal", False, rules.empty(), (), now)
    # with nothing taken, nobody can be named: the floor at least
    exempt = bool(consumed)
    merged = rules.empty()
    granted = []
    authors = []
    person = None
    # in the notes' name order, as the compiled twin merges them (list order matters)
    for note in sorted(consumed + [n for n in waiting if n.usable()], key=lambda n: n.name):
        note_exempt, note_rules = notes.note_rules(note)
        exempt = exempt and note_exempt
        merged = rules.stricter(merged, note_rules)
        granted.append(note_rules)
        authors.append((note.doc["author"].get("user_id"), note_exempt))
    if not exempt:
        the_floor = floor.load_floor(env)
        # a task that is one person's alone reads that person's uploads (the compiled
        # twin declines this case: pk_task_rules); with nothing taken, nobody's
        person = floor.uploads_person(authors) if consumed else None
        if person is not None:
            the_floor = floor.own_uploads(the_floor, env, person)
        merged = rules.stricter(merged, the_floor)
    # the needles the notes carry, the floor's own winning (the compiled
    # hook looks them up in the same order)
    known = snapshot.needles_of(*granted)
    known.update(floor.KNOWN_NEEDLES)
    if not exempt and person is not None:
        known.update(floor.own_uploads_needles(person))
    return snapshot.make("telegram" if consumed else "unattributed", exempt, merged,
                         [_author(n) for n in consumed], now, known)


def joined(env, current: dict, new: dict) -> dict:
    """A prompt joining an open task can only narrow its rights."""
    from aipager.policy import rules

    if current["origin"] == "terminal":
        return new
    if new["origin"] == "terminal":
        return current
    merged = rules.stricter(current, new)
    exempt = current["exempt"] and new["exempt"]
    known = snapshot.needles_of(current, new)
    if not exempt and (current["exempt"] or new["exempt"]):
        # the exempt side carried no floor of its own
        from aipager.policy import floor

        merged = rules.stricter(merged, floor.load_floor(env))
        known.update(floor.KNOWN_NEEDLES)
    origin = "telegram" if "telegram" in (current["origin"], new["origin"]) else "unattributed"
    authors = list(current.get("authors") or []) + list(new.get("authors") or [])
    return snapshot.make(origin, exempt, merged, authors, new["written_at"], known)


#: the largest sent_at shown (year 10000 starts here; time.strftime and the
#: compiled hook's strftime would spell it differently)
_MAX_STAMP = 253402300800


def _context(consumed: list) -> str:
    """Extra context for Claude: reply styles, and the quoted message for a
    reply to an earlier one.  The compiled hook (pol_context) writes the same
    text, so the format stays plain: no repr, no locale."""
    parts: list = []
    for note in consumed:
        doc = note.doc
        style = doc.get("style")
        if isinstance(style, str):
            style = style.strip()
            if style and style not in parts:
                parts.append(style)
        reply = doc.get("reply_to")
        if isinstance(reply, dict) and isinstance(reply.get("text"), str):
            when = reply.get("sent_at")
            stamp = ""
            if isinstance(when, (int, float)) and not isinstance(when, bool) and 0 <= when < _MAX_STAMP:
                stamp = " (sent " + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(when)) + ")"
            parts.append(
                'The message "' + doc["text"][:60] + '" replies to an earlier message' + stamp + ":\n"
                + reply["text"]
            )
    return "\n\n".join(parts)


def prompt_submitted(event: dict, ctx, now: float) -> Outcome | None:
    env, session = ctx.env, ctx.session
    from aipager.policy import notes

    prompt = event.get("prompt")
    if not isinstance(prompt, str):
        prompt = ""
    if prompt.lstrip().startswith(notes.TASK_NOTIFICATION):
        # the same task continues (a background agent or shell finished)
        snapshot.mark_open(env, session, now)
        return None
    consumed, expired, remaining = notes.pickup(env, session, prompt, now)
    if not consumed:
        blocked = _unmatched(prompt, remaining)
        if blocked is not None:
            return _block(ctx, session, blocked, expired)
    if consumed or expired:
        # at once: the notes are gone, so the daemon must learn which messages
        # Claude took even if writing the task's rules fails below
        ctx.send(
            {
                "hook_event_name": "queue_pickup",
                "session": session,
                "consumed": [n.summary() for n in consumed],
                "expired": [n.summary() for n in expired],
            }
        )
    new = task_rules(env, consumed, remaining + expired, now)
    if snapshot.open_task(env, session):
        try:
            current = snapshot.read(env, session)
        except snapshot.SnapshotError:
            current = None
        if current is not None:
            new = joined(env, current, new)
    snapshot.write(env, session, new)
    snapshot.mark_open(env, session, now)
    text = _context(consumed)
    if not text:
        return None
    out = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}
    return Outcome(fsio.dumps(out))


#: chatprompt.PREFIX (hookside.pxi declines a prompt that starts with it; the
#: literal is generated from here by setup.py)
ENCODED_PREFIX = "Via aipager, from "
REASON_MERGED = (
    "aipager blocked this prompt: a message from the chat was waiting to be typed and this "
    "prompt was not exactly that message (text left in the input box or typed meanwhile was "
    "joined to it). Nothing was run; its author was told. Send it again."
)
REASON_FORGED = (
    "aipager blocked this prompt: it is written as a message from the chat but no such "
    "message is waiting. Nothing was run."
)


def _unmatched(prompt: str, waiting: list) -> list | None:
    """The last line behind the encoding (``policy.chatprompt``): a prompt that took no
    note is blocked when it claims to be an encoded message, or when a member's message
    (a note that is not exempt) is waiting — its text may be inside, glued to whatever
    else was in the input box.  Returns the member notes to give up, or None: let it
    through (the person at the computer, with the strictest waiting rights as before)."""
    from aipager.policy import notes

    usable = [n for n in waiting if n.usable()]
    text = prompt.lstrip()
    if notes.PASTE_OPEN in text:
        text = notes.unwrap_pastes(text).lstrip()
    if text.startswith(ENCODED_PREFIX):
        return usable  # a message glued to more, or none at all: every waiting one goes
    members = [n for n in usable if not notes.note_rules(n)[0]]
    return members or None


def _block(ctx, session: str, given_up: list, expired: list) -> Outcome:
    """Block the prompt; the members' notes it may hold are given up (reported as
    ``prompt_blocked``, so each author is told), never left to lend or take rights."""
    forged = not given_up
    for note in given_up:
        fsio.unlink_quiet(note.path)
    ctx.send(
        {
            "hook_event_name": "prompt_blocked",  # wire.PROMPT_BLOCKED
            "session": session,
            "given_up": [n.summary() for n in given_up],
            "expired": [n.summary() for n in expired],
            "reason": "forged" if forged else "merged",
        }
    )
    out = {"decision": "block", "reason": REASON_FORGED if forged else REASON_MERGED}
    return Outcome(fsio.dumps(out))


# --- PreToolUse -------------------------------------------------------------


def deny_output(reason: str) -> str:
    """Claude Code's PreToolUse deny decision."""
    out = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    return fsio.dumps(out)


def current_rules(env, session: str, now: float) -> dict:
    """The task's snapshot, or the floor when no task was recorded.

    Raises:
        snapshot.SnapshotError: it exists but is unusable.
    """
    snap = snapshot.read(env, session)
    if snap is None:
        from aipager.policy import floor

        snap = snapshot.normalise(snapshot.for_floor(floor.load_floor(env), now, floor.KNOWN_NEEDLES))
    return snap


def _unrestricted_snapshot(env, session: str) -> bool:
    """The task's snapshot is readable and lets everything through: terminal-
    typed or owner-exempt, not halted (hookside.pxi policy_unusable)."""
    try:
        snap = snapshot.read(env, session)
    except Exception:  # noqa: BLE001 - any doubt means no exemption
        return False
    return bool(snap and (snap["exempt"] or snap["origin"] == "terminal") and not snap["halted"])


def unusable_pre_tool_use(ctx) -> Outcome | None:
    """A PreToolUse whose payload cannot be read (truncated, garbage, no
    usable name): fail closed unless the task is unrestricted.  Nothing is
    sent and the task is not halted: no rule was broken."""
    if _unrestricted_snapshot(ctx.env, ctx.session):
        return None
    return Outcome(deny_output(SAFETY_PREFIX + REASON_UNUSABLE))


def pre_tool_use(event: dict, ctx) -> Outcome | None:
    """Decide one tool call; fail closed unless the owner exemption is readable."""
    env, session = ctx.env, ctx.session
    try:
        return _decide_and_act(event, ctx, env, session)
    except Exception as exc:  # noqa: BLE001 - every failure must deny
        tool = event.get("tool_name") if isinstance(event, dict) else None
        from aipager.policy import _match_py

        if isinstance(tool, str) and _match_py.ascii_lower(tool) == "senduserfile":
            return Outcome(deny_output("aipager could not check the files to send"))
        if _unrestricted_snapshot(env, session):
            return None
        reason = SAFETY_PREFIX + f"the check failed ({type(exc).__name__}); denied to be safe"
        return Outcome(deny_output(reason))


def _decide_and_act(event: dict, ctx, env, session: str) -> Outcome | None:
    from aipager.proto import paths
    from aipager.policy import _match_py

    now = time.time()
    snap = current_rules(env, session, now)
    home = paths.home(env)
    cwd = event.get("cwd")
    if not isinstance(cwd, str):
        cwd = ""
    tool_name = event.get("tool_name")
    decision, reason = _match_py.decide(snap, tool_name, event.get("tool_input"), cwd, home)
    if decision == _match_py.DENY:
        tool = tool_name if isinstance(tool_name, str) else ""
        ctx.send(
            {"hook_event_name": "safety_blocked", "session": session, "tool": tool, "reason": reason}
        )
        if not snap["halted"]:
            snapshot.record_halt(env, session, reason, snap)
        return Outcome(deny_output(SAFETY_PREFIX + reason))
    if isinstance(tool_name, str) and _match_py.ascii_lower(tool_name) == "senduserfile":
        return _send_files(event, ctx, snap, cwd, home)
    return None


def _send_files(event: dict, ctx, snap: dict, cwd: str, home: str) -> Outcome | None:
    from aipager.policy import sendfile

    unrestricted = snap["origin"] == "terminal" or snap["exempt"]
    refused = sendfile.check(event.get("tool_input"), cwd, home, ctx.env, None if unrestricted else snap)
    if not refused:
        return None
    ctx.send(
        {
            "hook_event_name": "send_files_refused",
            "session": ctx.session,
            "tool_use_id": event.get("tool_use_id"),
            "files": refused,
        }
    )
    return Outcome(deny_output(sendfile.refusal_text(refused)))
