"""Side-by-side LLM judging prompt (dimensions of Agents' Room, paper 000) and its answer parser.

The template and the dimension descriptions are plain data files in
``storyeval/pairwise/templates/`` (``side_by_side.txt``, ``side_by_side_dimensions.json``) so they
can be edited or replaced without touching code. [`render_side_by_side`][] returns a plain
string, usable as the user message of any chat backend (e.g. the LLM raters' backends), and
[`parse_side_by_side`][] turns the model's answer into verdicts in the story convention of
`storyeval.pairwise.verdicts` (``"A"`` = the story shown as "Story A").
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from string import Template

from storyeval.exceptions import InputError

__all__ = [
    "DIMENSIONS_FILE",
    "TEMPLATE_FILE",
    "load_dimensions",
    "parse_side_by_side",
    "render_side_by_side",
    "side_by_side_messages",
    "verdict_records",
]

TEMPLATE_FILE = "side_by_side.txt"
DIMENSIONS_FILE = "side_by_side_dimensions.json"
_ENDING = "Based on my assessment, the better story for each dimension is:"


def _read_data(name: str) -> str:
    return resources.files("storyeval.pairwise").joinpath("templates", name).read_text("utf-8")


def load_dimensions(path: str | Path | None = None) -> dict[str, str]:
    """Dimension name -> description, in order, plus the overall line's name under key
    ``"__overall__"`` (``"Overall"``; absent if the file sets ``"overall": null``).

    Parameters
    ----------
    path : str or Path, optional
        A JSON file like ``templates/side_by_side_dimensions.json`` (default: that file).
    """
    text = Path(path).read_text("utf-8") if path is not None else _read_data(DIMENSIONS_FILE)
    try:
        data = json.loads(text)
        dims = {str(d["name"]): str(d["description"]) for d in data["dimensions"]}
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"dimension file {path or DIMENSIONS_FILE}: expected "
                         "{'dimensions': [{'name': ..., 'description': ...}], 'overall': ...}; "
                         f"{exc}") from exc
    if not dims:
        raise InputError(f"dimension file {path or DIMENSIONS_FILE} lists no dimension")
    if data.get("overall"):
        dims["__overall__"] = str(data["overall"])
    return dims


def render_side_by_side(
    prompt: str,
    story_a: str,
    story_b: str,
    *,
    dimensions: Sequence[str] | None = None,
    overall: bool = True,
    template: str | Path | None = None,
    dimensions_file: str | Path | None = None,
) -> str:
    """The side-by-side judging prompt for one pair of stories.

    Parameters
    ----------
    prompt : str
        The writing prompt both stories answer.
    story_a, story_b : str
        The stories, in the order they are shown (judge each pair in both orders).
    dimensions : sequence of str, optional
        A subset of the dimension names in the dimensions file (default: all four of paper 000:
        Plot, Creativity, Development, Language Use).
    overall : bool, default True
        Also ask for an overall preference line.
    template : str or Path, optional
        A template file with ``$dimensions``, ``$answer_lines``, ``$prompt``, ``$story_a``,
        ``$story_b`` placeholders (``string.Template`` syntax; braces and dollar signs in the
        stories are inserted verbatim). Default: ``templates/side_by_side.txt``.
    dimensions_file : str or Path, optional
        See `load_dimensions`.

    Returns
    -------
    str

    Examples
    --------
    >>> text = render_side_by_side("A dragon opens a bakery.", "Story one.", "Story two.")
    >>> "Language Use: [A or B or Same]" in text and text.rstrip().endswith("[Assessment]")
    True
    """
    for name, val in (("prompt", prompt), ("story_a", story_a), ("story_b", story_b)):
        if not isinstance(val, str) or not val.strip():
            raise InputError(f"{name} must be a non-empty string")
    table = load_dimensions(dimensions_file)
    overall_name = table.pop("__overall__", None)
    names = list(table) if dimensions is None else list(dimensions)
    unknown = [d for d in names if d not in table]
    if unknown:
        raise InputError(f"unknown dimension(s) {unknown}; available: {list(table)}")
    if not names:
        raise InputError("dimensions is empty")
    text = Path(template).read_text("utf-8") if template is not None else _read_data(TEMPLATE_FILE)
    block = "\n".join(f"- {d}: {table[d]}" for d in names)
    answer = [*names, *([overall_name] if overall and overall_name else [])]
    lines = "\n".join(f"{d}: [A or B or Same]" for d in answer)
    try:
        return Template(text).substitute(dimensions=block, answer_lines=lines, prompt=prompt,
                                         story_a=story_a, story_b=story_b)
    except (KeyError, ValueError) as exc:
        raise InputError(f"template {template or TEMPLATE_FILE}: bad placeholder {exc}") from exc


def parse_side_by_side(text: str, dimensions: Sequence[str]) -> dict[str, str | None]:
    """Verdicts from a side-by-side answer: dimension -> ``"A"``, ``"B"``, ``"same"`` or None.

    Only the lines after the last "Based on my assessment..." marker are read (the whole text
    if the marker is missing); for each dimension the last line ``<dimension>: A|B|Same``
    (case-insensitive, optional brackets or emphasis marks) wins. A dimension without a
    readable verdict maps to None: record it as a failure, do not guess.

    Examples
    --------
    >>> answer = "... is:\\nPlot: A\\nCreativity: same\\n"
    >>> parse_side_by_side(answer, ["Plot", "Creativity", "Overall"])
    {'Plot': 'A', 'Creativity': 'same', 'Overall': None}
    """
    if not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}")
    pos = text.lower().rfind(_ENDING.lower())
    tail = text[pos + len(_ENDING):] if pos >= 0 else text
    out: dict[str, str | None] = {}
    for dim in dimensions:
        pat = re.compile(rf"^[\s*_#-]*{re.escape(dim)}[\s*_]*:[\s*_\[]*(A|B|Same)\b[\s*_\]]*$",
                         re.IGNORECASE | re.MULTILINE)
        found = pat.findall(tail)
        if not found:
            out[dim] = None
        else:
            v = found[-1].lower()
            out[dim] = "same" if v == "same" else v.upper()
    return out


def side_by_side_messages(prompt: str, first: str, second: str, **options) -> tuple[dict, ...]:
    """The judging prompt as chat messages (one user message), the ``messages`` of a chat
    request such as ``storyeval.llm.backends.Request``.

    ``first`` is shown as "Story A", ``second`` as "Story B"; ``options`` go to
    [`render_side_by_side`][]. The assessment comes before the verdict block, so allow a
    generous ``max_tokens`` (about 1,000).

    Examples
    --------
    >>> side_by_side_messages("p", "a", "b")[0]["role"]
    'user'
    """
    return ({"role": "user", "content": render_side_by_side(prompt, first, second, **options)},)


def verdict_records(
    parsed: dict[str, str | None],
    *,
    prompt_id,
    first: str,
    second: str,
    judge: str,
) -> list[dict]:
    """Rows of a verdict table from one parsed answer.

    Parameters
    ----------
    parsed : dict
        Output of [`parse_side_by_side`][].
    prompt_id : any
        The prompt of the pair.
    first, second : str
        Story ids shown as "Story A" and "Story B".
    judge : str
        The judge's label (model name and template version, say).

    Returns
    -------
    list of dict
        One row per dimension with a verdict (``story_a = first``, ``order = "AB"``); dimensions
        whose verdict could not be read are left out, so count them as failures from ``parsed``.

    Examples
    --------
    >>> verdict_records({"Plot": "B", "Overall": None}, prompt_id=3, first="X/3", second="Y/3",
    ...                 judge="llm")[0]["verdict"]
    'B'
    """
    return [{"prompt_id": prompt_id, "story_a": first, "story_b": second, "dimension": dim,
             "verdict": verdict, "order": "AB", "judge": judge}
            for dim, verdict in parsed.items() if verdict is not None]
