"""Griffe extension: reStructuredText markup left in a docstring is shown as Markdown on the site.

storyeval's docstrings are numpydoc with Markdown inside: cross-references as
``[`name`][storyeval.module.name]`` (mkdocs-autorefs), formulas as ``$...$`` and ``$$...$$``
(pymdownx.arithmatex), references as a numbered list. A docstring that still uses the Sphinx
forms would otherwise show them literally on the API page, so when the site is built this
extension rewrites, in the loaded docstrings only (the source is not touched):

- a role (``:func:`x```, ``:class:`~a.b```, ``:meth:``, ``:attr:``, ``:data:``, ``:mod:``,
  ``:obj:``, ``:exc:``, optionally ``:py:``-prefixed) as inline code, without a link;
- ``:math:`x``` as ``$x$``, a ``.. math::`` directive as a ``$$`` block;
- ``.. [1] text`` as the list item ``1. text`` and a citation ``[1]_`` as ``[1]``;
- the literal-block marker ``text::`` as ``text:``.

It logs (INFO, so ``mkdocs build --strict`` still passes) which objects needed it: those
docstrings are best converted in the source, where a role can become a real link.
:func:`convert` is the same rewriting as a function; ``link`` lets a caller turn a role into a
cross-reference instead of inline code.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

try:  # the docs build has griffe; convert() itself needs only the standard library
    import griffe
except ImportError:  # pragma: no cover
    griffe = None

ROLES = ("func", "class", "meth", "attr", "data", "mod", "obj", "exc")
ROLE = re.compile(r":(?:py:)?(?P<role>" + "|".join(ROLES) + r"):`(?P<target>[^`]+)`")
MATH_ROLE = re.compile(r":math:`(?P<tex>[^`]+)`")
MATH_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<rest>.*)$")
FOOTNOTE = re.compile(r"^(?P<indent>[ \t]*)\.\. \[(?P<label>[0-9]+|#\w*)\][ \t]+(?P<text>.*)$")
CITATION = re.compile(r"\[(?P<label>[0-9]+)\]_")
LITERAL_MARKER = re.compile(r"(?<=\S)::[ \t]*$")

#: ``link(role, target, display)`` returns the Markdown of a cross-reference, or None for
#: inline code; ``target`` has no ``~`` and ``display`` is what Sphinx would show.
Linker = Callable[[str, str, str], "str | None"]

_logger = logging.getLogger("mkdocs.plugins.storyeval.griffe_sphinx")


def _role(match: re.Match[str], link: Linker | None) -> str:
    role, target = match["role"], match["target"].strip()
    explicit = re.fullmatch(r"(?P<title>.+?)\s*<(?P<target>[^<>]+)>", target)
    if explicit:
        display, target = explicit["title"], explicit["target"]
    else:
        target = target.lstrip("!")
        short = target.startswith("~")
        target = target.lstrip("~")
        display = target.rsplit(".", 1)[-1] if short else target
    target = target.lstrip(".")
    made = link(role, target, display) if link else None
    return made if made is not None else f"`{display}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _math_blocks(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        match = MATH_DIRECTIVE.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        indent, base = match["indent"], _indent(lines[i])
        body = [match["rest"]] if match["rest"].strip() else []
        # The first line's continuation lines line up under its text, deeper than the directive.
        first_col = lines[i].index(match["rest"]) if body else None
        i += 1
        if not body:  # ".. math::", a blank line, then the indented formula
            while i < len(lines) and not lines[i].strip():
                i += 1
        block: list[str] = []
        while i < len(lines) and (not lines[i].strip() and not body
                                  or lines[i].strip() and _indent(lines[i]) > base):
            block.append(lines[i])
            i += 1
            if body and i < len(lines) and not lines[i].strip():
                break
        while block and not block[-1].strip():
            block.pop()
        deeper = [_indent(line) for line in block if line.strip()]
        cut = min(deeper + ([first_col] if first_col is not None else [])) if deeper else 0
        formula = body + [line[cut:] if line.strip() else "" for line in block]
        if out and out[-1].strip():
            out.append("")
        out.extend([f"{indent}$$", *(f"{indent}{line}".rstrip() for line in formula),
                    f"{indent}$$"])
        if i < len(lines) and lines[i].strip():
            out.append("")
    return out


def _footnotes(lines: list[str]) -> list[str]:
    out: list[str] = []
    in_item, item_indent = False, 0
    for line in lines:
        match = FOOTNOTE.match(line)
        if match:
            label = match["label"] if match["label"][0].isdigit() else "1"
            out.append(f"{match['indent']}{label}. {match['text']}")
            in_item, item_indent = True, _indent(line)
        elif in_item and line.strip() and _indent(line) > item_indent:
            out.append(" " * (item_indent + 3) + line.strip())
        else:
            in_item = False
            out.append(line)
    return out


def convert(text: str, link: Linker | None = None) -> str:
    """``text`` with its reStructuredText roles, math, footnotes and ``::`` as Markdown."""
    text = MATH_ROLE.sub(lambda m: f"${m['tex'].strip()}$", text)
    text = ROLE.sub(lambda m: _role(m, link), text)
    text = CITATION.sub(r"[\g<label>]", text)
    lines = _footnotes(_math_blocks(text.split("\n")))
    lines = [LITERAL_MARKER.sub(":", line) if not line.lstrip().startswith(("..", ">>>", "..."))
             else line for line in lines]
    return "\n".join(lines)


def has_sphinx_markup(text: str) -> bool:
    """Whether ``text`` has any of the markup :func:`convert` rewrites."""
    return bool(ROLE.search(text) or MATH_ROLE.search(text) or CITATION.search(text)
                or any(MATH_DIRECTIVE.match(line) or FOOTNOTE.match(line)
                       for line in text.split("\n")))


if griffe is not None:

    class SphinxMarkup(griffe.Extension):
        """Rewrite the reStructuredText left in docstrings when the API pages are built."""

        def __init__(self) -> None:
            super().__init__()
            self.converted: list[str] = []

        def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
            docstring = obj.docstring
            if docstring is not None and has_sphinx_markup(docstring.value):
                docstring.value = convert(docstring.value)
                self.converted.append(obj.path)

        def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
            mine = [p for p in self.converted if p.split(".")[0] == pkg.name]
            if mine:
                _logger.info("reStructuredText markup shown as Markdown in %d docstrings of "
                             "%s (convert them in the source): %s", len(mine), pkg.name,
                             ", ".join(mine))
