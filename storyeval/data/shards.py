"""Sharded runs: a deterministic split of stories (or pairs) into N shards, the metadata each
shard records next to its output, and the merge of shard outputs into the file one run writes.

A unit (a story, a pair of stories) belongs to shard ``1 + blake2b(id) mod N``, where ``id`` is
the unit's UTF-8 identifier and ``blake2b`` the 8-byte BLAKE2b digest read as a big-endian
unsigned integer: the same on every machine, Python version and process (never Python's
``hash()``, which is salted per process). Each shard writes its output and a sidecar JSON
(``OUT.shard.json``, or ``shard.json`` inside an output folder) that records the shard, the
settings of the run, a fingerprint of all the unit ids of the input and the positions of this
shard's units in it; `check_coverage` refuses overlapping, missing or mismatched shards and
`merge_tables` restores the order of a single run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from storyeval.exceptions import InputError

__all__ = [
    "SIDECAR_SUFFIX",
    "Shard",
    "ShardInfo",
    "check_coverage",
    "ids_fingerprint",
    "make_shard_info",
    "merge_shard_tables",
    "merge_tables",
    "pair_ids",
    "read_shard_info",
    "read_table_raw",
    "shard_numbers",
    "shard_rows",
    "sidecar_path",
    "write_shard_info",
    "write_table_raw",
]

#: The sidecar of an output file ``OUT`` is ``OUT`` + this suffix.
SIDECAR_SUFFIX = ".shard.json"
_FORMAT = "storyeval-shard"
_VERSION = 1
_PATTERN = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based: ``1/3``, ``2/3``, ``3/3``)."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if not (1 <= self.index <= self.count):
            raise InputError(f"--shard: expected K/N with 1 <= K <= N, got {self.index}/"
                             f"{self.count}")

    @classmethod
    def parse(cls, text: str | Shard) -> Shard:
        """``"2/3"`` -> ``Shard(2, 3)``; an `InputError` for anything else."""
        if isinstance(text, Shard):
            return text
        match = _PATTERN.match(str(text))
        if match is None:
            raise InputError(f"--shard: expected K/N (e.g. 2/8, K from 1 to N), got {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_numbers(ids: Iterable[str], count: int) -> np.ndarray:
    """The shard (1..``count``) of each id: ``1 + int(blake2b(id, digest_size=8)) mod count``.

    Notes
    -----
    The digest is BLAKE2b with an 8-byte output of the id's UTF-8 bytes, read as a big-endian
    unsigned integer; it does not depend on the process, the machine or the other ids, so a
    story keeps its shard when stories are added or reordered. Validated against
    ``hashlib.blake2b`` by hand in ``tests/test_shards.py``.
    """
    if int(count) < 1:
        raise InputError(f"shard count must be >= 1, got {count}")
    digests = [hashlib.blake2b(str(i).encode("utf-8"), digest_size=8).digest() for i in ids]
    if not digests:
        return np.zeros(0, dtype=np.int64)
    values = np.frombuffer(b"".join(digests), dtype=">u8")
    return (values % np.uint64(count)).astype(np.int64) + 1


def shard_rows(ids: Sequence[str], shard: Shard | str) -> np.ndarray:
    """Positions (0-based, in input order) of the ids that belong to ``shard``."""
    shard = Shard.parse(shard)
    return np.flatnonzero(shard_numbers(ids, shard.count) == shard.index)


def pair_ids(story_a: Iterable[str], story_b: Iterable[str]) -> list[str]:
    """The unit id of a judged pair: ``story_a + "\\x1f" + story_b`` (the unit separator)."""
    return [f"{a}\x1f{b}" for a, b in zip(story_a, story_b)]


def ids_fingerprint(ids: Sequence[str]) -> str:
    """SHA-256 of the ids in input order (joined by newlines): shards of one input agree."""
    h = hashlib.sha256()
    for i in ids:
        h.update(str(i).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def sidecar_path(out: str | Path) -> Path:
    """Where the shard metadata of ``out`` lives: ``out/shard.json`` for an output folder,
    else ``out`` + ``.shard.json``."""
    out = Path(out)
    return out / "shard.json" if out.is_dir() else out.with_name(out.name + SIDECAR_SUFFIX)


@dataclass(frozen=True)
class ShardInfo:
    """The metadata a shard records beside its output (see the module docstring)."""

    command: str
    shard: Shard
    settings: dict[str, Any]
    total: int
    fingerprint: str
    units: list[str]
    positions: list[int]
    extra: dict[str, Any]
    path: Path | None = None

    def to_json(self) -> str:
        return json.dumps({
            "format": _FORMAT, "version": _VERSION, "command": self.command,
            "shard": str(self.shard), "settings": self.settings, "total": self.total,
            "fingerprint": self.fingerprint, "extra": self.extra, "units": self.units,
            "positions": self.positions}, indent=1, sort_keys=False, default=str) + "\n"


def write_shard_info(sidecar: str | Path, *, command: str, shard: Shard | str,
                     settings: Mapping[str, Any], all_ids: Sequence[str],
                     extra: Mapping[str, Any] | None = None) -> ShardInfo:
    """Write the sidecar of a shard (atomically) and return it (see `make_shard_info`)."""
    from storyeval._atomic import atomic_write_text

    info = make_shard_info(sidecar, command=command, shard=shard, settings=settings,
                           all_ids=all_ids, extra=extra)
    atomic_write_text(sidecar, info.to_json())
    return info


def make_shard_info(sidecar: str | Path, *, command: str, shard: Shard | str,
                    settings: Mapping[str, Any], all_ids: Sequence[str],
                    extra: Mapping[str, Any] | None = None) -> ShardInfo:
    """The metadata of a shard: ``all_ids`` are the unit ids of the whole input, in input
    order; it records their number, their `ids_fingerprint`, and this shard's ids with their
    positions; ``settings`` are the options shards of one run must share."""
    shard = Shard.parse(shard)
    ids = [str(i) for i in all_ids]
    rows = shard_rows(ids, shard)
    info = ShardInfo(command=command, shard=shard,
                     settings=json.loads(json.dumps(dict(settings), default=str)),
                     total=len(ids), fingerprint=ids_fingerprint(ids),
                     units=[ids[i] for i in rows], positions=rows.tolist(),
                     extra=dict(extra or {}), path=Path(sidecar))
    return info


def read_shard_info(sidecar: str | Path) -> ShardInfo:
    """Read a sidecar; an `InputError` naming the file when it is missing or not one."""
    path = Path(sidecar)
    if not path.is_file():
        raise InputError(f"{path}: no shard metadata (was the output written with --shard K/N?)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != _FORMAT:
            raise ValueError("not a storyeval shard file")
        if data.get("version") != _VERSION:
            raise ValueError(f"version {data.get('version')!r}, expected {_VERSION}")
        return ShardInfo(command=str(data["command"]), shard=Shard.parse(data["shard"]),
                         settings=dict(data["settings"]), total=int(data["total"]),
                         fingerprint=str(data["fingerprint"]),
                         units=[str(u) for u in data["units"]],
                         positions=[int(p) for p in data["positions"]],
                         extra=dict(data.get("extra") or {}), path=path)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a storyeval shard metadata file ({exc})") from exc


def _names(infos: Sequence[ShardInfo]) -> str:
    return ", ".join(f"{i.shard} ({i.path})" for i in infos)


def check_coverage(infos: Sequence[ShardInfo]) -> int:
    """Check that ``infos`` are the N shards of one run exactly once each; return N.

    Raises
    ------
    InputError
        One line naming the shards that overlap (given twice) or are missing, or the shards
        whose command, count, input or settings differ from the first one's.
    """
    if not infos:
        raise InputError("merge: no shard given")
    first = infos[0]
    for info in infos[1:]:
        for what, a, b in (("command", first.command, info.command),
                           ("shard count", first.shard.count, info.shard.count),
                           ("input (story ids)", (first.total, first.fingerprint),
                            (info.total, info.fingerprint))):
            if a != b:
                raise InputError(f"merge: shards {_names([first, info])} differ in their "
                                 f"{what}; they are not shards of one run")
        if info.settings != first.settings or info.extra.get("format") != \
                first.extra.get("format"):
            keys = sorted(k for k in set(first.settings) | set(info.settings)
                          if first.settings.get(k) != info.settings.get(k))
            if info.extra.get("format") != first.extra.get("format"):
                keys.append("output format")
            raise InputError(f"merge: shards {_names([first, info])} were run with different "
                             f"settings ({', '.join(keys)})")
    n = first.shard.count
    seen: dict[int, list[ShardInfo]] = {}
    for info in infos:
        seen.setdefault(info.shard.index, []).append(info)
    overlap = [i for k in sorted(seen) if len(seen[k]) > 1 for i in seen[k]]
    if overlap:
        raise InputError(f"merge: overlapping shards: {_names(overlap)} (each shard once)")
    missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in seen]
    if missing:
        raise InputError(f"merge: missing shard(s) {', '.join(missing)} of {n} (given: "
                         f"{_names(infos)})")
    if sum(len(i.positions) for i in infos) != first.total:
        raise InputError(f"merge: the shards hold {sum(len(i.positions) for i in infos)} of "
                         f"{first.total} units; they are not the shards of one run")
    return n


# ---------------------------------------------------------------------------------------------
# tables read and written without changing a byte
# ---------------------------------------------------------------------------------------------

def read_table_raw(path: str | Path, fmt: str) -> pd.DataFrame:
    """A table as written: CSV/TSV cells as their exact text (no type inference, empty cells
    stay ``""``), JSON lines kept as the line text (column ``_line``) next to their parsed
    fields, Parquet with the types it stores."""
    path = Path(path)
    if path.stat().st_size == 0:
        return pd.DataFrame()  # the output of a shard that holds no story
    if fmt in ("csv", "tsv"):
        return pd.read_csv(path, sep="," if fmt == "csv" else "\t", dtype=str,
                           keep_default_na=False, na_filter=False)
    if fmt == "jsonl":
        lines = [x for x in path.read_text(encoding="utf-8").splitlines(keepends=True)
                 if x.strip()]  # an empty shard's file holds one blank line
        fields = pd.DataFrame.from_records([json.loads(x) for x in lines]) if lines \
            else pd.DataFrame()
        fields["_line"] = lines
        return fields
    if fmt == "parquet":
        return pd.read_parquet(path)
    raise InputError(f"{path}: cannot merge files of format {fmt!r}")


def write_table_raw(table: pd.DataFrame, path: str | Path, fmt: str) -> None:
    """Write a table read with `read_table_raw` in the same format (atomically)."""
    from storyeval._atomic import atomic_path

    with atomic_path(path) as tmp:
        if fmt in ("csv", "tsv"):
            table.to_csv(tmp, index=False, sep="," if fmt == "csv" else "\t")
        elif fmt == "jsonl":
            Path(tmp).write_text("".join(table["_line"]), encoding="utf-8")
        else:
            table.to_parquet(tmp, index=False)


def merge_tables(tables: Sequence[pd.DataFrame], infos: Sequence[ShardInfo], *,
                 unit_ids, block=None) -> pd.DataFrame:
    """Concatenate shard tables in the row order of one run.

    One run writes its rows grouped by block (e.g. the metric that produced a measure), then
    by the unit's position in the input, then in an order inside a unit that each shard keeps;
    the merge sorts by (block, position) stably over the shards in the order given.

    Parameters
    ----------
    tables, infos : sequences
        Each shard's table and its `ShardInfo`, in the same order.
    unit_ids : callable
        ``unit_ids(table) -> sequence of str``: the unit id of each row.
    block : callable, optional
        ``block(table) -> integer array``: the block of each row (default: one block).
    """
    keys_pos, keys_block = [], []
    for table, info in zip(tables, infos):
        position = dict(zip(info.units, info.positions))
        ids = list(unit_ids(table))
        unknown = [u for u in ids if u not in position]
        if unknown:
            raise InputError(f"merge: {info.path}: unit {unknown[0]!r} of the output is not one "
                             f"of shard {info.shard}'s; the output and its metadata disagree")
        keys_pos.append(np.fromiter((position[u] for u in ids), dtype=np.int64, count=len(ids)))
        keys_block.append(np.zeros(len(table), dtype=np.int64) if block is None
                          else np.asarray(block(table), dtype=np.int64))
    # an empty shard's types may differ; with no row at all, the table that has the columns
    rows = [t for t in tables if len(t)] or [max(tables, key=lambda t: len(t.columns))]
    merged = pd.concat(rows, ignore_index=True)
    order = np.lexsort((np.concatenate(keys_pos), np.concatenate(keys_block)))  # stable
    return merged.iloc[order].reset_index(drop=True)


def merge_shard_tables(outputs: Sequence[str | Path]) -> tuple[list[ShardInfo],
                                                                dict[str, tuple[pd.DataFrame, str]]]:
    """Read the shard outputs (files or folders written with ``--shard K/N``), check that they
    are the N shards of one run (`check_coverage`) and merge each of their tables.

    Returns
    -------
    infos : list of ShardInfo
        In the order given.
    tables : dict
        ``role -> (merged table, format)`` for each table the sidecars list (``extra["files"]``:
        role, file name beside the sidecar, format, unit column(s) and, for score tables, the
        measures of each metric); write them with `write_table_raw`.
    """
    missing = [str(p) for p in outputs if not Path(p).exists()]
    if missing:
        raise InputError(f"{', '.join(missing)}: no such file or folder (the output of a "
                         "--shard K/N run)")
    infos = [read_shard_info(sidecar_path(p)) for p in outputs]
    check_coverage(infos)
    merged: dict[str, tuple[pd.DataFrame, str]] = {}
    for spec in infos[0].extra.get("files", []):
        role, fmt = spec["role"], spec["format"]
        tables = []
        for info in infos:
            own = {f["role"]: f for f in info.extra.get("files", [])}
            if role not in own:
                raise InputError(f"merge: {info.path} lists no {role!r} file")
            path = Path(info.path).parent / own[role]["name"]  # type: ignore[arg-type]
            if not path.is_file():
                raise InputError(f"merge: {path}: file of shard {info.shard} not found")
            tables.append(read_table_raw(path, fmt))
        merged[role] = (merge_tables(tables, infos, unit_ids=_unit_ids(spec["unit"]),
                                     block=_blocks(spec.get("blocks"))), fmt)
    return infos, merged


def _unit_ids(unit: str):
    def ids(table: pd.DataFrame) -> list[str]:
        if len(table) == 0:
            return []
        if unit == "pair":
            return pair_ids(table["story_a"].astype(str), table["story_b"].astype(str))
        return table[unit].astype(str).tolist()
    return ids


def _blocks(blocks: list[list[str]] | None):
    if not blocks:
        return None
    of = {name: b for b, names in enumerate(blocks) for name in names}

    def block(table: pd.DataFrame) -> np.ndarray:
        if len(table) == 0:
            return np.zeros(0, dtype=np.int64)
        measures = table["measure"].astype(str)
        unknown = sorted(set(measures) - set(of))
        if unknown:
            raise InputError(f"merge: measure {unknown[0]!r} is not one the shard metadata "
                             "lists")
        return measures.map(of).to_numpy(dtype=np.int64)
    return block
