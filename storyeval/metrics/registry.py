"""The metric registry: the names ``storyeval score --metrics`` accepts, and how to build them.

Built-in metrics are listed here explicitly (`BUILTIN`); a metric module imports only
`storyeval.metrics.base`, never the registry, so that registration runs one way
(base <- metric modules <- registry <- scoring). Your own metric joins with `register`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from storyeval.exceptions import InputError
from storyeval.metrics.base import Metric

__all__ = ["BUILTIN", "FAMILIES", "available_metrics", "get_metric", "get_metric_name_check",
           "register", "resolve_metrics"]

#: Built-in metric names and the (module, class) that builds each.
BUILTIN: dict[str, tuple[str, str]] = {
    "bartscore": ("storyeval.metrics.bartscore", "BartScoreMetric"),
    "rouge": ("storyeval.metrics.rouge", "RougeMetric"),
    "bleu": ("storyeval.metrics.bleu", "BleuMetric"),
    "chrf": ("storyeval.metrics.chrf", "ChrfMetric"),
    "bertscore": ("storyeval.metrics.bertscore", "BertScoreMetric"),
    "surface": ("storyeval.metrics.surface", "SurfaceMetric"),
    "poetic": ("storyeval.metrics.poetic_form", "PoeticFormMetric"),
}

_REGISTRY: dict[str, Callable[..., Metric]] = {}
#: Metric names that carry a path after the prefix (kept as written: paths are case-sensitive).
_PATH_PREFIXES = ("evaluate:", "rm:")
#: Family names accepted by ``--metrics``, each expanding to registered metric names.
FAMILIES: dict[str, tuple[str, ...]] = {
    "lexical": ("rouge", "bleu", "chrf", "surface"),
    "embedding": ("bertscore",),
    "model-based": ("bartscore",),
    "fast": ("rouge", "bleu", "chrf", "surface"),
    "all": ("rouge", "bleu", "chrf", "surface", "bertscore", "bartscore"),
}


def register(name: str) -> Callable:
    """Class decorator adding a metric factory to the registry under ``name``."""

    def deco(factory: Callable[..., Metric]) -> Callable[..., Metric]:
        _REGISTRY[name] = factory
        return factory

    return deco


def _ensure_builtins() -> None:
    # the built-in metrics are imported when first needed (none imports a heavy dependency at
    # import time, but together they cost ~0.1 s that `storyeval meta` does not need)
    for name, (module, attr) in BUILTIN.items():
        if name not in _REGISTRY:
            _REGISTRY[name] = getattr(importlib.import_module(module), attr)


def available_metrics() -> list[str]:
    """Names of the registered metrics (the values ``--metrics`` accepts besides families and
    ``evaluate:PATH``)."""
    _ensure_builtins()
    return sorted(_REGISTRY)


def get_metric(name: str, **options) -> Metric:
    """Build the metric registered as ``name`` with keyword ``options``.

    ``"evaluate:PATH_OR_NAME"`` wraps any Hugging Face ``evaluate`` module (a local folder or
    script, or a hub name when online) as a storyeval metric; ``"rm:PATH"`` a Bradley-Terry
    reward model (`storyeval.metrics.reward.RewardModelMetric`).

    Raises
    ------
    InputError
        For an unknown name; the message lists the valid names and families.
    """
    _ensure_builtins()
    key = name.strip()
    if key.lower().startswith("evaluate:"):
        from storyeval.metrics.evaluate_module import EvaluateMetric

        return EvaluateMetric(key.split(":", 1)[1], **options)
    if key.lower().startswith("rm:"):
        from storyeval.metrics.reward import RewardModelMetric

        return RewardModelMetric(model=key.split(":", 1)[1], **options)
    factory = _REGISTRY.get(key.lower())
    if factory is None:
        import difflib

        close = difflib.get_close_matches(key.lower(), list(_REGISTRY) + list(FAMILIES), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise InputError(
            f"unknown metric {name!r}.{hint} Known metrics: {', '.join(sorted(_REGISTRY))}; "
            f"families: {', '.join(FAMILIES)}; or 'evaluate:PATH' for an evaluate module, "
            "'rm:PATH' for a reward model."
        )
    return factory(**options)


def resolve_metrics(spec: str | Sequence[str]) -> list[str]:
    """Expand a comma-separated list (or sequence) of metric and family names, in order, without
    duplicates. Unknown names raise [`InputError`][].

    Examples
    --------
    >>> resolve_metrics("rouge,embedding")
    ['rouge', 'bertscore']
    """
    _ensure_builtins()
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        names = FAMILIES.get(item.lower())
        if names is None:
            if not item.lower().startswith(_PATH_PREFIXES):
                get_metric_name_check(item)
                names = (item.lower(),)
            else:
                names = (item,)
        for n in names:
            if n not in out:
                out.append(n)
    if not out:
        raise InputError("metrics: no metric given (e.g. --metrics rouge,bleu,surface)")
    return out


def get_metric_name_check(name: str) -> None:
    """Raise [`InputError`][] if ``name`` is not a registered metric (see `get_metric`,
    whose error message lists the valid names)."""
    if name.lower() not in _REGISTRY:
        get_metric(name)
