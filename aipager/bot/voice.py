"""Voice notes → prompts: transcribed on this computer, shown, then sent as a typed message.

A voice note (``on_voice``) gets "🎙 transcribing…" at once, as a reply; it is downloaded
from Telegram into memory (never written to disk) and transcribed in a worker thread by
faster-whisper, the optional ``voice`` extra (``bot.speech``: imported at the first voice
note, never at daemon start).  That line is edited as the work goes (the first note says the
model is being fetched, when it is; then the share done), and becomes the transcript:
"🎙 heard: …" with ✅ Send / ✏️ Edit / ❌ Cancel (``callbacks.VoiceTap``), in the speaker's
language (``hint``: chosen in /settings, else their Telegram app's) unless the model is near
certain of another (``speech.pick_language``), with a warning when much of the speech gave no
text, and one when the model heard another language much likelier than the one written
(``speech.doubted``); a note too short to hold a word, or cut short, is refused
(``speech.TooShort``, ``speech.CutShort``).  ✅ sends it as the speaker's message, through the
path a typed message takes (``flows.send_text`` → ``Actions.deliver``: the
routing, the prompt rule, holds, the permission note); ✏️ makes the speaker's next message
(aiogram's FSM, ``NextVoice.text``) replace it; ❌ drops it.  Only the speaker's taps act on
it.  Waiting transcripts live in memory with the dispatcher, as the pickers' messages do: a
restart forgets them and their buttons expire.  Without the extra a voice note gets
``VOICE_OFF``.

The model, and how it is loaded and dropped: ``bot.speech``.

A voice note steps out of its chat's order once its line is shown (``order.step_aside``):
the chat's next messages and commands go on while it is transcribed (so a message typed
meanwhile may reach the session before a note sent at once); a daemon killed meanwhile
transcribes it again at the next start (its update is handled only when its handler ends:
the update journal, ``inbox``).
"""

from __future__ import annotations

import asyncio
import io
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from aiogram.dispatcher.event.bases import SkipHandler
from aiogram.fsm.context import FSMContext
from aiogram.fsm.state import State as FSMState
from aiogram.fsm.state import StatesGroup
from aiogram.types import CallbackQuery, Message
from aiogram.utils.callback_answer import CallbackAnswer
from aiogram.utils.keyboard import InlineKeyboardBuilder

from aipager.bot import order, speech, view, voicemodels
from aipager import files
from aipager.bot.actions import Actions, Sender
from aipager.bot.callbacks import VoiceAct, VoiceTap
from aipager.bot.chatstate import msg_key
from aipager.bot.i18n import N_, _, duration, language_name, ngettext, number
from aipager.bot.markdown import u16_len
from aipager.bot.outbox import Live, Post
from aipager.bot.flows import EXPIRED, send_text
from aipager.bot.speech import (ENV_MODEL, CutShort, ModelUnavailable, NotInstalled, TooShort,
                                VoiceError, WrongLanguage)

log = logging.getLogger("aipager.bot")

#: the longest voice note transcribed (seconds): about 75 s of work with base on two busy
#: cores (a 278 s note: 73.7–75.9 s, README "Cost"), more with larger models or idle-less cores
MAX_SECONDS = 300
#: transcripts waiting for a tap, per dispatcher (older ones' buttons expire)
PENDING_KEPT = 50
#: the transcript shown in the chat is cut here (Telegram's limit is 4096); all of it is sent
SHOWN_MAX = 3500
#: seconds between looks at a transcription's progress (its line is edited when it moved)
PROGRESS_EVERY = 3.0

#: ``{command}``: the install command of the environment aipager runs from
#: (``voicemodels.install_command``: its own venv's pip, not whichever is on PATH)
VOICE_OFF = N_("🎙 Voice notes are off on this computer: add aipager's voice extra (about 450 MB) "
               "to the environment it runs from: on the computer, run {command} and restart "
               "aipager.")
TOO_SHORT = N_("🎙 That voice note is too short to hold words: whatever I wrote of it would be "
               "guessed. Hold the button while you speak, or type it.")
NOT_YOURS = N_("Only the person who spoke can send, edit or cancel this.")


@dataclass(frozen=True)
class Heard:
    """A transcript waiting for its speaker's tap."""

    #: the voice note (routing, reply, reactions: as a typed message's)
    message: Message
    speaker: int | None
    text: str


class NextVoice(StatesGroup):
    """What a person's next message is, once a transcript's ✏️ asked for it."""

    #: the corrected text, sent instead of the transcript (``on_edited``)
    text = FSMState()


def _unload_later() -> None:
    asyncio.get_running_loop().call_later(speech.IDLE_UNLOAD + 1,
                                          lambda: speech.unload_idle(time.monotonic()))


# -- the chat -------------------------------------------------------------------------


