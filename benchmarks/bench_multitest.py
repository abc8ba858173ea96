"""Multiple-comparison adjustment: storyeval's vectorised families against statsmodels.

Why storyeval keeps its own BH/BY/Holm/Bonferroni arithmetic instead of calling
``statsmodels.stats.multitest.multipletests``: that function adjusts one family per call, and
an all-pairs meta-evaluation has thousands of families (HANNA, 192 measures: 50,232 tests in
8,372 families of the paper's convention). This script measures both on that table, checks they
agree, and times the import that statsmodels would add to every ``storyeval meta`` run.

Usage: python benchmarks/bench_multitest.py
"""

from __future__ import annotations

import subprocess
import sys
import time
import warnings

import numpy as np


def _import_seconds(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    base = "import numpy, scipy.stats, pandas"  # already loaded by storyeval meta
    out = subprocess.run([sys.executable, "-c", f"{base}; {code}"], capture_output=True,
                         text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    from statsmodels.stats.multitest import multipletests

    from storyeval.compare.multitest import adjust_frame
    from storyeval.meta import meta_evaluate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tests = meta_evaluate(measures="all", reference="all").williams
    tests = tests.drop(columns=["p_adjusted", "family"])
    start = time.perf_counter()
    ours = adjust_frame(tests, by="paper", p_col="p", method="bh")
    t_ours = time.perf_counter() - start

    start = time.perf_counter()
    theirs = np.full(len(ours), np.nan)
    pvalues = ours["p"].to_numpy()
    for rows in ours.groupby("family").indices.values():
        p = pvalues[rows]
        ok = ~np.isnan(p)
        if ok.any():
            block = np.full(len(p), np.nan)
            block[ok] = multipletests(p[ok], method="fdr_bh")[1]
            theirs[rows] = block
    t_theirs = time.perf_counter() - start
    diff = np.nanmax(np.abs(theirs - ours["p_adjusted"].to_numpy()))
    print(f"{len(ours)} Williams tests in {ours['family'].nunique()} BH families")
    print(f"storyeval adjust_frame (families and adjustment): {t_ours:.3f} s")
    print(f"statsmodels multipletests, one call per family:    {t_theirs:.3f} s "
          f"(family keys not included)")
    print(f"largest difference of adjusted p: {diff:.1e}")
    print(f"import statsmodels.stats.multitest after numpy/scipy/pandas: "
          f"{_import_seconds('statsmodels.stats.multitest'):.2f} s")


if __name__ == "__main__":
    main()
