"""Speech → text on this computer: faster-whisper (the optional ``voice`` extra) with a
Whisper model in CTranslate2's format, for the chat's voice notes (``bot.voice``).

faster-whisper is imported at the first transcription, never with the chat (it pulls in
CTranslate2, PyAV, onnxruntime and numpy: memory the daemon does not spend until someone
speaks).  The model is ``AIPAGER_VOICE_MODEL`` in the daemon's environment, else the config
key ``voice_model``, else ``DEFAULT_MODEL``.  A folder (a path: ``/…``, ``~/…``, ``./…``)
is a CTranslate2 Whisper model on this computer and nothing is fetched; a name (``base``,
``small``, ``large-v3``, or a hub id ``owner/name``) is fetched by faster-whisper on first
use into its own cache, where the machine may download.  One model is loaded at a time,
shared by every chat, and dropped ``IDLE_UNLOAD`` seconds after its last use.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

from aipager import config
from aipager.proto import paths
from aipager.proto.errors import AipagerError

log = logging.getLogger("aipager.bot")

#: the environment variable naming the model (a folder or a faster-whisper name)
ENV_MODEL = "AIPAGER_VOICE_MODEL"
#: the config key naming it when the environment does not
CONFIG_KEY = "voice_model"
#: the model when neither names one: multilingual, ~150 MB, fetched by faster-whisper
#: on first use (``small`` is slower and hears Portuguese, Spanish and Vietnamese better)
DEFAULT_MODEL = "base"
#: how sure of the language spoken the model must be to overrule the speaker's Telegram
#: language (faster-whisper's own threshold)
SURE = 0.5
#: seconds the loaded model stays after the last voice note
IDLE_UNLOAD = 600.0


class VoiceError(AipagerError):
    """A voice note could not be transcribed (the message says why, for the chat)."""


class NotInstalled(VoiceError):
    """faster-whisper (the ``voice`` extra) is not installed."""


class ModelUnavailable(VoiceError):
    """The model named cannot be loaded (a folder without a model, no download possible)."""


@dataclass(frozen=True)
class Transcript:
    """What a voice note said."""

    text: str
    #: the language detected (ISO 639-1, ``en``)
    language: str
    #: the audio's length in seconds
    seconds: float


def model_spec(env: Mapping[str, str], cfg: config.Config | None = None) -> str:
    """The model to use: ``ENV_MODEL``, else the config's ``voice_model``, else
    ``DEFAULT_MODEL``; a folder given as ``~/…`` is expanded against the daemon's HOME."""
    spec = (env.get(ENV_MODEL) or "").strip()
    if not spec and cfg is not None and isinstance(cfg.extra.get(CONFIG_KEY), str):
        spec = cfg.extra[CONFIG_KEY].strip()
    spec = spec or DEFAULT_MODEL
    if spec == "~" or spec.startswith("~/"):
        spec = paths.home(env) + spec[1:]
    return spec


def is_folder(spec: str) -> bool:
    """Whether ``spec`` names a model folder (a path) rather than a name to fetch."""
    return spec.startswith(("/", "./", "../", "~")) or os.path.isdir(spec)


def whisper() -> Any:
    """The ``faster_whisper`` module (its first import takes a second or two).

    Raises:
        NotInstalled: the ``voice`` extra is missing.
    """
    try:
        import faster_whisper
    except ImportError as exc:
        msg = f"faster-whisper is not installed ({exc})"
        raise NotInstalled(msg) from exc
    return faster_whisper