def _pending(dispatcher: Any) -> OrderedDict[int, Heard]:
    """The transcripts waiting for a tap: kept with the dispatcher (in memory, as the
    pickers' messages are), by handle."""
    found: OrderedDict[int, Heard] = dispatcher.workflow_data.setdefault("voices", OrderedDict())
    return found


def _key(handle: int) -> str:
    return f"voice:{handle}"


def _shown(text: str) -> str:
    if len(text) <= SHOWN_MAX:
        return text
    more = len(text) - SHOWN_MAX
    return text[:SHOWN_MAX] + ngettext("… (+{n} character, all sent)",
                                       "… (+{n} characters, all sent)", more).format(n=number(more))


def _buttons(handle: int) -> dict | None:
    kb = InlineKeyboardBuilder()
    for label, act in ((_("✅ Send"), VoiceAct.SEND), (_("✏️ Edit"), VoiceAct.EDIT),
                       (_("❌ Cancel"), VoiceAct.CANCEL)):
        kb.button(text=label, callback_data=VoiceTap(h=handle, act=act))
    return view.markup(kb.adjust(3))


def _settle(actions: Actions, heard: Heard, handle: int, line: str = "") -> None:
    """The "heard" message without its buttons (and with ``line`` under it)."""
    text = _("🎙 heard: {text}").format(text=_shown(heard.text)) + (f"\n{line}" if line else "")
    actions.outbox.put(Live(heard.message.chat.id, text, key=_key(handle)))


async def _download(message: Message, file_id: str) -> bytes:
    bot = message.bot
    if bot is None:
        msg = "the message is not bound to a bot"
        raise VoiceError(msg)
    found = await bot.get_file(file_id)
    if not found.file_path:
        msg = "Telegram gave no download path for it"
        raise VoiceError(msg)
    buf = io.BytesIO()
    await bot.download_file(found.file_path, buf, timeout=120)
    return buf.getvalue()


def _first_note(spec: str) -> str:
    """What the "transcribing…" line adds when the model is a name not on this computer:
    it is fetched now, once (``voicemodels.fetch``), which takes a while.  A folder is
    never fetched."""
    if speech.is_folder(spec) or speech.loaded(spec) or speech.on_disk(spec):
        return ""
    size = voicemodels.fetch_mb(spec)
    return "\n" + (_("First voice note: fetching the voice model {name} (about {mb} MB), once. "
                     "On the computer, `aipager voice model` fetches it ahead (and says where "
                     "from) or names a model folder.").format(name=spec, mb=size)
                   if size else
                   _("First voice note: fetching the voice model {name}, once. On the "
                     "computer, `aipager voice model` fetches it ahead (and says where from) "
                     "or names a model folder.").format(name=spec))


def _failure(exc: Exception) -> str:
    """A transcription's failure in the speaker's words (the details go to the log)."""
    if isinstance(exc, WrongLanguage):
        return _("🎙 The voice model here understands only English, and this note is not in "
                 "English ({language}): I cannot transcribe it. On the computer, `aipager voice "
                 "model base` sets a multilingual model.").format(
                     language=language_name(exc.language))
    if isinstance(exc, TooShort):
        return _(TOO_SHORT)
    if isinstance(exc, CutShort):
        return _("🎙 That voice note arrived cut short: only {got} of its {length} could be "
                 "read, and a transcript of part of it would end in guessed words. Send it "
                 "again, or type it.").format(got=duration(exc.seconds),
                                              length=duration(exc.expected))
    if isinstance(exc, ModelUnavailable) and exc.fetching:
        return _("🎙 The voice model {name} could not be fetched (is this computer offline?). "
                 "On the computer, `aipager voice model {name}` tries again and says why, or "
                 "`aipager voice model PATH` names a model folder there.").format(
                     name=exc.spec)
    if isinstance(exc, ModelUnavailable):
        return _("🎙 {folder} holds no voice model (a CTranslate2 Whisper folder, with "
                 "model.bin). On the computer, `aipager voice model PATH|NAME` names another "
                 "({variable} overrides it).").format(folder=exc.spec, variable=ENV_MODEL)
    return _("🎙 Could not transcribe that voice note; send it again or type it.")


def hint(state: Any, user: Any) -> str | None:
    """The language a speaker's note is expected in: the one they chose in /settings (kept
    per person), else their Telegram app's (a phone in English says little of the speech)."""
    if user is None:
        return None
    return speech.hint_of(state.langs.get(str(user.id)) or user.language_code)


def _doubt(heard: speech.Transcript) -> str:
    """A line saying the model heard another language, much likelier than the one written
    (``speech.doubted``): the text may be words invented in the wrong language; else ""."""
    if not heard.heard_as:
        return ""
    return "\n" + _("⚠️ Written in {written}, but to the voice model it sounded more like "
                    "{heard}: check it against the note. If you speak another language, "
                    "choose it in /settings.").format(written=language_name(heard.language),
                                                      heard=language_name(heard.heard_as))


