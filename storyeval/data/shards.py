"""Sharded runs: a deterministic split of stories (or pairs) into N shards, the metadata each
shard records next to its output, and the merge of shard outputs into the file one run writes.

A unit (a story, a pair of stories) belongs to shard ``1 + blake2b(id) mod N``, where ``id`` is
the unit's UTF-8 identifier and ``blake2b`` the 8-byte BLAKE2b digest read as a big-endian
unsigned integer: the same on every machine, Python version and process (never Python's
``hash()``, which is salted per process). Each shard writes its output and a sidecar JSON
(``OUT.shard.json``, or ``shard.json`` inside an output folder) that records the shard, the
settings of the run, a fingerprint of all the unit ids of the input and one of the input's texts,
the positions of this shard's units in it and, for each file the shard wrote, its header, row
count, rows per unit and SHA-256 (`record_files`). `check_coverage` refuses overlapping, missing
or mismatched shards, `merge_shard_tables` refuses a file that differs from what its sidecar
records, and `merge_tables` restores the order of a single run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
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
    "inputs_fingerprint",
    "make_shard_info",
    "merge_shard_tables",
    "merge_tables",
    "pair_ids",
    "read_shard_info",
    "read_table_raw",
    "record_files",
    "shard_numbers",
    "shard_rows",
    "sidecar_path",
    "write_shard_info",
    "write_table_raw",
]

#: The sidecar of an output file ``OUT`` is ``OUT`` + this suffix.
SIDECAR_SUFFIX = ".shard.json"
_FORMAT = "storyeval-shard"
#: Version 2 adds the input texts' fingerprint and the files' records; version 1 sidecars
#: (storyeval 0.3.0 and 0.3.1) are merged only with ``trust_old_sidecars``.
_VERSION = 2
_OLD_VERSIONS = (1,)
#: The largest shard count N (more shards than units only adds empty shards).
MAX_SHARDS = 1_000_000
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
        if self.count > MAX_SHARDS:
            raise InputError(f"--shard: N is at most {MAX_SHARDS} (more shards than stories "
                             f"only adds empty ones), got {self.index}/{self.count}")

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
    if not 1 <= int(count) <= MAX_SHARDS:
        raise InputError(f"shard count must be from 1 to {MAX_SHARDS}, got {count}")
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


def inputs_fingerprint(inputs: pd.DataFrame, *, chunk: int = 65_536) -> str:
    """SHA-256 of a whole input table: its column names (sorted) and, column by column, the
    text (``str``) of every cell in row order, each prefixed by its length in bytes; a missing
    value (None, NaN, NA) has its own mark, whatever the column's dtype.

    Shards made from two inputs with the same ids but another text (a story, a prompt, a
    system) get different fingerprints; the order of the columns does not matter.
    """
    missing = b"\xff" * 8
    h = hashlib.sha256()
    for column in sorted(inputs.columns, key=str):
        name = str(column).encode("utf-8")
        h.update(len(name).to_bytes(8, "big") + name)
        values = inputs[column]
        for start in range(0, len(values), chunk):
            part = values.iloc[start:start + chunk]
            cells = [None if na else str(v).encode("utf-8")
                     for v, na in zip(part, part.isna().to_numpy())]
            h.update(b"".join(missing if c is None else len(c).to_bytes(8, "big") + c
                              for c in cells))
    return h.hexdigest()


def sidecar_path(out: str | Path) -> Path:
    """Where the shard metadata of ``out`` lives: ``out/shard.json`` for an output folder,
    else ``out`` + ``.shard.json``."""
    out = Path(out)
    return out / "shard.json" if out.is_dir() else out.with_name(out.name + SIDECAR_SUFFIX)


@dataclass(frozen=True)
class ShardInfo:
    """The metadata a shard records beside its output (see the module docstring).

    ``inputs`` is the `inputs_fingerprint` of the input (None in a version-1 sidecar); each
    entry of ``extra["files"]`` names a file beside the sidecar and, once `record_files` has
    seen it, its ``columns``, ``rows``, ``unit_rows`` (rows per unit, in the order of
    ``units``), ``bytes`` and ``sha256``.
    """

    command: str
    shard: Shard
    settings: dict[str, Any]
    total: int
    fingerprint: str
    units: list[str]
    positions: list[int]
    extra: dict[str, Any]
    path: Path | None = None
    inputs: str | None = None
    version: int = _VERSION

    def to_json(self) -> str:
        return json.dumps({
            "format": _FORMAT, "version": self.version, "command": self.command,
            "shard": str(self.shard), "settings": self.settings, "total": self.total,
            "fingerprint": self.fingerprint, "inputs": self.inputs, "extra": self.extra,
            "units": self.units, "positions": self.positions},
            indent=1, sort_keys=False, default=str) + "\n"


def write_shard_info(sidecar: str | Path, *, command: str, shard: Shard | str,
                     settings: Mapping[str, Any], all_ids: Sequence[str],
                     inputs: pd.DataFrame, extra: Mapping[str, Any] | None = None) -> ShardInfo:
    """Write the sidecar of a shard whose files are written (atomically) and return it: see
    `make_shard_info` and `record_files`."""
    from storyeval._atomic import atomic_write_text

    info = record_files(make_shard_info(sidecar, command=command, shard=shard,
                                        settings=settings, all_ids=all_ids, inputs=inputs,
                                        extra=extra))
    atomic_write_text(sidecar, info.to_json())
    return info


def make_shard_info(sidecar: str | Path, *, command: str, shard: Shard | str,
                    settings: Mapping[str, Any], all_ids: Sequence[str],
                    inputs: pd.DataFrame, extra: Mapping[str, Any] | None = None) -> ShardInfo:
    """The metadata of a shard: ``all_ids`` are the unit ids of the whole input, in input
    order; it records their number, their `ids_fingerprint`, the `inputs_fingerprint` of
    ``inputs`` (the whole input table the units come from: their texts), and this shard's ids
    with their positions; ``settings`` are the options shards of one run must share. Its
    files are recorded by `record_files` once written."""
    shard = Shard.parse(shard)
    ids = [str(i) for i in all_ids]
    rows = shard_rows(ids, shard)
    info = ShardInfo(command=command, shard=shard,
                     settings=json.loads(json.dumps(dict(settings), default=str)),
                     total=len(ids), fingerprint=ids_fingerprint(ids),
                     units=[ids[i] for i in rows], positions=rows.tolist(),
                     extra=json.loads(json.dumps(dict(extra or {}), default=str)),
                     path=Path(sidecar), inputs=inputs_fingerprint(inputs))
    return info


def _file_digest(path: Path) -> tuple[int, str]:
    """The size in bytes and the SHA-256 of a file, read in blocks."""
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            h.update(block)
            size += len(block)
    return size, h.hexdigest()


def _columns(table: pd.DataFrame) -> list[str]:
    return [str(c) for c in table.columns if c != "_line"]


def record_files(info: ShardInfo, folder: str | Path | None = None) -> ShardInfo:
    """``info`` with each of its files (``extra["files"]``, read from ``folder``, by default
    the sidecar's) recorded as `storyeval merge` checks it: header, rows, rows per unit of
    the shard, bytes and SHA-256. Call it once the files are written, then write the sidecar.
    """
    base = Path(folder) if folder is not None else Path(info.path or ".").parent
    files = []
    for spec in info.extra.get("files", []):
        path = base / spec["name"]
        table = read_table_raw(path, spec["format"])
        counts = _unit_column(table, spec["unit"]).value_counts()
        size, digest = _file_digest(path)
        files.append({**spec, "columns": _columns(table), "rows": len(table),
                      "unit_rows": [int(counts.get(u, 0)) for u in info.units],
                      "bytes": size, "sha256": digest})
    return replace(info, extra={**info.extra, "files": files})


class _Bad(ValueError):
    """A field of a sidecar that is not what storyeval writes."""


def _field(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...],
           what: str = "") -> Any:
    if key not in data:
        raise _Bad(f"no {what}{key!r} field")
    value = data[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _Bad(f"{what}{key!r} is a {type(value).__name__}")
    return value


def _list_of(data: Mapping[str, Any], key: str, kind: type, what: str = "") -> list:
    values = _field(data, key, list, what)
    if any(not isinstance(v, kind) or isinstance(v, bool) for v in values):
        raise _Bad(f"{what}{key!r} holds a value that is not a {kind.__name__}")
    return values


def _plain_name(name: str) -> bool:
    """A file name that stays beside the sidecar: no folder part, not absolute, not ``..``."""
    return (bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name
            and "\x00" not in name and not Path(name).is_absolute() and ":" not in name[:2])


def _parse_files(extra: Mapping[str, Any], units: int, version: int) -> None:
    files = _list_of(extra, "files", dict, "extra: ")
    for spec in files:
        what = f"file {spec.get('role')!r}: "
        for key in ("role", "name", "format", "unit"):
            _field(spec, key, str, what)
        if not _plain_name(spec["name"]):
            raise _Bad(f"{what}its name {spec['name']!r} leaves the sidecar's folder (a "
                       "shard's files are named beside its sidecar)")
        if version >= 2:
            _list_of(spec, "columns", str, what)
            _field(spec, "rows", int, what)
            _field(spec, "bytes", int, what)
            _field(spec, "sha256", str, what)
            if len(_list_of(spec, "unit_rows", int, what)) != units:
                raise _Bad(f"{what}'unit_rows' does not have one count per unit")


def _first_repeat(values: Iterable[str]) -> str | None:
    seen: set[str] = set()
    for v in values:
        if v in seen:
            return v
        seen.add(v)
    return None


def read_shard_info(sidecar: str | Path) -> ShardInfo:
    """Read a sidecar; an `InputError` naming the file when it is missing, not one, or names
    a file outside its folder. A version-1 sidecar (storyeval 0.3) is read with
    ``version=1`` and ``inputs=None``."""
    path = Path(sidecar)
    if not path.is_file():
        raise InputError(f"{path}: no shard metadata (was the output written with --shard K/N?)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise _Bad(f"a JSON {type(data).__name__}, not an object")
        if data.get("format") != _FORMAT:
            raise _Bad("not a storyeval shard file")
        version = data.get("version")
        if version != _VERSION and version not in _OLD_VERSIONS:
            raise _Bad(f"version {version!r}, this storyeval reads "
                       f"{', '.join(map(str, (*_OLD_VERSIONS, _VERSION)))}")
        units = _list_of(data, "units", str)
        twice = _first_repeat(units)
        if twice is not None:
            raise _Bad(f"unit {_short(twice)} listed twice")
        positions = _list_of(data, "positions", int)
        total = _field(data, "total", int)
        if len(positions) != len(units) or any(not 0 <= p < total for p in positions):
            raise _Bad("'positions' are not one position in the input per unit")
        extra = _field(data, "extra", dict)
        _parse_files(extra, len(units), version)
        try:
            shard = Shard.parse(_field(data, "shard", str))
        except InputError as exc:
            raise _Bad(f"'shard': {exc}") from exc
        return ShardInfo(command=_field(data, "command", str), shard=shard,
                         settings=_field(data, "settings", dict), total=total,
                         fingerprint=_field(data, "fingerprint", str), units=units,
                         positions=positions, extra=extra, path=path,
                         inputs=_field(data, "inputs", str) if version >= 2 else None,
                         version=version)
    except (ValueError, OSError) as exc:  # _Bad, JSON and UTF-8 errors
        raise InputError(f"{path}: not a storyeval shard metadata file ({exc})") from exc


def _names(infos: Sequence[ShardInfo]) -> str:
    return ", ".join(f"{i.shard} ({i.path})" for i in infos)


def check_coverage(infos: Sequence[ShardInfo]) -> int:
    """Check that ``infos`` are the N shards of one run exactly once each; return N.

    Raises
    ------
    InputError
        One line naming the shards that overlap (given twice) or are missing, the shards
        whose command, count, input (ids or texts) or settings differ from the first one's,
        or a shard whose units are not the ones its shard number gives.
    """
    if not infos:
        raise InputError("merge: no shard given")
    first = infos[0]
    for info in infos[1:]:
        for what, a, b in (("command", first.command, info.command),
                           ("shard count", first.shard.count, info.shard.count),
                           ("input (story ids)", (first.total, first.fingerprint),
                            (info.total, info.fingerprint)),
                           ("input (texts of the same ids)",
                            *((first.inputs, info.inputs) if first.inputs and info.inputs
                              else (None, None)))):
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
    for info in infos:
        wrong = np.flatnonzero(shard_numbers(info.units, n) != info.shard.index)
        if len(wrong):
            raise InputError(f"merge: shard {info.shard} ({info.path}): unit "
                             f"{info.units[wrong[0]]!r} belongs to shard "
                             f"{shard_numbers([info.units[wrong[0]]], n)[0]}/{n}; the "
                             "metadata was changed")
    held = np.bincount(np.fromiter((p for i in infos for p in i.positions), dtype=np.int64),
                       minlength=first.total)
    if (held != 1).any():
        raise InputError(f"merge: the shards hold {int((held > 0).sum())} distinct of "
                         f"{first.total} units (some twice or none); they are not the shards "
                         "of one run")
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


def merge_shard_tables(outputs: Sequence[str | Path], *, trust_old_sidecars: bool = False,
                       ) -> tuple[list[ShardInfo], dict[str, tuple[pd.DataFrame, str]]]:
    """Read the shard outputs (files or folders written with ``--shard K/N``), check that they
    are the N shards of one run (`check_coverage`), verify every file against its sidecar and
    merge each of their tables; nothing is written.

    Each file is read from the path given (a `rate` folder's files and a file output's other
    files from beside the sidecar, by names that cannot leave it) and must have the header,
    the rows, the rows per unit of the shard and the SHA-256 its sidecar records
    (`record_files`); the shards' headers must agree. Anything else is an `InputError` of one
    line naming the shard's file and what differs.

    Parameters
    ----------
    outputs : sequence of paths
        The shards' outputs, in any order.
    trust_old_sidecars : bool, default False
        Merge version-1 sidecars (storyeval 0.3), which record neither the files' SHA-256 nor
        the input's texts, with the checks they allow (coverage, ids, header, units of the
        shard, no duplicated row, every unit present in `score` and `rate` files, the SHA-256
        a `rate` folder's settings.json records); without it they are refused.

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
    given = [Path(p) for p in outputs]
    infos = [read_shard_info(sidecar_path(p)) for p in given]
    old = [i for i in infos if i.version < _VERSION]
    if old and not trust_old_sidecars:
        raise InputError(
            f"merge: shard {old[0].shard} ({old[0].path}) was made by an older storyeval "
            f"(sidecar version {old[0].version}: no SHA-256 of its files, no fingerprint of "
            "its input's texts); re-run the shard (its cache spares the work done) or pass "
            "--trust-old-sidecars")
    check_coverage(infos)
    roles = [spec["role"] for spec in infos[0].extra["files"]]
    merged: dict[str, tuple[pd.DataFrame, str]] = {}
    for role in roles:
        tables, paths = [], []
        for out, info in zip(given, infos):
            spec = next((f for f in info.extra["files"] if f["role"] == role), None)
            if spec is None or len(info.extra["files"]) != len(roles):
                raise InputError(f"merge: shard {info.shard} ({info.path}): its files differ "
                                 f"from shard {infos[0].shard}'s ({infos[0].path})")
            paths.append(_shard_file(out, info, spec))
            tables.append(_verified_table(paths[-1], info, spec))
        _same_header(tables, infos, paths)
        spec = infos[0].extra["files"][roles.index(role)]
        merged[role] = (merge_tables(tables, infos, unit_ids=_unit_ids(spec["unit"]),
                                     block=_blocks(spec.get("blocks"))), spec["format"])
    return infos, merged


def _shard_file(out: Path, info: ShardInfo, spec: Mapping[str, Any]) -> Path:
    """The file of ``spec``: the path given for a file output's main table, else the name
    (checked plain by `read_shard_info`) beside the sidecar."""
    folder = info.extra.get("format") == "folder"
    if folder != out.is_dir():
        raise InputError(f"merge: shard {info.shard} ({out}): a "
                         f"{'folder' if out.is_dir() else 'file'}, but its sidecar "
                         f"{info.path} describes a {'folder' if folder else 'file'}")
    if not folder and spec["role"] == "main":
        return out
    return Path(info.path or out).parent / spec["name"]


def _short(name: object, width: int = 40) -> str:
    text = repr(str(name))
    return text if len(text) <= width else text[:width - 4] + "...'"


def _header_change(got: list[str], want: list[str]) -> str:
    """How the header ``got`` differs from ``want``, in a few words."""
    absent = [c for c in want if c not in got]
    extra = [c for c in got if c not in want]
    if absent and extra:
        return f"column {_short(extra[0])} where {_short(absent[0])} is expected"
    if extra:
        return f"{len(extra)} extra column(s), first {_short(extra[0])}"
    if absent:
        return f"{len(absent)} missing column(s), first {_short(absent[0])}"
    return "the same columns in another order" if got != want else "none"


def _old_record(info: ShardInfo, spec: Mapping[str, Any]) -> dict[str, Any]:
    """What a version-1 shard's files are known by: a `score` table holds one row per story
    and measure of its metrics (``blocks``); a `rate` folder's settings.json lists its tables'
    rows and SHA-256."""
    if spec.get("blocks"):
        per_unit = sum(len(b) for b in spec["blocks"])
        return {"rows": per_unit * len(info.units), "unit_rows": [per_unit] * len(info.units)}
    if info.extra.get("format") != "folder" or info.path is None:
        return {}
    try:
        listed = json.loads((Path(info.path).parent / "settings.json").read_text(
            encoding="utf-8"))["files"][spec["name"]]
        return {"rows": int(listed["rows"]), "sha256": str(listed["sha256"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


#: The files in which every unit of a shard has rows (a metric scores every story; a rater
#: rates every story, failures included).
_EVERY_UNIT = {("score", "main"), ("rate", "ratings")}


def _verified_table(path: Path, info: ShardInfo, spec: Mapping[str, Any]) -> pd.DataFrame:
    """The table of one shard's file, read after the checks of `merge_shard_tables`."""
    where = f"merge: shard {info.shard} ({path})"
    if not path.is_file():
        raise InputError(f"{where}: no such file (the shard's {spec['role']} file)")
    try:
        table = read_table_raw(path, spec["format"])
    except InputError:
        raise
    except (ValueError, TypeError, KeyError, OSError) as exc:  # a damaged file
        detail = " ".join(str(exc).split())[:120]
        raise InputError(f"{where}: cannot be read as {spec['format']} ({detail})") from exc
    record = dict(spec) if info.version >= 2 else _old_record(info, spec)
    columns = _columns(table)
    if "rows" in record and len(table) != record["rows"]:
        empty = " (0 bytes)" if path.stat().st_size == 0 else ""
        raise InputError(f"{where}: {len(table)} rows{empty}, its sidecar records "
                         f"{record['rows']} (the file was cut, extended or replaced after the "
                         "shard wrote it)")
    if "columns" in record and columns != record["columns"]:
        raise InputError(f"{where}: the header differs from the one its sidecar records: "
                         f"{_header_change(columns, record['columns'])}")
    needed = ["story_a", "story_b"] if spec["unit"] == "pair" else [spec["unit"]]
    absent = [c for c in needed if c not in columns]
    if absent and (len(table) or info.units and (info.command, spec["role"]) in _EVERY_UNIT):
        raise InputError(f"{where}: no column {_short(absent[0])} (its header: "
                         f"{', '.join(_short(c) for c in columns[:5])})")
    counts = _unit_column(table, spec["unit"]).value_counts()
    foreign = counts.index[~counts.index.isin(info.units)]
    if len(foreign):
        raise InputError(f"{where}: rows of unit {_short(foreign[0])}, which is not one of "
                         f"shard {info.shard}'s units")
    got = counts.reindex(info.units, fill_value=0).to_numpy()
    if "unit_rows" in record:
        wrong = np.flatnonzero(got != np.asarray(record["unit_rows"], dtype=np.int64))
        if len(wrong):
            u = wrong[0]
            raise InputError(f"{where}: unit {_short(info.units[u])} has {got[u]} rows, its "
                             f"sidecar records {record['unit_rows'][u]}")
    if info.version < 2:  # what an old sidecar cannot say: no row twice, no unit left out
        key = [spec["unit"], "measure"] if spec.get("blocks") and "measure" in columns \
            else columns
        twice = np.flatnonzero(table[key].astype(str).duplicated().to_numpy()) if len(table) \
            else np.zeros(0, dtype=np.int64)
        if len(twice):
            raise InputError(f"{where}: data row {twice[0] + 1} repeats an earlier row"
                             + (" (story and measure)" if key != columns else ""))
        if (info.command, spec["role"]) in _EVERY_UNIT and (got == 0).any():
            raise InputError(f"{where}: no row of unit "
                             f"{_short(info.units[int(np.argmax(got == 0))])} of the shard "
                             "(the file was cut or replaced)")
    if "sha256" in record:
        size, digest = _file_digest(path)
        if digest != record["sha256"]:
            raise InputError(f"{where}: its SHA-256 differs from the one its sidecar records "
                             f"({size} bytes, recorded {record.get('bytes', '?')}): the file "
                             "changed after the shard wrote it")
    return table


def _same_header(tables: Sequence[pd.DataFrame], infos: Sequence[ShardInfo],
                 paths: Sequence[Path]) -> None:
    """The shards' files of one role have one header (an empty shard's file may have none)."""
    ref = next((k for k, t in enumerate(tables) if _columns(t)), None)
    if ref is None:
        return
    want = _columns(tables[ref])
    for table, info, path in zip(tables, infos, paths):
        got = _columns(table)
        if got and got != want:
            raise InputError(f"merge: shard {info.shard} ({path}): the header differs from "
                             f"shard {infos[ref].shard}'s ({paths[ref]}): "
                             f"{_header_change(got, want)}")


def _unit_ids(unit: str):
    def ids(table: pd.DataFrame) -> list[str]:
        return _unit_column(table, unit).tolist()
    return ids


def _unit_column(table: pd.DataFrame, unit: str) -> pd.Series:
    """The unit id of each row (`pair_ids` of story_a and story_b for ``unit="pair"``)."""
    if len(table) == 0:
        return pd.Series([], dtype=object)
    if unit == "pair":
        return table["story_a"].astype(str) + "\x1f" + table["story_b"].astype(str)
    return table[unit].astype(str)


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
