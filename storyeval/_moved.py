"""Old import paths of modules that move, kept for one release with a DeprecationWarning (the
mechanism; the paths of 0.1 were removed in 0.4).

Release 0.2 splits ``storyeval.meta`` by idea (``storyeval.correlation``, ``storyeval.compare``,
``storyeval.agreement``, ``storyeval.power``, ``storyeval.reproduction``; ``storyeval.meta`` is
the pipeline). Each old module is a small file whose module-level ``__getattr__`` comes from
`forward`: reading a name through the old path warns (Python shows it once per place of use),
naming the new module, and returns the object itself (so identity checks and monkeypatching of
the new module agree).
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

#: The release after which the old paths are removed.
REMOVED_IN = "0.5"


def forward(old: str, new: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for the old module ``old`` that forwards to module ``new``."""
    def __getattr__(name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)  # dunder look-ups (doctest, pickling) are not uses
        target = importlib.import_module(new)
        value = getattr(target, name)  # AttributeError names the new module
        warnings.warn(f"{old}.{name} moved to {new}.{name}; the old path will be removed in "
                      f"storyeval {REMOVED_IN}", DeprecationWarning, stacklevel=2)
        return value

    return __getattr__
