"""Ranges of the command line's numeric options, checked right after parsing.

Every ``type=int`` / ``type=float`` option of every sub-command has a declared `Range` here
(tests/test_cli_numeric.py sweeps them all), so a value out of range is a one-line error
naming the option (exit code 2) before any work, never a traceback from deep inside. Stricter
checks that depend on other options stay with the commands.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from storyeval.exceptions import InputError

__all__ = ["RANGES", "Range", "check_numeric_options", "numeric_actions"]


@dataclass(frozen=True)
class Range:
    """Allowed values ``low <= x <= high`` (``<`` where the bound is open); None: unbounded."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    hint: str = ""

    def contains(self, value: float) -> bool:
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            return False
        return not (self.high is not None
                    and (value > self.high or (self.high_open and value == self.high)))

    def describe(self, integer: bool) -> str:
        kind = "a whole number" if integer else "a number"
        lo = None if self.low is None else f"{'>' if self.low_open else '>='} {self.low:g}"
        hi = None if self.high is None else f"{'<' if self.high_open else '<='} {self.high:g}"
        return " ".join([kind, " and ".join(b for b in (lo, hi) if b)]).strip()

    def outside(self, integer: bool) -> list[float]:
        """Values just outside the range (for tests), and the non-finite ones for floats."""
        step = 1 if integer else 0.5
        values: list[float] = []
        if self.low is not None:
            values.append(self.low if self.low_open else self.low - step)
        if self.high is not None:
            values.append(self.high if self.high_open else self.high + step)
        if not integer:
            values += [math.nan, math.inf]
        return values


PROBABILITY = Range(0, 1, low_open=True, high_open=True)
LEVEL = Range(0, 1, low_open=True, high_open=True,
              hint="a level such as 0.95, not a percent")
AT_LEAST_0 = Range(0)
AT_LEAST_1 = Range(1)

