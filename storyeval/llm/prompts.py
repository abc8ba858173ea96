"""Eval-Prompt templates, criterion guidelines and message rendering.

The templates and guidelines are packaged data files (``storyeval/llm/templates/*.json``) that a
user can copy, edit and pass back (``load_templates(path)``, ``load_guidelines(path)``,
``storyeval rate --templates FILE --guidelines FILE``). Each file carries a ``name`` and a
``version`` that are recorded with every rating.
"""

from __future__ import annotations

import functools
import json
import string
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from storyeval.data.criteria import CRITERIA, CRITERION_CODES, CRITERION_DEFINITIONS
from storyeval.exceptions import InputError

__all__ = [
    "TEMPLATE_FIELDS",
    "CriterionSpec",
    "Guidelines",
    "PromptTemplates",
    "format_guidelines",
    "load_criteria",
    "load_guidelines",
    "load_templates",
    "render_messages",
]

#: Placeholders a template may use.
TEMPLATE_FIELDS = frozenset(
    {"prompt", "story", "criterion", "definition", "guidelines", "reference", "scale_min",
     "scale_max", "code"}
)


@functools.lru_cache(maxsize=256)
def _fields(text: str) -> frozenset[str]:
    return frozenset(f for _, f, _, _ in string.Formatter().parse(text) if f)


@dataclass(frozen=True)
class CriterionSpec:
    """One criterion: full name, short code (used in measure names) and definition."""

    name: str
    code: str
    definition: str


@dataclass(frozen=True)
class PromptTemplates:
    """A set of Eval-Prompts: ``eval_prompts[k] = {"system": str | None, "user": str}``."""

    name: str
    version: str
    scale: tuple[int, int]
    eval_prompts: dict[int, dict[str, Any]]
    source: str = "<packaged>"

    def fields(self, eval_prompt: int) -> frozenset[str]:
        """Placeholders used by Eval-Prompt ``eval_prompt`` (system and user messages)."""
        spec = self.eval_prompts[eval_prompt]
        return _fields(spec.get("system") or "") | _fields(spec["user"])


@dataclass(frozen=True)
class Guidelines:
    """Per-criterion descriptors: ``criteria[name][level] = text``."""

    name: str
    version: str
    criteria: dict[str, dict[int, str]]
    sources: dict[str, dict[int, str]] = field(default_factory=dict)
    source: str = "<packaged>"


def _read_json(path: str | Path | None, default: str, what: str) -> tuple[dict, str]:
    if path is None:
        text = resources.files("storyeval.llm").joinpath("templates").joinpath(default).read_text("utf-8")
        return json.loads(text), f"<packaged {default}>"
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} file {str(p)!r} does not exist")
    try:
        return json.loads(p.read_text("utf-8")), str(p)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what} file {str(p)!r} is not valid JSON: {exc}") from None


def load_templates(path: str | Path | None = None) -> PromptTemplates:
    """Load Eval-Prompt templates (the packaged HANNA wording when ``path`` is None).

    Parameters
    ----------
    path : str or Path, optional
        A JSON file shaped like ``storyeval/llm/templates/eval_prompts.json``: keys ``name``,
        ``version``, ``scale`` (``[min, max]``) and ``eval_prompts`` mapping ``"1"``.. to
        ``{"system": str or null, "user": str}``. Templates use ``str.format`` placeholders
        among `TEMPLATE_FIELDS`; a literal brace is written ``{{`` or ``}}``.

    Returns
    -------
    PromptTemplates

    Raises
    ------
    InputError
        Missing keys, an unknown placeholder, a bad scale; the message names the file and key.

    Examples
    --------
    >>> t = load_templates()
    >>> sorted(t.eval_prompts)
    [1, 2, 3, 4]
    """
    data, src = _read_json(path, "eval_prompts.json", "templates")
    for key in ("name", "version", "eval_prompts"):
        if key not in data:
            raise InputError(f"templates file {src}: missing key {key!r}")
    scale = data.get("scale", [1, 5])
    if (not isinstance(scale, list) or len(scale) != 2
            or not all(isinstance(s, int) for s in scale) or scale[0] >= scale[1]):
        raise InputError(f"templates file {src}: 'scale' must be [min, max] integers, got {scale!r}")
    eps: dict[int, dict[str, Any]] = {}
    for k, spec in data["eval_prompts"].items():
        try:
            num = int(k)
        except ValueError:
            raise InputError(f"templates file {src}: Eval-Prompt key {k!r} is not an integer") from None
        if not isinstance(spec, dict) or not isinstance(spec.get("user"), str):
            raise InputError(f"templates file {src}: eval_prompts[{k!r}] needs a 'user' string")
        for part in ("system", "user"):
            text = spec.get(part)
            if text is None:
                continue
            try:
                used = {f for _, f, _, _ in string.Formatter().parse(text) if f is not None}
            except ValueError as exc:
                raise InputError(f"templates file {src}: eval_prompts[{k!r}].{part}: {exc}") from None
            unknown = {u for u in used if u not in TEMPLATE_FIELDS}
            if unknown or "" in used:
                raise InputError(
                    f"templates file {src}: eval_prompts[{k!r}].{part} uses unknown placeholder(s) "
                    f"{sorted(unknown) or ['{}']}; allowed: {sorted(TEMPLATE_FIELDS)}")
        eps[num] = {"system": spec.get("system"), "user": spec["user"],
                    "description": spec.get("description", "")}
    if not eps:
        raise InputError(f"templates file {src}: 'eval_prompts' is empty")
    return PromptTemplates(name=str(data["name"]), version=str(data["version"]),
                           scale=(scale[0], scale[1]), eval_prompts=eps, source=src)


