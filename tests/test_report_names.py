"""Hostile names in the report (issue 37): a measure name with invalid matplotlib math text is
drawn as plain text, and a 300-character criterion gets a short file slug with a hash."""

from __future__ import annotations

import numpy as np
import pandas as pd

from storyeval.report.figures import heatmap
from storyeval.report.meta_report import _slugs


def test_invalid_math_text_in_names_is_drawn_as_text(tmp_path):
    names = [r"BLEU $\frac{1", "chrF $x^$ 2", "plain"]
    matrix = pd.DataFrame(np.arange(9, dtype=float).reshape(3, 3), index=names, columns=names)
    paths = heatmap(matrix, tmp_path / "h", title=r"Kendall $\tau$ {", formats=("png", "svg"))
    assert all(p.stat().st_size > 0 for p in paths)  # math mode would raise ValueError


def test_long_criteria_get_short_unique_slugs():
    long1, long2 = "Very " * 60 + "A", "Very " * 60 + "B"
    slugs = _slugs([long1, long2, "Relevance"])
    assert slugs["Relevance"] == "relevance"
    assert len(slugs[long1]) <= 48 and len(slugs[long2]) <= 48
    assert slugs[long1] != slugs[long2] and slugs[long1].startswith("very-very")


def test_accented_criteria_keep_their_letters_and_stay_unique():
    slugs = _slugs(["Émotion", "Emotion", "Cohérence narrative", "情感", "流畅"])
    assert slugs["Émotion"] == "emotion" and slugs["Emotion"] == "emotion-2"
    assert slugs["Cohérence narrative"] == "coherence-narrative"
    assert slugs["情感"] == "criterion" and slugs["流畅"] == "criterion-2"
    assert len(set(slugs.values())) == 5