def _heard_text(heard: speech.Transcript) -> str:
    text = _("🎙 heard: {text}").format(text=_shown(heard.text)) + _doubt(heard)
    if heard.mostly_unheard:
        # Whisper drops a stretch it is unsure of without a word: a transcript much
        # shorter than the note must not pass for all of it
        text += "\n" + _("⚠️ {unheard} of the {speech} of speech gave no text (too unclear "
                         "for the model): check it against the note.").format(
                             unheard=duration(heard.unheard), speech=duration(heard.speech))
    return text


async def _transcribe(actions: Actions, chat_id: int, key: str, audio: bytes, spec: str,
                      hint: str | None, expected: float) -> speech.Transcript:
    """The transcript, with the "transcribing…" line edited as it goes."""
    progress = speech.Progress()
    job = asyncio.ensure_future(asyncio.to_thread(speech.transcribe, audio, spec, hint,
                                                  progress, expected))
    shown = 0
    while not job.done():
        await asyncio.wait({job}, timeout=PROGRESS_EVERY)
        step = int(progress.done * 100) // 10 * 10  # tens: an edit is worth a change
        if not job.done() and step > shown:
            shown = step
            actions.outbox.put(Live(chat_id, _("🎙 transcribing… {percent} %").format(
                percent=step), key=key))
    return await job


async def on_voice(message: Message, actions: Actions, sender: Sender, members: Any,
                   dispatcher: Any, picks: dict) -> None:
    """A voice note: transcribed here, then shown with ✅ / ✏️ / ❌, or sent at once when the
    chat chose so in /settings (``members``: the config, for its ``voice_model``)."""
    chat_id, msg_id = message.chat.id, message.message_id
    voice = message.voice
    if voice is None:
        return  # the filter lets only voice notes through
    try:
        await asyncio.to_thread(speech.whisper)  # a first import takes a second or two
    except NotInstalled:
        actions.say(chat_id, _(VOICE_OFF).format(command=voicemodels.install_command()),
                    reply_to=msg_id)
        return
    if voice.duration > MAX_SECONDS or (voice.file_size or 0) > files.DOWNLOAD_MAX:
        minutes, seconds = divmod(voice.duration, 60)
        actions.say(chat_id, _("🎙 That voice note is {minutes} min {seconds} s long: I transcribe "
                               "up to {limit}. Send it in parts, or type it.").format(
                                   minutes=minutes, seconds=seconds, limit=duration(MAX_SECONDS)),
                    reply_to=msg_id)
        return
    if voice.duration < speech.MIN_SECONDS:  # Telegram's whole seconds: 0
        actions.say(chat_id, _(TOO_SHORT), reply_to=msg_id)
        return
    handle = actions.state.handle("voice", msg_key(chat_id, msg_id))
    key = _key(handle)
    spec = voicemodels.model_spec(actions.env, members.current())
    head = _("🎙 transcribing…")
    # at once, before the download: the person sees the note was taken
    actions.outbox.put(Live(chat_id, head, key=key, reply_to=msg_id))
    first = await asyncio.to_thread(_first_note, spec)
    if first:
        actions.outbox.put(Live(chat_id, head + first, key=key))
    # minutes of transcribing must not hold the chat's next messages (nor its commands)
    order.step_aside()
    try:
        if first:  # a name not here yet: the package index, else the hub (voicemodels)
            spec = await asyncio.to_thread(voicemodels.fetch, actions.env, spec, None, False)
        audio = await _download(message, voice.file_id)
        heard = await _transcribe(actions, chat_id, key, audio, spec,
                                  hint(actions.state, message.from_user), voice.duration)
    except Exception as exc:  # noqa: BLE001 - Telegram, the audio, the model: say so, go on
        log.warning("transcribing a voice note failed: %s", exc)
        actions.outbox.put(Live(chat_id, _failure(exc), key=key, final=True))
        return
    finally:
        _unload_later()
    log.info("voice note: %.1f s of %s audio transcribed (%.1f s of its %.1f s of speech gave "
             "no text)", heard.seconds, heard.language, heard.unheard, heard.speech)
    if not heard.text:
        actions.outbox.put(Live(chat_id, _("🎙 I heard no words in that voice note.")
                                + _doubt(heard), key=key, final=True))
        return
    if actions.state.prefs_of(chat_id).voice_now:
        # what was heard is still shown (a reply to the note), then goes in as if typed
        actions.outbox.put(Live(chat_id, _heard_text(heard), key=key, final=True))
        await send_text(actions, message, sender, heard.text, picks)
        return
    pending = _pending(dispatcher)
    pending[handle] = Heard(message, sender.user_id, heard.text)
    pending.move_to_end(handle)
    while len(pending) > PENDING_KEPT:
        pending.popitem(last=False)
    actions.outbox.put(Live(chat_id, _heard_text(heard), key=key, markup=_buttons(handle),
                            final=True))