def load_guidelines(path: str | Path | None = None) -> Guidelines:
    """Load per-criterion guidelines (the packaged file when ``path`` is None).

    The file maps ``criteria[name][level]`` to ``{"text": ..., "source": ...}`` or to a plain
    string. The packaged file marks each descriptor's origin (``paper``, ``user_study`` or
    ``storyeval`` for storyeval's own wording where the original is not public).
    """
    data, src = _read_json(path, "guidelines.json", "guidelines")
    if "criteria" not in data or not isinstance(data["criteria"], dict):
        raise InputError(f"guidelines file {src}: missing object 'criteria'")
    crits: dict[str, dict[int, str]] = {}
    sources: dict[str, dict[int, str]] = {}
    for name, levels in data["criteria"].items():
        if not isinstance(levels, dict) or not levels:
            raise InputError(f"guidelines file {src}: criteria[{name!r}] must map levels to texts")
        crits[name], sources[name] = {}, {}
        for lvl, val in levels.items():
            try:
                ilvl = int(lvl)
            except ValueError:
                raise InputError(f"guidelines file {src}: criteria[{name!r}] level {lvl!r} "
                                 "is not an integer") from None
            text = val.get("text") if isinstance(val, dict) else val
            if not isinstance(text, str) or not text.strip():
                raise InputError(f"guidelines file {src}: criteria[{name!r}][{lvl!r}] has no text")
            crits[name][ilvl] = text
            sources[name][ilvl] = val.get("source", "") if isinstance(val, dict) else ""
    return Guidelines(name=str(data.get("name", Path(src).stem)), version=str(data.get("version", "")),
                      criteria=crits, sources=sources, source=src)


def load_criteria(path: str | Path | None = None) -> dict[str, CriterionSpec]:
    """Criteria to rate: HANNA's six (``storyeval.data.criteria``) or a user JSON file.

    The file maps each criterion name to ``{"code": "XX", "definition": "..."}``; the code is
    used in measure names (``"{model} {code} {eval_prompt}"``) and must be unique.
    """
    if path is None:
        return {c: CriterionSpec(c, CRITERION_CODES[c], CRITERION_DEFINITIONS[c]) for c in CRITERIA}
    data, src = _read_json(path, "", "criteria")
    if not isinstance(data, dict) or not data:
        raise InputError(f"criteria file {src}: expected an object name -> {{code, definition}}")
    out: dict[str, CriterionSpec] = {}
    for name, spec in data.items():
        if not isinstance(spec, dict) or not spec.get("code") or not spec.get("definition"):
            raise InputError(f"criteria file {src}: {name!r} needs 'code' and 'definition'")
        code = str(spec["code"])
        if any(code == s.code for s in out.values()) or " " in code:
            raise InputError(f"criteria file {src}: code {code!r} of {name!r} is repeated or has a space")
        out[name] = CriterionSpec(name, code, str(spec["definition"]))
    return out


def format_guidelines(guidelines: Guidelines, criterion: str) -> str:
    """The descriptor lines of ``criterion`` as shown to the model: ``"1 — text"`` per level."""
    levels = guidelines.criteria.get(criterion)
    if levels is None:
        raise InputError(f"guidelines {guidelines.source}: no guidelines for criterion {criterion!r}; "
                         f"available: {sorted(guidelines.criteria)}")
    return "\n".join(f"{lvl} \u2014 {levels[lvl]}" for lvl in sorted(levels))


def render_messages(
    *,
    prompt: str,
    story: str,
    criterion: CriterionSpec,
    eval_prompt: int,
    templates: PromptTemplates,
    guidelines: Guidelines | None = None,
    reference: str | None = None,
) -> list[dict[str, str]]:
    """Chat messages for one (story, criterion, Eval-Prompt).

    Returns ``[{"role": "system", ...}?, {"role": "user", "content": ...}]``.

    Raises
    ------
    InputError
        Unknown Eval-Prompt; guidelines or reference needed but missing.

    Examples
    --------
    >>> from storyeval.llm.prompts import load_criteria
    >>> m = render_messages(prompt="P", story="S", criterion=load_criteria()["Surprise"],
    ...                     eval_prompt=1, templates=load_templates())
    >>> m[0]["content"].endswith("(how surprising the end of the story was). Rating:")
    True
    """
    spec = templates.eval_prompts.get(eval_prompt)
    if spec is None:
        raise InputError(f"eval_prompt {eval_prompt} is not defined in templates {templates.source}; "
                         f"available: {sorted(templates.eval_prompts)}")
    used = templates.fields(eval_prompt)
    values: dict[str, Any] = {
        "prompt": prompt, "story": story, "criterion": criterion.name,
        "definition": criterion.definition, "code": criterion.code,
        "scale_min": templates.scale[0], "scale_max": templates.scale[1],
    }
    if "guidelines" in used:
        if guidelines is None:
            raise InputError(f"Eval-Prompt {eval_prompt} uses {{guidelines}} but no guidelines were given")
        values["guidelines"] = format_guidelines(guidelines, criterion.name)
    if "reference" in used:
        if reference is None or (isinstance(reference, float)) or not str(reference).strip():
            raise InputError(f"Eval-Prompt {eval_prompt} uses {{reference}} (the human story) but the "
                             "story has no 'reference'")
        values["reference"] = reference
    msgs = []
    if spec.get("system"):
        msgs.append({"role": "system", "content": spec["system"].format(**values)})
    msgs.append({"role": "user", "content": spec["user"].format(**values)})
    return msgs
