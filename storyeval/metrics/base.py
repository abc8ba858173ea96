"""The metric interface and the registry behind ``storyeval score --metrics``.

A metric scores a batch of stories, each optionally with a reference story and a story-prompt,
and returns one or more named sub-scores (*measures*) per story. Each measure carries the HANNA
taxonomy (reference-based / reference-free; lexical / embedding / model-based) and the inputs it
needs, so that rows lacking an input get NaN with a stated reason instead of a made-up number.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Measure", "Metric", "reference_rows"]

REFERENCE_KINDS = ("reference-based", "reference-free")
FAMILY_KINDS = ("lexical", "embedding", "model-based")
INPUTS = ("reference", "prompt")


@dataclass(frozen=True)
class Measure:
    """One sub-score produced by a metric.

    Attributes
    ----------
    name : str
        Identifier written to the ``measure`` column of the tidy score table; it includes the
        configuration where the configuration changes the number (model, layer, options).
    display_name : str
        Short name for tables and figures.
    reference : {"reference-based", "reference-free"}
        HANNA's Ξ / ¤ split.
    family : {"lexical", "embedding", "model-based"}
        HANNA's § / ε / Δ split.
    needs : tuple of str
        Inputs besides the story: ``"reference"`` and/or ``"prompt"``.
    higher_is_better : bool
        Direction, for readers of the table (surface measures such as length have none; True).
    implementation : str
        The reference implementation whose numbers this measure reproduces (or the paper that
        defines it when none exists), as the catalogue's ``implementation`` column shows it.
    variant : str
        The configuration of that recipe (tokeniser, case, options), catalogue column
        ``variant``; ``docs/metric-fidelity.md`` gives the measured differences.
    """

    name: str
    display_name: str
    reference: str
    family: str
    needs: tuple[str, ...] = ()
    higher_is_better: bool = True
    implementation: str = ""
    variant: str = ""

    def __post_init__(self) -> None:
        if self.reference not in REFERENCE_KINDS:
            raise ValueError(f"Measure.reference must be one of {REFERENCE_KINDS}")
        if self.family not in FAMILY_KINDS:
            raise ValueError(f"Measure.family must be one of {FAMILY_KINDS}")
        if any(n not in INPUTS for n in self.needs):
            raise ValueError(f"Measure.needs items must be in {INPUTS}")


@dataclass
class Metric(ABC):
    """Base class of every storyeval metric wrapper.

    Subclasses set `name`, implement [`measures`][], [`config`][] and
    [`score_batch`][], and may override [`finalize`][] for steps that need the whole set of
    stories (baseline rescaling, inter-story repetition). [`storyeval.metrics.score`][] calls
    [`score_batch`][] only on the stories missing from the cache.
    """

    name: str = field(default="metric", init=False)
    #: Whether per-story values may be cached (a pure function of the story's own texts).
    cacheable: bool = field(default=True, init=False)

    @abstractmethod
    def measures(self, *, has_reference: bool = True, has_prompt: bool = True) -> list[Measure]:
        """The measures this configuration produces given which inputs exist in the data."""

    @abstractmethod
    def config(self) -> dict:
        """JSON-serialisable configuration: everything that changes the numbers."""

    @abstractmethod
    def score_batch(
        self,
        stories: Sequence[str],
        references: Sequence[str | None],
        prompts: Sequence[str | None],
        measures: Sequence[Measure],
    ) -> np.ndarray:
        """Score a batch; returns a float array of shape ``(len(stories), len(measures))``.

        Entries whose required input is ``None`` must be NaN (the caller records the reason).
        """

    def prepare(self, context: dict) -> None:
        """Set-level preparation before any story is scored (default: none), e.g. BERTScore's
        idf weights from the references of the whole set. ``context`` is the one `finalize`
        receives; [`config`][] may depend on what this sets, since the cache key is taken
        after it."""

    def finalize(self, values: np.ndarray, measures: Sequence[Measure], context: dict) -> tuple[
            np.ndarray, list[Measure]]:
        """Set-level post-processing after all stories are scored (default: none).

        ``context`` holds ``stories``, ``references``, ``prompts`` and ``systems`` (lists).
        Returns the possibly extended value matrix and measure list.
        """
        return values, list(measures)

    def uses(self) -> tuple[str, ...]:
        """Inputs whose text enters the cache key (``"reference"``, ``"prompt"``)."""
        used: set[str] = set()
        for m in self.measures():
            used.update(m.needs)
        return tuple(x for x in INPUTS if x in used)

    def config_key(self) -> str:
        """A stable hash of [`config`][] (with the metric name), used to key the cache."""
        payload = json.dumps({"metric": self.name, "config": self.config()}, sort_keys=True,
                             default=str)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def describe(self) -> str:
        """A one-line description: name and configuration."""
        return f"{self.name} {json.dumps(self.config(), sort_keys=True, default=str)}"


# ----------------------------------------------------------------------------------------------


def reference_rows(stories: Sequence[str], references: Sequence[str | None], n_columns: int,
                   ) -> tuple[np.ndarray, list[int], list[str], list[str]]:
    """For reference-based metrics: a NaN score array (stories x ``n_columns``), the rows that
    have a reference, and their stories and references (stories without one stay NaN)."""
    out = np.full((len(stories), n_columns), np.nan)
    rows = [i for i, r in enumerate(references) if r is not None]
    return out, rows, [stories[i] for i in rows], [references[i] for i in rows]


#: The registry's names, read through this module before release 0.2 (see `__getattr__`).
_MOVED_TO_REGISTRY = ("FAMILIES", "register", "available_metrics", "get_metric",
                      "resolve_metrics", "get_metric_name_check")


def __getattr__(name: str):
    # The registry lives in storyeval.metrics.registry, so that this module, which every metric
    # imports, imports no metric; the old names keep working for one release.
    if name in _MOVED_TO_REGISTRY:
        import importlib
        import warnings

        registry = importlib.import_module("storyeval.metrics.registry")  # not at import time
        warnings.warn(f"storyeval.metrics.base.{name} moved to storyeval.metrics.registry.{name}",
                      DeprecationWarning, stacklevel=2)
        return getattr(registry, name)
    raise AttributeError(f"module 'storyeval.metrics.base' has no attribute {name!r}")
