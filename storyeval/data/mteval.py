"""Interchange with google-research/mt-metrics-eval (the WMT metrics task): score files and
level names.

**Score files.** mt-metrics-eval keeps one folder per test set, holding
``human-scores/LP.NAME.LEVEL.score`` (gold scores) and
``metric-scores/LP/NAME-REF.LEVEL.score`` (metric scores), ``LP`` a language pair such as
``en-de``, ``LEVEL`` one of ``sys``, ``domain``, ``doc``, ``seg``, ``REF`` the references used
(``src``: none). Each line is ``SYSNAME SCORE`` (``None`` marks a missing human score); a
``seg`` or ``doc`` file holds one block per system, the segments (documents) in the test
set's order. storyeval reads the ``seg`` (or ``doc``) files as stories: system = SYSNAME,
prompt_id = position within the system's block (0-based), a human file's NAME a criterion, a
metric file's ``NAME-REF`` a measure (`read_mteval`). `write_mteval` writes a score table in
that layout (``seg`` files of the stories, ``sys`` files of the system means), so that
mt-metrics-eval can evaluate storyeval's data and metrics.

**Level names.** `resolve_level` maps the names used by WMT, summarization and judge
evaluation onto storyeval's three levels (`LEVEL_ALIASES`; the docs print the table).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval.data.level_names import LEVEL_ALIASES, resolve_level
from storyeval.exceptions import InputError

__all__ = [
    "LEVEL_ALIASES",
    "level_vocabulary",
    "read_mteval",
    "read_score_file",
    "resolve_level",
    "write_mteval",
]

# (storyeval level, what is correlated, mt-metrics-eval / WMT, summarization)
_VOCABULARY = [
    ("overall", "every story's scores, pooled (one coefficient)",
     "segment-level, no grouping (average_by='none'), 'global'",
     "pooled over all summaries"),
    ("prompt", "within each prompt over its systems' stories, averaged over prompts",
     "segment-level grouped by item (average_by='item'), 'item'",
     "summary-level (per input document)"),
    ("system", "the systems' mean scores",
     "system-level (sys files)", "system-level"),
]


def level_vocabulary() -> pd.DataFrame:
    """The table of level names across communities (printed in the docs)."""
    aliases = {lev: ", ".join(sorted(k for k, v in LEVEL_ALIASES.items() if v == lev and k != lev))
               for lev, *_ in _VOCABULARY}
    return pd.DataFrame({
        "storyeval level": [row[0] for row in _VOCABULARY],
        "what is correlated": [row[1] for row in _VOCABULARY],
        "mt-metrics-eval / WMT": [row[2] for row in _VOCABULARY],
        "summarization": [row[3] for row in _VOCABULARY],
        "accepted aliases": [aliases[row[0]] for row in _VOCABULARY],
    })


# --------------------------------------------------------------------------------------------
# reading


def read_score_file(path: str | Path) -> pd.DataFrame:
    """One mt-metrics-eval score file (``SYSNAME SCORE`` per line) as a table ``system, item,
    score``: ``item`` is the line's position within its system's block (0-based), ``None`` a
    NaN. InputError names the file and line of a malformed line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read score file {path}: {exc}") from exc
    systems, scores = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2:
            raise InputError(f"{path}, line {number}: expected 'SYSNAME SCORE', got {line!r} "
                             "(domain-level files are not read)")
        try:
            value = np.nan if parts[1] == "None" else float(parts[1])
        except ValueError as exc:
            raise InputError(f"{path}, line {number}: score {parts[1]!r} is not a number or "
                             "'None'") from exc
        systems.append(parts[0])
        scores.append(value)
    frame = pd.DataFrame({"system": systems, "score": np.asarray(scores, dtype=np.float64)})
    frame.insert(1, "item", frame.groupby("system", sort=False).cumcount())
    return frame


def _score_files(folder: Path, pattern: str) -> list[Path]:
    return sorted(p for p in folder.glob(pattern) if p.is_file())


