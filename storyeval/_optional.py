"""Import optional heavy dependencies lazily, with a message naming the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from storyeval.exceptions import MissingDependencyError


def import_optional(module: str, *, extra: str, purpose: str | None = None) -> ModuleType:
    """Import ``module`` or raise [`MissingDependencyError`][] naming the storyeval extra.

    Parameters
    ----------
    module : str
        Dotted module name, e.g. ``"torch"`` or ``"transformers"``.
    extra : str
        The storyeval extra that installs it, e.g. ``"metrics"``.
    purpose : str, optional
        What the module is needed for, added to the message.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # the cause is kept for debugging
        what = f" for {purpose}" if purpose else ""
        raise MissingDependencyError(
            f"{module!r} is needed{what} but is not installed; "
            f"install it with: pip install 'storyeval[{extra}]'"
        ) from exc
