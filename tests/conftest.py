"""Shared pytest configuration: offline, quiet, headless.

The environment variables are set at import time, before any test module imports storyeval or a
Hugging Face library, so that no test can reach a model hub or draw a progress bar.
"""

from __future__ import annotations

import os
import tempfile

# No network: Hugging Face libraries must not try the hub (each failed look-up retries for ~50 s).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# A private, throw-away cache folder so tests never read or write the user's HF cache.
os.environ.setdefault("HF_HOME", tempfile.mkdtemp(prefix="storyeval-tests-hf-"))
# No progress bars in test output; figures without a display.
os.environ.setdefault("STORYEVAL_NO_PROGRESS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


import pytest


@pytest.fixture(scope="session")
def hanna_generation_wide():
    """HANNA wide scores of the 10 generation systems (960 stories; ``Human`` left out, as in
    the paper's correlations): index (system, prompt_id), one column per measure."""
    from storyeval.data import load_hanna

    return load_hanna(include_human_stories=False).wide()