class _Models:
    """The one loaded model, shared by every chat; one transcription at a time (a second
    would only halve the speed of both and double the memory)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spec = ""
        self.model: Any = None
        self.used = 0.0

    def get(self, spec: str) -> Any:
        """The model for ``spec`` (call with ``lock`` held): loaded once, kept."""
        if self.model is not None and self.spec == spec:
            return self.model
        fw = whisper()
        self.model, self.spec = None, ""  # the old one's memory goes before the new loads
        if is_folder(spec) and not os.path.isfile(os.path.join(spec, "model.bin")):
            msg = f"{spec} holds no CTranslate2 model (no model.bin)"
            raise ModelUnavailable(msg)
        try:
            # int8 on the CPU: a quarter of float32's memory, and the fastest there
            self.model = fw.WhisperModel(spec, device="cpu", compute_type="int8")
        except Exception as exc:  # noqa: BLE001 - a download, a file, CTranslate2: one answer
            msg = f"cannot load the voice model {spec}: {exc}"
            raise ModelUnavailable(msg) from exc
        self.spec = spec
        return self.model

    def unload_idle(self, now: float) -> bool:
        """Drop the model when idle for ``IDLE_UNLOAD`` seconds; whether it was dropped."""
        if not self.lock.acquire(blocking=False):
            return False  # transcribing: its end schedules the next check
        try:
            if self.model is None or now - self.used < IDLE_UNLOAD:
                return False
            self.model, self.spec = None, ""
            _trim_heap()
            log.info("voice model unloaded after %.0f s idle", IDLE_UNLOAD)
            return True
        finally:
            self.lock.release()


def _trim_heap() -> None:
    """Hand freed memory back to the system: glibc keeps a dropped model's ~60 MB (tiny.en,
    measured) in its heap otherwise.  Elsewhere (musl, macOS) a no-op."""
    import gc

    from aipager import heap

    gc.collect()
    heap.trim()


# the process's one model (a cache of a resource, like the import system's own modules)
_models = _Models()


def hint_of(language_code: str | None) -> str | None:
    """Whisper's code for a Telegram ``language_code`` (an IETF tag: ``pt-br`` → ``pt``)."""
    code = (language_code or "").strip().lower().replace("_", "-").split("-", 1)[0]
    return code or None


def transcribe(audio: bytes, spec: str, hint: str | None = None) -> Transcript:
    """Transcribe ``audio`` (any format FFmpeg reads: Telegram's OGG/Opus, WAV…) with the
    model ``spec``, in the language spoken.  Blocking: run it in a thread.

    The language is the model's guess when it is sure of it (``SURE``), else ``hint`` (the
    speaker's Telegram language, ``hint_of``) when the model knows it: a few seconds of
    Portuguese or Vietnamese can sound like anything to Whisper, and a guess it is unsure of
    gives words in the wrong language and script.

    Raises:
        NotInstalled: no faster-whisper.
        ModelUnavailable: the model cannot be loaded.
    """
    with _models.lock:
        model = _models.get(spec)
        samples = whisper().decode_audio(io.BytesIO(audio))  # 16 kHz mono
        language, known = None, model.supported_languages
        if hint in known and len(known) > 1:  # an English-only model never guesses
            found, sure, _ = model.detect_language(samples, vad_filter=True)
            language = found if sure >= SURE else hint
        # vad_filter: silence is cut first (Whisper invents words in silence);
        # condition_on_previous_text off: one misheard segment does not derail the rest
        segments, info = model.transcribe(samples, language=language, vad_filter=True,
                                          condition_on_previous_text=False)
        words = [s.text.strip() for s in segments]  # the generator does the work
        _models.used = time.monotonic()
    return Transcript(" ".join(w for w in words if w), str(info.language), float(info.duration))


def unload_idle(now: float) -> bool:
    """Give the model's memory back once it has been idle ``IDLE_UNLOAD`` seconds at ``now``
    (``time.monotonic``); whether it was dropped.  The chat checks after each voice note."""
    return _models.unload_idle(now)


__all__ = ["CONFIG_KEY", "DEFAULT_MODEL", "ENV_MODEL", "IDLE_UNLOAD", "ModelUnavailable",
           "NotInstalled", "Transcript", "VoiceError", "hint_of", "is_folder", "model_spec",
           "transcribe", "unload_idle", "whisper"]
