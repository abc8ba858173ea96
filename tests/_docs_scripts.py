"""Load the docs generator scripts (``docs/gen_*.py``) as modules in the docs tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parents[1] / "docs"


def load_docs_script(name: str) -> ModuleType:
    """``docs/<name>.py`` imported as a module (the docs folder is not a package; it goes on
    ``sys.path`` so that a generator finds its helpers, ``docs/gen_common.py``)."""
    if str(DOCS) not in sys.path:
        sys.path.insert(0, str(DOCS))
    spec = importlib.util.spec_from_file_location(f"storyeval_docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
