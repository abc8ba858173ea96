"""Compare regenerated documentation Markdown with the committed files, token by token.

The stale checks of the generated docs (``tests/test_docs.py``, ``tests/test_docs_demos.py``,
``tests/test_docs_metrics.py``) share this comparison. A text is split into numbers and the
text between them. The text between numbers must be identical (words, table layout, spacing,
typography). Each pair of numbers must be written identically too, except that with
``last_digit_units=k > 0`` two decimal numbers written with the same number of decimals d, at
least ``min_decimals``, may differ by up to k units of their last digit (k * 10**-d). Integers
(counts, sizes, seeds, settings) and decimals with fewer than ``min_decimals`` decimals always
compare exactly. With ``last_digit_units=0`` (the default) the comparison is byte-for-byte
equality, only with a message that names the differing numbers and lines.

Why k units of the last digit: two values a, b rounded to d decimals differ after rounding by at
most |a - b| + 10**-d, so k = 2 accepts every host difference |a - b| < 2 * 10**-d and rejects
every change of 3 units or more. It is meant for numbers computed with torch, whose CPU
arithmetic differs between hosts (different kernels, summation orders); a number close to a
rounding edge, or one moved by a near tie that swapped order, can then print one unit apart.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path

MINUS = "\u2212"
#: A number: optional minus (ASCII or typographic), digits, optional decimals and exponent; not
#: part of a word (``gpt2``) or of a dotted version (``2.13.0``). A trailing sentence period is
#: allowed.
NUMBER = re.compile(r"(?<![\w.])[-\u2212]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?!\w|\.\d)")


def _split(text: str) -> tuple[list[str], list[str]]:
    """(text parts, numbers): ``text == parts[0] + numbers[0] + parts[1] + ...``."""
    pieces = NUMBER.split(text)  # NUMBER has no group: parts only
    return pieces, NUMBER.findall(text)


def _decimal(number: str) -> Decimal:
    return Decimal(number.replace(MINUS, "-"))


def _minus(number: str) -> str:
    return number[0] if number[0] in "-" + MINUS else ""


def number_within(fresh: str, committed: str, last_digit_units: int, min_decimals: int) -> bool:
    """Whether two written numbers are equal, or decimals within the allowed last-digit units."""
    if fresh == committed:
        return True
    if last_digit_units <= 0:
        return False
    a, b = _decimal(fresh), _decimal(committed)
    exponent = a.as_tuple().exponent
    if exponent != b.as_tuple().exponent or -exponent < min_decimals:
        return False  # integers, settings like 0.05, or a changed number of decimals
    if _minus(fresh) and _minus(committed) and _minus(fresh) != _minus(committed):
        return False  # '-' vs '\u2212' is a change of typography, not of value
    unit = Decimal(1).scaleb(exponent)
    return abs(a - b) <= last_digit_units * unit


def _line_of(parts: list[str], numbers: list[str], index: int) -> int:
    """1-based line of ``numbers[index]``."""
    before = "".join(p + n for p, n in zip(parts[:index], numbers[:index])) + parts[index]
    return before.count("\n") + 1


def markdown_differences(fresh: str, committed: str, *, last_digit_units: int = 0,
                         min_decimals: int = 1) -> tuple[list[str], list[str]]:
    """(differences, tolerated differences) between a regenerated and a committed text.

    ``differences`` is empty when the texts match under the rule of this module; ``tolerated``
    lists the numbers that differ within the allowed units (worth printing: host noise).
    """
    if fresh == committed:
        return [], []
    fresh_parts, fresh_numbers = _split(fresh)
    committed_parts, committed_numbers = _split(committed)
    if fresh_parts != committed_parts:
        diff = difflib.unified_diff(committed.splitlines(), fresh.splitlines(), "committed",
                                    "regenerated", lineterm="", n=0)
        return ["text differs:\n" + "\n".join(list(diff)[:40])], []
    differences, tolerated = [], []
    fresh_lines = fresh.splitlines()
    committed_lines = committed.splitlines()
    for i, (new, old) in enumerate(zip(fresh_numbers, committed_numbers)):
        if new == old:
            continue
        line = _line_of(fresh_parts, fresh_numbers, i)
        what = f"line {line}: {old} -> {new}"
        if number_within(new, old, last_digit_units, min_decimals):
            tolerated.append(what)
        else:
            differences.append(f"{what}\n  committed:   {committed_lines[line - 1]}\n"
                               f"  regenerated: {fresh_lines[line - 1]}")
    return differences, tolerated


def stale_files(fresh: Mapping[str, str], committed: Mapping[str, str], **rule) -> dict:
    """Compare folders of Markdown given as {name: text}.

    Returns ``{"missing": [...], "extra": [...], "changed": {name: [differences]},
    "tolerated": {name: [differences]}}``: files generated but not committed, committed but no
    longer generated, and the differences of the others (``rule``: the keyword arguments of
    :func:`markdown_differences`).
    """
    changed, tolerated = {}, {}
    for name in sorted(set(fresh) & set(committed)):
        diffs, ok = markdown_differences(fresh[name], committed[name], **rule)
        if diffs:
            changed[name] = diffs
        if ok:
            tolerated[name] = ok
    return {"missing": sorted(set(fresh) - set(committed)),
            "extra": sorted(set(committed) - set(fresh)),
            "changed": changed, "tolerated": tolerated}


def describe(report: dict) -> str:
    """A readable account of :func:`stale_files`' report (for assertion messages)."""
    lines = []
    if report["missing"]:
        lines.append(f"generated but not committed: {report['missing']}")
    if report["extra"]:
        lines.append(f"committed but no longer generated: {report['extra']}")
    for name, diffs in report["changed"].items():
        lines.append(f"{name}:")
        lines += [f"  {d}" for d in diffs]
    return "\n".join(lines)


def read_markdown(folder: Path) -> dict[str, str]:
    """``{name: text}`` of the ``*.md`` files directly in ``folder`` (UTF-8, line endings kept:
    with no tolerance the comparison is byte for byte)."""
    return {p.name: p.read_bytes().decode("utf-8") for p in sorted(folder.glob("*.md"))}