def read_mteval(root: str | Path, lp: str, *, level: str = "seg", name: str | None = None):
    """A [`Dataset`][storyeval.data.dataset.Dataset] from an mt-metrics-eval test-set folder.

    Every human score file becomes a criterion (``NAME``), every metric score file a measure
    (``NAME-REF``). Systems must have the same number of lines in every file; a missing human
    score (``None``) is a NaN.

    Parameters
    ----------
    root : path
        The test set's folder (holding ``human-scores/`` and ``metric-scores/``).
    lp : str
        The language pair (file-name prefix), e.g. ``en-de``.
    level : {"seg", "doc"}
        Which files: segments or documents become the stories' prompts.
    name : str, optional
        The dataset's name (default: the folder's name and ``lp``).
    """
    from storyeval.data.wide import wide_to_dataset

    root = Path(root)
    if level not in ("seg", "doc"):
        raise InputError(f"level must be 'seg' or 'doc' (stories), got {level!r}")
    human = _score_files(root / "human-scores", f"{lp}.*.{level}.score")
    metric = _score_files(root / "metric-scores" / lp, f"*.{level}.score")
    if not human:
        raise InputError(f"no human score files {root / 'human-scores'}/{lp}.NAME.{level}.score")
    if not metric:
        raise InputError(f"no metric score files {root / 'metric-scores' / lp}/NAME-REF."
                         f"{level}.score")
    columns: dict[str, pd.Series] = {}
    criteria = []
    names = _storyeval_names(root)  # what write_mteval renamed, restored
    suffix = f".{level}.score"
    for path in human:
        stem = path.name[:-len(suffix)]
        crit = names.get(("human", stem), stem[len(lp) + 1:])
        criteria.append(crit)
        columns[crit] = _indexed(path)
    for path in metric:
        stem = path.name[:-len(suffix)]
        columns[names.get(("metric", stem), stem)] = _indexed(path)
    systems = {k[1]: v for k, v in names.items() if k[0] == "system"}
    if systems:
        for key, series in columns.items():
            columns[key] = series.rename(index=lambda s: systems.get(s, s), level=0)
    index = next(iter(columns.values())).index
    for col, series in columns.items():
        if not series.index.equals(index):
            raise InputError(f"score file of {col!r} covers other (system, item) rows than the "
                             f"first file ({len(series)} vs {len(index)} lines)")
    frame = pd.DataFrame(columns, index=index).reset_index()
    return wide_to_dataset(frame, criteria=criteria, name=name or f"{root.name} {lp}",
                           source=str(root))


NAMES_FILE = "storyeval-names.tsv"


def _storyeval_names(root: Path) -> dict[tuple[str, str], str]:
    """``{(kind, file or system name): storyeval name}`` from the names file `write_mteval`
    writes beside the scores (empty when there is none: a folder mt-metrics-eval made)."""
    path = root / NAMES_FILE
    if not path.is_file():
        return {}
    table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    if list(table.columns) != ["file", "kind", "storyeval_name"]:
        raise InputError(f"{path}: expected the columns file, kind, storyeval_name")
    return {(k, f): n for f, k, n in table.itertuples(index=False)}


def _indexed(path: Path) -> pd.Series:
    table = read_score_file(path)
    return table.set_index(["system", "item"])["score"].rename_axis(["system", "prompt_id"])


# --------------------------------------------------------------------------------------------
# writing


def _file_name(name: str, what: str, forbidden: str) -> str:
    """A file-name-safe version of a measure or criterion name (whitespace, '/' and
    ``forbidden`` characters become '_')."""
    safe = re.sub(rf"[\s/{re.escape(forbidden)}]+", "_", str(name)).strip("_")
    if not safe:
        raise InputError(f"{what} name {name!r} leaves no file name")
    return safe


def _format(value: float, what: str, row: str) -> str:
    if np.isnan(value):
        if what == "metric":
            raise InputError(f"mt-metrics-eval metric files allow no missing score: {row}")
        return "None"
    # 15 significant digits: a decimal score with up to 15 digits is written as given, and a
    # computed one loses its last-bit noise (a mean 2.3310000000000004 is written 2.331)
    return f"{float(value):.15g}"


