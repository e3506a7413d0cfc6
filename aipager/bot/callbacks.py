"""Button payloads: aiogram ``CallbackData`` factories with their actions as ``StrEnum``s.

Buttons never carry a session name or a request key (either can pass 64 bytes
and both are the daemon's business): they carry a short handle from
``ChatState.handle`` that the tap resolves again.  A handle the state no longer
knows (an old button, forged data) resolves to nothing and the tap gets a toast.

Each action is its own handler (``routers/sessions.py`` and its siblings:
``SessionTap.filter(F.act == SessionAct.STOP)``).  An act no enum has (forged data, a
button of another version) fails to unpack, so no tap filter takes it and the catch-all
says it expired.  aiogram
packs an enum member as its value, so buttons already in the chat keep working, and
``pack`` refuses anything over Telegram's 64 bytes.
"""

from __future__ import annotations

from enum import StrEnum

from aiogram.filters.callback_data import CallbackData


class SessionAct(StrEnum):
    """What a session's button does."""

    #: interrupt the running task (Escape)
    STOP = "stop"
    #: make the session the chat's current one
    USE = "use"
    #: ask whether to end the session
    KILL = "kill"
    #: yes, end it
    KILL_YES = "kill_yes"
    #: no, keep it running
    KILL_NO = "kill_no"
    #: type /compact
    COMPACT = "compact"
    #: show what the session changed in its folder (/diff's picker)
    DIFF = "diff"
    #: start an ended session again with its conversation
    RESUME = "resume"
    #: Claude Code's folder trust dialog: trust the folder
    TRUST = "trust"
    #: the same dialog's "No, exit": end the session
    TRUST_NO = "trust_no"


class SessionTap(CallbackData, prefix="s"):
    """A button about a session."""

    h: int
    act: SessionAct


class NewTap(CallbackData, prefix="n"):
    """/new's folder offer: start the session offer ``h`` names in its folder ``i``."""

    h: int
    i: int


class PickTap(CallbackData, prefix="p"):
    """A picker's button: message number ``n`` (kept in memory) goes to session ``h``."""

    h: int
    n: int


class RequestAct(StrEnum):
    """A permission request's answer."""

    #: allow this once
    ALLOW = "allow"
    #: allow, and remember every suggestion Claude Code made (rules, folders)
    ALWAYS = "always"
    #: deny
    DENY = "deny"
    #: deny and stop the task
    STOP = "stop"
    #: allow as corrected: the tapper's next message is the corrected command or path
    EDIT = "edit"
    #: allow, and remember only suggestion 0 (1, 2) as its button names it
    SCOPE_0 = "s0"
    SCOPE_1 = "s1"
    SCOPE_2 = "s2"


#: the scoped answers, in the order of Claude Code's suggestions (as many as the daemon
#: offers: ``daemon.render.SCOPES_SHOWN``)
SCOPES = (RequestAct.SCOPE_0, RequestAct.SCOPE_1, RequestAct.SCOPE_2)


class RequestTap(CallbackData, prefix="r"):
    """A permission request's button."""

    h: int
    act: RequestAct


class QuestionAct(StrEnum):
    """What a question's button does."""

    #: pick option ``i`` (a single-choice question)
    PICK = "p"
    #: toggle option ``i`` (a multiple-choice question)
    TOGGLE = "t"
    #: submit the toggled options
    SUBMIT = "s"
    #: answer in words: the next message is the answer
    OTHER = "o"
    #: decline the whole dialog
    DECLINE = "x"


class QuestionTap(CallbackData, prefix="q"):
    """A question's button (``i``: the option, for PICK and TOGGLE)."""

    h: int
    act: QuestionAct
    i: int = 0


class FormAct(StrEnum):
    """What a form's button does (an MCP server's elicitation, filled in step by step)."""

    #: the field shown now takes option ``i`` (a choice; yes is 1 and no 0)
    PICK = "p"
    #: the field shown now stays empty (optional: the server's default applies)
    SKIP = "k"
    #: the field shown now is typed: the tapper's next message is its value
    TYPE = "t"
    #: send the values
    SEND = "s"
    #: fill it in again from the first field
    RESTART = "r"
    #: decline the form
    DECLINE = "x"
    #: cancel it
    CANCEL = "c"


class FormTap(CallbackData, prefix="f"):
    """A form's button (``i``: the option, for PICK)."""

    h: int
    act: FormAct
    i: int = 0


class Setting(StrEnum):
    """A /settings button's setting."""

    #: the reply style asked of Claude
    STYLE = "style"
    #: diff previews on or off
    DIFFS = "diffs"
    #: card detail: full or compact
    DETAIL = "detail"
    #: quiet while at the computer: on or off
    QUIET = "quiet"
    #: a voice note's transcript sent at once (on) or shown with ✅ / ✏️ / ❌ first (off)
    VOICE_NOW = "voice_now"
    #: a person's own language (``aipager.locales``; "auto": their Telegram app's)
    LANGUAGE = "language"
    #: the permission mode /new starts sessions in (``port.commands.Mode``; "claude": its own)
    MODE = "mode"
    #: the coding agent /new starts (``aipager.agents``: "claude", "codex")
    AGENT = "agent"


#: a /settings button's value that opens its setting's choices instead of setting one
MENU = "menu"
#: a choice list's value that goes back to the settings without changing any
BACK = "back"


class ModelChoice(StrEnum):
    """The models /model offers as buttons (Claude Code's own aliases)."""

    OPUS = "opus"
    SONNET = "sonnet"
    HAIKU = "haiku"


class ModelTap(CallbackData, prefix="m"):
    """A /model button: switch session ``h`` to ``model``."""

    h: int
    model: ModelChoice


class SettingTap(CallbackData, prefix="set"):
    """A /settings button: ``name`` the setting, ``value`` the new value (``MENU``: show its
    choices; ``BACK``: the settings again, unchanged)."""

    name: Setting
    value: str


class VoiceAct(StrEnum):
    """What a "🎙 heard: …" message's button does (``aipager.bot.voice``)."""

    #: send the transcript as the speaker's prompt
    SEND = "send"
    #: the speaker's next message replaces the transcript and is sent
    EDIT = "edit"
    #: send nothing
    CANCEL = "cancel"


class VoiceTap(CallbackData, prefix="v"):
    """A transcribed voice note's button: ``h`` the handle of the note (``ChatState.handle``)."""

    h: int
    act: VoiceAct
