"""What a rating or judging run cost: tokens, wall time and, with a price table, money.

Every answer stored in the cache carries the server's token counts (``usage.prompt_tokens``,
``usage.completion_tokens`` of an OpenAI-compatible answer; the tokenizer's counts for the
local backends) and the wall time of the request. `usage_columns` puts them on the rows of a
ratings or judgments table (NaN with a stated reason where the answer had none);
`cost_table` sums them per judge, without counting twice a request whose answer several rows
share (the dimensions of one side-by-side answer; two items rendering the same messages), and,
with a `Prices` table, gives the cost per item, per judge and per 1,000 judgments.

A *judgment* is one request's answer: one rating request (story x Eval-Prompt x criterion x
try) of ``storyeval rate``, or one side-by-side request (pair x order x try, all dimensions at
once) of ``storyeval pairwise judge``. An *item* is a story (``rate``) or a pair
(``pairwise judge``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = [
    "COST_COLUMNS",
    "FILE_USAGE_COLUMNS",
    "WALL_COLUMNS",
    "USAGE_COLUMNS",
    "Prices",
    "cost_lines",
    "cost_table",
    "parse_prices",
    "usage_columns",
]

#: Columns `usage_columns` adds to a ratings or judgments table, in order.
USAGE_COLUMNS: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "usage_note", "wall_s")
#: Of those, the ones written to the files of a run (``ratings.csv``, the verdict table):
#: the wall time differs between two runs of the same requests, and a file of the same
#: answers is the same bytes whichever run (or merged shards) wrote it; the wall time is in
#: the cache (``latency_s``), the library's tables, the run summary and ``settings.json``.
FILE_USAGE_COLUMNS: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "usage_note")
#: Columns of `cost_table` that depend on the wall time (left out of cost files, see above).
WALL_COLUMNS: tuple[str, ...] = ("n_with_wall", "wall_s_total", "wall_s_per_judgment",
                                 "wall_s_median")

#: Columns of `cost_table`, in order.
COST_COLUMNS: tuple[str, ...] = (
    "judge", "n_items", "n_judgments", "n_answered", "n_with_usage", "prompt_tokens",
    "completion_tokens", "prompt_tokens_per_judgment", "completion_tokens_per_judgment",
    "n_with_wall", "wall_s_total", "wall_s_per_judgment", "wall_s_median", "price_prompt",
    "price_completion",
    "currency", "cost", "cost_per_item", "cost_per_1000_judgments", "note",
)

NO_ANSWER = "no answer (the request failed, was not sent or is missing): nothing to count"
NO_USAGE = "the answer carried no usage (token counts) field"
PER_MILLION = 1_000_000.0


@dataclass(frozen=True)
class Prices:
    """Prices per one million tokens.

    Parameters
    ----------
    prompt, completion : float
        Price of 1,000,000 prompt (input) and completion (output) tokens, >= 0.
    currency : str, default "USD"
        A label only (nothing is converted).
    """

    prompt: float
    completion: float
    currency: str = "USD"

    def __post_init__(self) -> None:
        for name in ("prompt", "completion"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or value < 0:
                raise InputError(f"price {name!r} must be a finite number >= 0 (per 1M "
                                 f"tokens), got {value!r}")

    def of(self, prompt_tokens: np.ndarray, completion_tokens: np.ndarray) -> np.ndarray:
        """Cost of each request (NaN where a count is NaN)."""
        return (np.asarray(prompt_tokens, dtype=float) * self.prompt
                + np.asarray(completion_tokens, dtype=float) * self.completion) / PER_MILLION


_FIELD = re.compile(r"\s*(prompt|completion|currency)\s*=\s*([^,]*)\s*\Z")


def _prices_from_mapping(obj: Any, where: str) -> Prices:
    if not isinstance(obj, Mapping):
        raise InputError(f"{where}: expected an object with 'prompt' and 'completion' prices "
                         f"per 1M tokens, got {type(obj).__name__}")
    unknown = sorted(set(obj) - {"prompt", "completion", "currency"})
    if unknown:
        raise InputError(f"{where}: unknown field(s) {unknown} (use prompt, completion, "
                         "currency)")
    missing = [k for k in ("prompt", "completion") if k not in obj]
    if missing:
        raise InputError(f"{where}: no {missing[0]!r} price (per 1M tokens)")
    currency = obj.get("currency", "USD")
    if not isinstance(currency, str) or not currency.strip():
        raise InputError(f"{where}: currency must be a non-empty string")
    try:
        return Prices(obj["prompt"], obj["completion"], currency.strip())
    except InputError as exc:
        raise InputError(f"{where}: {exc}") from None


def parse_prices(spec: str | Path) -> Prices | dict[str, Prices]:
    """A price table from ``--price``: ``"prompt=0.5,completion=1.5[,currency=EUR]"`` (per 1M
    tokens) or the path of a JSON file.

    The JSON file holds either one price object ``{"prompt": 0.5, "completion": 1.5,
    "currency": "USD"}`` or one per judge / model label ``{"gpt-4o": {...}, "*": {...}}``
    (``"*"``: every other label).

    Returns
    -------
    Prices or dict of str to Prices

    Examples
    --------
    >>> parse_prices("prompt=0.5,completion=1.5")
    Prices(prompt=0.5, completion=1.5, currency='USD')
    """
    text = str(spec).strip()
    if "=" in text and not Path(text).is_file():
        fields: dict[str, Any] = {}
        for part in text.split(","):
            m = _FIELD.match(part)
            if not m:
                raise InputError(f"--price: cannot read {part.strip()!r}; use "
                                 "prompt=X,completion=Y (per 1M tokens) or a JSON file")
            name, value = m.group(1), m.group(2).strip()
            if name in fields:
                raise InputError(f"--price: {name!r} given twice")
            if name != "currency":
                try:
                    fields[name] = float(value)
                except ValueError:
                    raise InputError(f"--price: {name}={value!r} is not a number") from None
            else:
                fields[name] = value
        return _prices_from_mapping(fields, "--price")
    path = Path(text)
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--price {text!r}: neither prompt=X,completion=Y nor a readable "
                         f"JSON file ({exc.strerror or exc})") from None
    if not raw.strip():
        raise InputError(f"--price {text!r}: the file is empty")
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InputError(f"--price {text!r}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if isinstance(obj, Mapping) and "prompt" in obj:
        return _prices_from_mapping(obj, f"--price {text!r}")
    if not isinstance(obj, Mapping) or not obj:
        raise InputError(f"--price {text!r}: expected a price object or an object of price "
                         "objects keyed by judge / model label")
    return {str(k): _prices_from_mapping(v, f"--price {text!r}, entry {k!r}")
            for k, v in obj.items()}


def prices_for(prices: Prices | Mapping[str, Prices], judge: str) -> Prices:
    """The prices of ``judge`` (its own entry, else ``"*"``)."""
    if isinstance(prices, Prices):
        return prices
    for name in (judge, "*"):
        if name in prices:
            return prices[name]
    raise InputError(f"--price: no price for {judge!r} (entries: {sorted(prices)}); add it "
                     "or a '*' entry")


def usage_columns(store: Any, keys: Sequence[str | None]) -> pd.DataFrame:
    """`USAGE_COLUMNS` for requests ``keys`` (one per row; None or "" for a row without a
    request), read from the answer cache ``store``.

    Returns
    -------
    DataFrame
        ``prompt_tokens``, ``completion_tokens`` (float: NaN where unknown), ``usage_note``
        (empty, or why the token counts are NaN: no answer, or an answer without a usage
        field) and ``wall_s``: the request's wall time in seconds (from sending to the parsed
        answer of the successful attempt for the HTTP backend; a batch's time divided by its
        requests for the local ones); NaN without an answer and for answers read from a batch
        file, which carry no per-request time.
    """
    keys = [k or "" for k in keys]
    stored = store.get_many([k for k in keys if k],
                            columns=("raw", "prompt_tokens", "completion_tokens", "latency_s"))
    n = len(keys)
    pt, ct, wall = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    note = np.full(n, "", dtype=object)
    for i, k in enumerate(keys):
        row = stored.get(k) if k else None
        if row is None or not (isinstance(row["raw"], str) and row["raw"].strip()):
            note[i] = NO_ANSWER
            continue
        if row["prompt_tokens"] is None or row["completion_tokens"] is None:
            note[i] = NO_USAGE
        if row["prompt_tokens"] is not None:
            pt[i] = row["prompt_tokens"]
        if row["completion_tokens"] is not None:
            ct[i] = row["completion_tokens"]
        if row["latency_s"] is not None:
            wall[i] = row["latency_s"]
    return pd.DataFrame({"prompt_tokens": pt, "completion_tokens": ct, "usage_note": note,
                         "wall_s": wall})


def _sum(x: pd.Series) -> float:
    return float(x.sum()) if x.notna().any() else math.nan


def cost_table(frame: pd.DataFrame, *, unit: Sequence[str], by: str,
               prices: Prices | Mapping[str, Prices] | None = None) -> pd.DataFrame:
    """Tokens, wall time and cost per judge of a ratings or judgments table.

    Parameters
    ----------
    frame : DataFrame
        Rows with ``key`` (the request's cache key; rows sharing a key share one answer and
        are counted once), the `FILE_USAGE_COLUMNS` (and ``wall_s`` when known: a table read
        back from a file has no wall time), the ``unit`` columns and ``by``.
    unit : sequence of str
        Columns naming an item (``["story_id"]`` for ratings; ``["prompt_id", "story_a",
        "story_b"]`` for pairs).
    by : str
        The column naming the judge (``"model"``, ``"judge"``).
    prices : Prices or dict of str to Prices, optional
        Per 1M tokens; without it the cost columns are NaN.

    Returns
    -------
    DataFrame
        One row per judge, `COST_COLUMNS`: ``n_items``; ``n_judgments`` (distinct requests),
        ``n_answered`` (with an answer), ``n_with_usage`` (with both token counts); token sums
        and means per judgment over the answered requests that report them; wall time
        (``n_with_wall`` requests that have one, their sum, mean and median; `WALL_COLUMNS`); ``cost`` (over the requests with
        usage), ``cost_per_1000_judgments`` (1,000 x the mean cost of a request with usage)
        and ``cost_per_item`` (that mean x answered requests per item); ``note`` says when
        some answers had no usage, so the cost extrapolates from the others.

    Notes
    -----
    cost(request) = (prompt_tokens x price_prompt + completion_tokens x price_completion) /
    10^6. A failed request has no answer and no recorded usage: it is counted in
    ``n_judgments`` but costs nothing here (a server may still bill a refusal).

    Validated against hand sums on a local test server's scripted usage
    (tests/test_llm_cost.py).
    """
    need = ["key", *FILE_USAGE_COLUMNS, *unit, by]
    missing = [c for c in need if c not in frame.columns]
    if missing:
        raise InputError(f"cost_table: missing column(s) {missing}")
    rows = []
    for judge, g in frame.groupby(by, sort=False):
        req = g[g["key"].notna() & (g["key"].astype(str) != "")].drop_duplicates("key")
        answered = req[req["usage_note"] != NO_ANSWER]
        usage = answered[answered["prompt_tokens"].notna() & answered["completion_tokens"].notna()]
        n_items = int(len(g[list(unit)].drop_duplicates()))
        wall = (answered["wall_s"].dropna() if "wall_s" in answered.columns
                else pd.Series(dtype=float))
        row: dict[str, Any] = {
            "judge": judge, "n_items": n_items, "n_judgments": int(len(req)),
            "n_answered": int(len(answered)), "n_with_usage": int(len(usage)),
            "prompt_tokens": _sum(usage["prompt_tokens"]),
            "completion_tokens": _sum(usage["completion_tokens"]),
            "prompt_tokens_per_judgment": float(usage["prompt_tokens"].mean())
            if len(usage) else math.nan,
            "completion_tokens_per_judgment": float(usage["completion_tokens"].mean())
            if len(usage) else math.nan,
            "n_with_wall": int(len(wall)),
            "wall_s_total": float(wall.sum()) if len(wall) else math.nan,
            "wall_s_per_judgment": float(wall.mean()) if len(wall) else math.nan,
            "wall_s_median": float(wall.median()) if len(wall) else math.nan,
            "price_prompt": math.nan, "price_completion": math.nan, "currency": "",
            "cost": math.nan, "cost_per_item": math.nan, "cost_per_1000_judgments": math.nan,
        }
        notes = []
        if len(answered) > len(usage):
            notes.append(f"{len(answered) - len(usage)} of {len(answered)} answers without "
                         "usage: the cost per judgment and per item extrapolate from the others")
        if len(answered) == 0:
            notes.append("no answer: nothing to count")
        if prices is not None:
            p = prices_for(prices, str(judge))
            each = p.of(usage["prompt_tokens"].to_numpy(), usage["completion_tokens"].to_numpy())
            row.update(price_prompt=p.prompt, price_completion=p.completion, currency=p.currency)
            if len(usage):
                mean = float(each.mean())
                row.update(cost=float(each.sum()), cost_per_1000_judgments=1000.0 * mean,
                           cost_per_item=mean * len(answered) / n_items if n_items else math.nan)
        row["note"] = "; ".join(notes)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COST_COLUMNS))


def _money(value: float) -> str:
    if not math.isfinite(value):
        return "NaN"
    return f"{value:.4g}" if abs(value) < 1 else f"{value:,.2f}"


def cost_lines(table: pd.DataFrame, *, item: str = "item") -> list[str]:
    """The run summary's lines about usage and cost, one judge at a time."""
    lines = []
    for r in table.to_dict("records"):
        head = f"usage of {r['judge']}: {r['n_answered']} of {r['n_judgments']} judgments answered"
        if r["n_with_usage"]:
            head += (f"; prompt tokens {r['prompt_tokens']:,.0f} "
                     f"({r['prompt_tokens_per_judgment']:.1f} per judgment), completion tokens "
                     f"{r['completion_tokens']:,.0f} ({r['completion_tokens_per_judgment']:.1f})")
        else:
            head += "; no token counts (the answers carried no usage)"
        if math.isfinite(r["wall_s_per_judgment"]):
            head += (f"; wall {r['wall_s_per_judgment']:.3g} s per judgment (median "
                     f"{r['wall_s_median']:.3g} s)")
        else:
            head += "; no wall time (answers read from a batch file or a table)"
        lines.append(head)
        if math.isfinite(r["price_prompt"]):
            cur = r["currency"]
            lines.append(
                f"cost of {r['judge']} at {r['price_prompt']:g} / {r['price_completion']:g} {cur} "
                f"per 1M prompt / completion tokens: {_money(r['cost'])} {cur} in all, "
                f"{_money(r['cost_per_item'])} per {item}, "
                f"{_money(r['cost_per_1000_judgments'])} per 1,000 judgments")
        if r["note"]:
            lines.append(f"  note: {r['note']}")
    return lines