#: By option string; "COMMAND --option" entries override the plain ones for that command.
RANGES: dict[str, Range] = {
    "--confidence-level": LEVEL,
    "--seed": AT_LEAST_0,
    "--digits": AT_LEAST_0,
    "--batch-size": AT_LEAST_1,
    "--max-length": AT_LEAST_1,
    "--limit": AT_LEAST_1,
    "--tries": AT_LEAST_1,
    "--resamples": AT_LEAST_1,
    "pairwise strengths --resamples": AT_LEAST_0,  # 0: no interval
    "diversity --chunk": Range(1024, hint="n-gram hashes held in memory per order"),
    "pairwise strengths --strong-weight": Range(1, hint="a strong verdict (A>>B) counts as at "
                                                    "least one plain verdict"),
    "pairwise judge --resamples": AT_LEAST_0,
    "pairwise ranking --resamples": AT_LEAST_0,
    "agreement --resamples": AT_LEAST_0,  # --verdicts / --labels: 0, no interval
    "--n-resamples": AT_LEAST_1,
    "--permutations": AT_LEAST_0,
    "--test-permutations": AT_LEAST_1,
    "--chance": AT_LEAST_0,
    "--tie-rtol": AT_LEAST_0,
    "--fpr": PROBABILITY,
    "--k": Range(0, 1, low_open=True),
    "--stride": AT_LEAST_1,
    "--n-neighbors": Range(2),
    "--min-dist": AT_LEAST_0,
    "--n-permutations": AT_LEAST_1,
    "--top": AT_LEAST_1,
    "--ngram": AT_LEAST_1,
    "--temperature": AT_LEAST_0,
    "--top-p": Range(0, 1, low_open=True),
    "--max-tokens": AT_LEAST_1,
    "--concurrency": AT_LEAST_1,
    "--timeout": Range(0, low_open=True),
    "--max-retries": AT_LEAST_0,
    "--tensor-parallel-size": AT_LEAST_1,
    "--regularization": AT_LEAST_0,
    "--tie-credit": Range(0, 1),
    "--tie-margin": AT_LEAST_0,
    "--r-between": Range(-1, 1, low_open=True, high_open=True),
    "--delta": Range(-2, 2, low_open=True, high_open=True),
    "--power": PROBABILITY,
    "--alpha": PROBABILITY,
    "--cluster-alpha": PROBABILITY,
    "--prompts": AT_LEAST_1,
    "--replications": AT_LEAST_1,
    "--bertscore-layers": AT_LEAST_1,
    # storyeval plan
    "--effect": Range(-1, 1, high_open=True),
    "--baseline": Range(-1, 1, high_open=True),
    "--discordance": Range(0, 1, low_open=True),
    "--prevalence": PROBABILITY,
    "--units-per-prompt": AT_LEAST_1,
    "--icc": Range(0, 1),
    "--n": AT_LEAST_1,
    "--annotators": AT_LEAST_1,
    "--judgments-per-pair": AT_LEAST_1,
    "--per-sitting": AT_LEAST_1,
    "pairwise bias --bins": Range(1, hint="length bins of the balanced subset"),
    "ppi --folds": Range(1, hint="1: no cross-fitting (ppi-python's PPI++)"),
    "judge-report --epsilon": Range(-1, 1, low_open=True, high_open=True,
                                    hint="a margin on the probability scale, e.g. 0.2"),
    "judge-report --q": PROBABILITY,
    "judge-report --ppi-labels": Range(2),
    "judge-report --n-resamples": Range(10),
    # storyeval plan budget / active
    "plan budget --cost-human": Range(0, low_open=True, hint="the cost of one human label"),
    "plan budget --cost-judge": Range(0, hint="the cost of one judge call (0: free)"),
    "plan budget --width": Range(0, low_open=True, hint="the interval's width, high - low"),
    "plan budget --se": Range(0, low_open=True),
    "plan budget --budget": Range(0, low_open=True),
    "plan budget --effect": Range(hint="the difference to detect, on the scores' scale"),
    "plan budget --simulate": AT_LEAST_0,  # 0: no check
    "plan active --budget": Range(0, low_open=True, hint="the expected number of human labels"),
    "plan active --mix": Range(0, 1, low_open=True,
                               hint="a share of uniform sampling; > 0 keeps every item possible"),
    # storyeval pairwise (prediction-powered strengths, GenRM, LitBench curation, selection)
    "pairwise strengths --lam": Range(0, 1),
    "pairwise genrm --max-new-tokens": AT_LEAST_1,
    "pairwise prepare --length-bins": Range(2, hint="an even number of buckets"),
    "pairwise select --validation-share": PROBABILITY,
    # storyeval dedup / cluster
    "dedup --threshold": Range(-1, 1, hint="a cosine similarity"),
    "dedup --block-size": AT_LEAST_1,
    "cluster --neighbors": Range(2, hint="UMAP's neighbourhood size"),
    "cluster --per-cluster": AT_LEAST_1,
    "cluster --n-init": AT_LEAST_1,
}


def numeric_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The options of ``parser`` that take one int or float."""
    return [a for a in parser._actions
            if a.option_strings and a.type in (int, float) and a.nargs is None]


def range_of(command: str, option: str) -> Range | None:
    return RANGES.get(f"{command} {option}", RANGES.get(option))


def check_numeric_options(parser: argparse.ArgumentParser, command: str,
                          args: argparse.Namespace) -> None:
    """An `InputError` naming the first numeric option of ``args`` outside its range."""
    for action in numeric_actions(parser):
        value = getattr(args, action.dest, None)
        option = next((o for o in action.option_strings if o.startswith("--")),
                      action.option_strings[0])
        allowed = range_of(command, option)
        if value is None or allowed is None:
            continue
        # a repeatable option (action="append", e.g. one --concurrency per --base-url) holds
        # a list: every value is checked
        for item in value if isinstance(value, list) else [value]:
            if allowed.contains(item):
                continue
            hint = f" ({allowed.hint})" if allowed.hint else ""
            shown = f"{item:g}" if isinstance(item, float) else repr(item)
            raise InputError(f"{option} must be {allowed.describe(action.type is int)}{hint}, "
                             f"got {shown}")