def _heard_for(query: CallbackQuery, callback_data: VoiceTap, sender: Sender, dispatcher: Any,
               callback_answer: CallbackAnswer) -> Heard | None:
    """The transcript a button belongs to, if the tapper spoke it; else None (the toast
    says why)."""
    heard = _pending(dispatcher).get(callback_data.h)
    if heard is None or query.message is None or query.message.chat.id != heard.message.chat.id:
        callback_answer.text = _(EXPIRED)
        return None
    if sender.user_id != heard.speaker:
        callback_answer.text = _(NOT_YOURS)
        return None
    return heard


async def _forget_edit(state: FSMContext, handle: int) -> None:
    """The tapper's ✏️ for this transcript is over (sent or cancelled by a button)."""
    if await state.get_state() == NextVoice.text.state and \
            (await state.get_data()).get("voice") == handle:
        await state.clear()


async def _take(query: CallbackQuery, callback_data: VoiceTap, actions: Actions,
                sender: Sender, state: FSMContext, dispatcher: Any,
                callback_answer: CallbackAnswer, line: str = "") -> Heard | None:
    """The speaker's transcript this button settles (✅ or ❌), taken out of the pending ones
    with its ✏️ over and its message saying ``line``; None when it is not theirs or gone."""
    heard = _heard_for(query, callback_data, sender, dispatcher, callback_answer)
    if heard is None:
        return None
    del _pending(dispatcher)[callback_data.h]
    await _forget_edit(state, callback_data.h)
    _settle(actions, heard, callback_data.h, line)
    return heard


async def on_send(query: CallbackQuery, callback_data: VoiceTap, actions: Actions,
                  sender: Sender, picks: dict, state: FSMContext, dispatcher: Any,
                  callback_answer: CallbackAnswer) -> None:
    """✅: the transcript goes in as the speaker's message (as if typed)."""
    heard = await _take(query, callback_data, actions, sender, state, dispatcher,
                        callback_answer)
    if heard is not None:
        await send_text(actions, heard.message, sender, heard.text, picks)


async def on_edit(query: CallbackQuery, callback_data: VoiceTap, actions: Actions,
                  sender: Sender, state: FSMContext, dispatcher: Any,
                  callback_answer: CallbackAnswer) -> None:
    """✏️: the speaker's next message in this chat is sent instead (``on_edited``); the
    transcript is repeated as code, which a tap copies."""
    heard = _heard_for(query, callback_data, sender, dispatcher, callback_answer)
    if heard is None or query.message is None:
        return
    await state.set_state(NextVoice.text)
    await state.set_data({"voice": callback_data.h})
    chat_id = query.message.chat.id
    # in a group the bot reads only replies to it: the reply is the natural answer there
    head = (_("✏️ Reply to this message with the corrected text; it is sent instead. What I "
              "heard (tap to copy):") if chat_id < 0
            else _("✏️ Send the corrected text; it is sent instead. What I heard (tap to "
                   "copy):")) + "\n"
    body = _shown(heard.text)
    actions.outbox.put(Post(chat_id, head + body, reply_to=query.message.message_id,
                            entities=({"type": "code", "offset": u16_len(head),
                                       "length": u16_len(body)},)))


async def on_edited(message: Message, actions: Actions, sender: Sender, text: str,
                    picks: dict, state: FSMContext, dispatcher: Any) -> None:
    """The message after a transcript's ✏️ (``NextVoice.text``) replaces it and is sent;
    when the transcript went meanwhile, the message goes on as any other."""
    handle = (await state.get_data()).get("voice")
    await state.clear()
    if not isinstance(handle, int):
        raise SkipHandler
    heard = _pending(dispatcher).pop(handle, None)
    if heard is None or heard.speaker != sender.user_id:
        raise SkipHandler
    _settle(actions, heard, handle, _("✏️ replaced by your text"))
    await send_text(actions, message, sender, text, picks)


async def on_cancel(query: CallbackQuery, callback_data: VoiceTap, actions: Actions,
                    sender: Sender, state: FSMContext, dispatcher: Any,
                    callback_answer: CallbackAnswer) -> None:
    """❌: nothing is sent."""
    if await _take(query, callback_data, actions, sender, state, dispatcher, callback_answer,
                   _("❌ not sent")) is not None:
        callback_answer.text = _("Not sent.")


__all__ = ["MAX_SECONDS", "NOT_YOURS", "TOO_SHORT", "VOICE_OFF", "NextVoice", "hint", "on_cancel", "on_edit",
           "on_edited", "on_send", "on_voice"]
