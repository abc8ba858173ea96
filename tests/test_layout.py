"""The package layout of docs/design.md holds: no import circle, imports only run downwards,
no package holds more than about a quarter of the code, and Kendall counting lives in one
package.

Imports are read from the source (``ast``), including those inside functions and under
``TYPE_CHECKING``: a circle that only closes at run time is still a circle for a reader.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "storyeval"

#: Layers from the bottom up; a package may import its own modules and those of lower layers.
#: "(root)" is the top-level private helpers (exceptions, _atomic, _optional, ...).
LAYERS: tuple[frozenset[str], ...] = tuple(frozenset(layer) for layer in (
    {"(root)"},
    {"data"},
    {"correlation", "metrics", "contamination", "explain"},
    {"resample", "agreement", "generation", "perturb"},
    {"compare", "llm", "reproduction"},
    {"power", "pairwise"},
    {"meta"},
    {"report", "bias"},
    {"judge"},
    {"cli"},
))
#: Entry points that sit above everything: ``python -m storyeval`` and the lazy top level.
ENTRY_POINTS = {"storyeval.__main__"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in ROOT.rglob("*.py")}


def _imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    known = _modules()
    return {name: _imports(name, path, known) for name, path in known.items()}


def _package(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and (ROOT / parts[1]).is_dir()):
        return parts[1]
    return "(root)"


def _layer(package: str) -> int:
    for i, layer in enumerate(LAYERS):
        if package in layer:
            return i
    raise AssertionError(f"package storyeval.{package} is not placed in LAYERS (tests/test_layout.py"
                         f" and docs/design.md): decide where it sits")


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_is_part_of_an_import_circle(graph):
    assert _cycles(graph) == []


def test_imports_only_run_downwards(graph):
    upward = []
    for module, targets in graph.items():
        if module in ENTRY_POINTS or module == "storyeval":
            continue
        own = _layer(_package(module))
        for target in targets:
            if _layer(_package(target)) > own:
                upward.append(f"{module} -> {target}")
    assert upward == [], "imports that run upwards:\n" + "\n".join(sorted(upward))


def test_no_package_holds_more_than_a_quarter_of_the_code():
    lines: dict[str, int] = defaultdict(int)
    for path in ROOT.rglob("*.py"):
        lines[_package(_module_name(path))] += len(path.read_text(encoding="utf-8").splitlines())
    total = sum(lines.values())
    assert max(lines.values()) <= 0.25 * total, dict(lines)


def test_kendall_counting_lives_in_the_correlation_package():
    """Every module whose name says Kendall counting is under ``storyeval/correlation`` (old
    paths kept for one release are forwarding files without code of their own)."""
    kendall = sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*kendall*.py")
                     if "forward(__name__" not in p.read_text(encoding="utf-8"))
    assert kendall and all(p.startswith("correlation/") for p in kendall), kendall
