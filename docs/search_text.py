"""MkDocs hook: formulas in the search index as readable text, not TeX source.

The pages keep their TeX for KaTeX to typeset in the browser, so the search index (built from
the pages' HTML) would show ``\\(\\rho_{12} = \\rho_{13}\\)`` in its snippets. After the build,
this hook rewrites every formula of ``search/search_index.json`` (and of the
``search_index.js`` copy that the offline plugin writes for file://) as plain text:
``ρ12 = ρ13``. Hooks run after the plugins, so both files exist by then.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε",
    "varepsilon": "ε", "theta": "θ", "lambda": "λ", "mu": "μ", "nu": "ν", "pi": "π",
    "rho": "ρ", "sigma": "σ", "Sigma": "Σ", "tau": "τ", "phi": "φ", "chi": "χ", "omega": "ω",
    "sum": "Σ", "prod": "Π", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠",
    "neq": "≠", "approx": "≈", "pm": "±", "times": "×", "cdot": "·", "in": "∈", "infty": "∞",
    "to": "→", "rightarrow": "→", "ldots": "…", "dots": "…", "cdots": "⋯", "sim": "~",
    "quad": " ", "qquad": " ", "mid": "|", "lvert": "|", "rvert": "|", "vert": "|",
}
_MATH = re.compile(r"\\\((.+?)\\\)|\\\[(.+?)\\\]|\$\$(.+?)\$\$", re.S)


def tex_to_text(tex: str) -> str:
    """A TeX formula as plain text: fractions as (a)/(b), roots as √(...), Greek letters and
    relations as Unicode, indices as ``r_12^2``, other commands and braces dropped."""
    text = re.sub(r"\\left|\\right|\\[bB]igg?[lr]?|\\,|\\;|\\!|\\ ", " ", tex)
    for _ in range(8):  # innermost braces first: nested fractions, roots and indices
        before = text
        text = re.sub(r"([_^])\{([^{}]*)\}",
                      lambda m: m.group(1) + (m.group(2) if re.fullmatch(r"\w+", m.group(2))
                                              else f"({m.group(2)})"), text)
        text = re.sub(r"\\sqrt\s*\{([^{}]*)\}", r"√(\1)", text)
        text = re.sub(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r"(\1)/(\2)", text)
        text = re.sub(r"\\(?:text|mathrm|mathbf|mathit|operatorname|hat|bar|tilde|overline)"
                      r"\s*\{([^{}]*)\}", r"\1", text)
        if text == before:
            break
    text = re.sub(r"\\([A-Za-z]+)", lambda m: SYMBOLS.get(m.group(1), m.group(1)), text)
    text = text.replace("{", "").replace("}", "").replace("\\\\", " ")
    return " ".join(text.split())


def clean_text(text: str) -> str:
    """``text`` with every ``\\(...\\)``, ``\\[...\\]`` and ``$$...$$`` formula as plain text."""
    return _MATH.sub(lambda m: tex_to_text(next(g for g in m.groups() if g is not None)), text)


def _clean_index(index: dict[str, Any]) -> dict[str, Any]:
    for doc in index.get("docs", []):
        for key in ("title", "text"):
            if isinstance(doc.get(key), str):
                doc[key] = clean_text(doc[key])
    return index


def on_post_build(config: Any) -> None:
    folder = Path(config["site_dir"]) / "search"
    plain = folder / "search_index.json"
    if plain.is_file():
        index = _clean_index(json.loads(plain.read_text(encoding="utf-8")))
        plain.write_text(json.dumps(index, ensure_ascii=False, separators=(",", ":")),
                         encoding="utf-8")
    script = folder / "search_index.js"
    if script.is_file():  # "var __index = {...}" or similar: the JSON between the braces
        text = script.read_text(encoding="utf-8")
        start, end = text.index("{"), text.rindex("}") + 1
        index = _clean_index(json.loads(text[start:end]))
        script.write_text(text[:start] + json.dumps(index, ensure_ascii=False,
                                                    separators=(",", ":")) + text[end:],
                          encoding="utf-8")