def write_mteval(
    wide: pd.DataFrame,
    root: str | Path,
    lp: str,
    *,
    criteria: Sequence[str],
    measures: Sequence[str],
    ref: str = "src",
) -> list[Path]:
    """Write a score table in mt-metrics-eval's layout under ``root`` (a test-set folder).

    ``wide`` is indexed ``(system, prompt_id)`` (``Dataset.wide()``); every system needs the
    same prompts. Writes ``human-scores/LP.CRIT.{seg,sys}.score`` per criterion and
    ``metric-scores/LP/MEASURE-REF.{seg,sys}.score`` per measure (segments = prompts in sorted
    order, system blocks in sorted order; ``sys`` = the mean over the system's stories), plus
    ``storyeval-names.tsv`` mapping file and system names back to storyeval's names
    (whitespace and ``/`` become ``_``, in criteria ``.`` too: mt-metrics-eval splits lines
    and names on them; `read_mteval` restores the names from it, so that a round trip keeps
    ``BLEU`` as ``BLEU``, not ``BLEU-src``). Scores are written with 15 significant digits
    (no float artifacts such as ``2.3310000000000004``). Files are written atomically.
    """
    from storyeval._atomic import atomic_write_text

    if re.search(r"[\s/]", lp) or "-" not in lp:
        raise InputError(f"lp must look like SRC-TGT without spaces or '/', got {lp!r}")
    if re.search(r"[\s/.\-]", ref) and ref != "src":
        raise InputError(f"ref must not contain '-', '.', '/' or spaces, got {ref!r}")
    root = Path(root)
    frame = wide.loc[:, list(dict.fromkeys([*criteria, *measures]))].sort_index()
    systems = [str(s) for s in frame.index.get_level_values(0).unique()]
    sys_files = {s: _file_name(s, "system", "") for s in systems}  # SYSNAME has no blanks
    if len(set(sys_files.values())) != len(systems):
        raise InputError("two system names differ only in whitespace or '/'; rename one")
    grid = frame.unstack(level=1)
    prompts = grid.columns.get_level_values(1).unique()
    names, written = [], []
    targets = [(c, "human", root / "human-scores" / f"{lp}.{_file_name(c, 'criterion', '.')}")
               for c in criteria]
    targets += [(m, "metric", root / "metric-scores" / lp /
                 f"{_file_name(m, 'measure', '')}-{ref}") for m in measures]
    stems = [str(t[2]) for t in targets]
    if len(set(stems)) != len(stems):
        dup = next(s for s in stems if stems.count(s) > 1)
        raise InputError(f"two names map to the same file {dup}; rename one")
    for column, what, stem in targets:
        block = grid[column].reindex(columns=prompts)
        if what == "metric" and block.isna().to_numpy().any():
            s, p = np.argwhere(block.isna().to_numpy())[0]
            raise InputError(f"mt-metrics-eval metric files allow no missing score: measure "
                             f"{column!r}, system {block.index[s]!r}, prompt {prompts[p]!r}")
        seg = "".join(f"{sys_files[str(s)]} {_format(v, what, f'{column!r}, system {s!r}')}\n"
                      for s, row in zip(block.index, block.to_numpy()) for v in row)
        sys_means = block.mean(axis=1, skipna=True)
        sys_text = "".join(f"{sys_files[str(s)]} {_format(v, what, f'{column!r}, system {s!r}')}"
                           "\n" for s, v in sys_means.items())
        for level, text in (("seg", seg), ("sys", sys_text)):
            path = Path(f"{stem}.{level}.score")
            path.parent.mkdir(parents=True, exist_ok=True)
            written.append(atomic_write_text(path, text))
        names.append(f"{Path(stem).name}\t{what}\t{column}\n")
    names += [f"{sys_files[s]}\tsystem\t{s}\n" for s in systems if sys_files[s] != s]
    written.append(atomic_write_text(root / NAMES_FILE,
                                     "file\tkind\tstoryeval_name\n" + "".join(names)))
    return written
