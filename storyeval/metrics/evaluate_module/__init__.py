"""Any Hugging Face ``evaluate`` module as a storyeval metric (see ``README.md`` here)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from storyeval._optional import import_optional
from storyeval.exceptions import InputError
from storyeval.metrics.base import Measure, Metric

__all__ = ["EvaluateMetric", "load_evaluate_module"]

_MODULE_CACHE: dict[str, object] = {}


def load_evaluate_module(path_or_name: str):
    """Load an ``evaluate`` module from a local folder / ``.py`` file, or a hub name when online.

    Raises
    ------
    InputError
        If the module cannot be loaded; the message says that hub names need the network and
        that a local folder ``X/`` holding ``X.py`` works offline.
    """
    if path_or_name in _MODULE_CACHE:
        return _MODULE_CACHE[path_or_name]
    evaluate = import_optional("evaluate", extra="metrics", purpose="evaluate metric modules")
    try:
        module = evaluate.load(path_or_name, keep_in_memory=True)  # no Arrow files on disk
    except Exception as exc:  # evaluate raises many types (FileNotFoundError, ConnectionError...)
        local = Path(path_or_name).exists()
        hint = ("" if local else " Hub names need the network (and HF_EVALUATE_OFFLINE unset); "
                "offline, pass a local folder X/ holding X.py (an evaluate.Metric subclass).")
        raise InputError(f"could not load the evaluate module {path_or_name!r}: "
                         f"{type(exc).__name__}: {exc}.{hint}") from exc
    _MODULE_CACHE[path_or_name] = module
    return module


@dataclass
class EvaluateMetric(Metric):
    """Wrap an ``evaluate`` module: per-story values are the outputs that come back as one value
    per prediction; modules that only return corpus-level numbers are called once per story.

    Parameters
    ----------
    module : str
        Local folder or script path, or a hub name (online only).
    compute_kwargs : dict, optional
        Extra keyword arguments of ``module.compute``.
    keys : sequence of str, optional
        Output keys to keep (default: every numeric output, found by scoring a probe pair).
    reference, family : str
        Taxonomy of the measures (default reference-based, lexical).
    label : str, optional
        Prefix of the measure names (default the module's name).

    Notes
    -----
    Measure names are ``"{label} {key}"`` plus the compute options when given.
    """

    module: str = ""
    compute_kwargs: dict = field(default_factory=dict)
    keys: Sequence[str] | None = None
    reference: str = "reference-based"
    family: str = "lexical"
    label: str | None = None

    def __post_init__(self) -> None:
        self.name = "evaluate"
        self._per_example: bool | None = None

    def _module(self):
        return load_evaluate_module(self.module)

    def _label(self) -> str:
        if self.label:
            return self.label
        return Path(self.module.rstrip("/")).stem if os.path.exists(self.module) else self.module

    def _needs_reference(self) -> bool:
        feats = self._module().features
        feats = feats[0] if isinstance(feats, list) else feats
        return "references" in feats

    def _call(self, preds: list[str], refs: list[str] | None) -> dict:
        kwargs = dict(self.compute_kwargs)
        if refs is not None:
            kwargs["references"] = refs
        return self._module().compute(predictions=preds, **kwargs)

    def _discover(self) -> list[str]:
        if self.keys is not None:
            return list(self.keys)
        refs = ["the cat sat on the mat .", "a dog ran ."] if self._needs_reference() else None
        out = self._call(["the cat sat on a mat .", "a dog ran home ."], refs)
        keys = [k for k, v in out.items() if _is_per_example(v, 2)]
        self._per_example = bool(keys)
        if not keys:
            keys = [k for k, v in out.items() if isinstance(v, (int, float, np.floating))]
        if not keys:
            raise InputError(f"evaluate module {self.module!r} returned no numeric output")
        return keys

    def output_keys(self) -> list[str]:
        if getattr(self, "_keys", None) is None:
            self._keys = self._discover()
        return self._keys

    def measure_name(self, key: str) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in sorted(self.compute_kwargs.items()))
        return f"{self._label()} {key}" + (f" ({opts})" if opts else "")

    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        needs = ("reference",) if self._needs_reference() else ()
        return [Measure(self.measure_name(k), self.measure_name(k), self.reference, self.family,
                        needs) for k in self.output_keys()]

    def config(self) -> dict:
        path = Path(self.module)
        src = None
        if path.is_dir():
            path = path / f"{path.name}.py"
        if path.is_file():  # a local module: its source is part of the configuration
            import hashlib

            src = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        return {"module": self.module if src is None else path.stem, "source": src,
                "compute_kwargs": self.compute_kwargs, "keys": self.keys}

    def _key_map(self) -> dict[str, str]:
        """Measure name -> output key."""
        return {self.measure_name(k): k for k in self.output_keys()}

    def score_batch(self, stories, references, prompts, measures) -> np.ndarray:
        keys = self.output_keys()
        key_of = self._key_map()
        needs_ref = self._needs_reference()
        out = np.full((len(stories), len(measures)), np.nan)
        rows = [i for i in range(len(stories)) if not needs_ref or references[i] is not None]
        if not rows:
            return out
        preds = [stories[i] for i in rows]
        refs = [references[i] for i in rows] if needs_ref else None
        if self._per_example is None:
            self._discover()
        if self._per_example:
            res = self._call(preds, refs)
            for j, m in enumerate(measures):
                out[rows, j] = np.asarray(res[key_of[m.name]], dtype=float)
        else:  # corpus-level module: one call per story
            for r, i in enumerate(rows):
                res = self._call([preds[r]], None if refs is None else [refs[r]])
                for j, m in enumerate(measures):
                    out[i, j] = float(res[key_of[m.name]])
        del keys
        return out


def _is_per_example(value, n: int) -> bool:
    if isinstance(value, (list, tuple, np.ndarray)) and len(value) == n:
        try:
            np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return False
        return True
    return False
