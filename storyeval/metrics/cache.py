"""A persistent per-story score cache: one SQLite file per metric configuration.

Keys are SHA-256 hashes of the texts a metric reads (story, and reference / prompt if used);
values are the JSON list of the measures' values. Every batch is committed as soon as it is
scored, so an interrupted run resumes where it stopped and a re-run costs only the look-ups.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["ScoreCache", "text_key"]


def text_key(story: str, reference: str | None = None, prompt: str | None = None) -> str:
    """SHA-256 of the texts (``None`` and the empty string are distinct)."""
    payload = json.dumps([story, reference, prompt], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class ScoreCache:
    """Cache of one metric configuration in ``{directory}/{metric}-{config_key}.sqlite``.

    Parameters
    ----------
    directory : path
        Folder of the cache files (created if needed).
    metric : str
        Metric name (part of the file name).
    config_key : str
        Hash of the metric configuration (``Metric.config_key()``).
    config : dict
        The configuration itself, stored in the file for inspection.
    measures : sequence of str
        Measure names, in the order of the stored value lists. A file whose stored measure list
        differs is not reused (a new configuration gets a new file anyway).
    """

    def __init__(self, directory: str | Path, *, metric: str, config_key: str, config: dict,
                 measures: Sequence[str]) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / f"{metric}-{config_key}.sqlite"
        self.measures = list(measures)
        self._con = sqlite3.connect(self.path)
        self._con.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT)")
        self._con.execute("CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, v TEXT)")
        stored = self._con.execute("SELECT v FROM meta WHERE k='measures'").fetchone()
        if stored is not None and json.loads(stored[0]) != self.measures:
            self._con.execute("DELETE FROM scores")  # same config, other measure list: start over
        self._con.execute("INSERT OR REPLACE INTO meta VALUES ('measures', ?)",
                          (json.dumps(self.measures),))
        self._con.execute("INSERT OR REPLACE INTO meta VALUES ('config', ?)",
                          (json.dumps({"metric": metric, "config": config}, sort_keys=True,
                                      default=str),))
        self._con.commit()

    def get_many(self, keys: Iterable[str]) -> dict[str, list[float]]:
        """Stored values for the keys present in the cache."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, list[float]] = {}
        for i in range(0, len(keys), 500):
            chunk = keys[i:i + 500]
            rows = self._con.execute(
                f"SELECT key, v FROM scores WHERE key IN ({','.join('?' * len(chunk))})", chunk)
            for key, v in rows:
                out[key] = [math.nan if x is None else float(x) for x in json.loads(v)]
        return out

    def put_many(self, items: Iterable[tuple[str, Sequence[float]]]) -> None:
        """Store and commit values (NaN is stored as null)."""
        rows = [(k, json.dumps([None if (x is None or math.isnan(x)) else float(x)
                                for x in vals])) for k, vals in items]
        self._con.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?)", rows)
        self._con.commit()

    def __len__(self) -> int:
        return int(self._con.execute("SELECT COUNT(*) FROM scores").fetchone()[0])

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> ScoreCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
