"""Load a script of benchmarks/ as a module for the tests of its pure functions."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load_bench(name: str) -> Iterator[ModuleType]:
    """Yield ``benchmarks/<name>.py`` as a module (registered while in use: dataclasses and
    pickling look it up in sys.modules), for a module-scoped pytest fixture."""
    spec = importlib.util.spec_from_file_location(f"storyeval_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
