"""A crash-safe answer cache: SQLite in WAL mode, one committed transaction per answer.

Every completed answer is committed the moment it arrives, keyed by
`request_key` (a SHA-256 of backend kind, model, rendered messages, sampling parameters,
seed and try index). A process killed with SIGKILL loses at most the answers still in flight
(a committed WAL transaction is in the operating system's hands once ``COMMIT`` returns), and a
restarted run sends no request whose key is stored. The raw text is kept, so a newer parser
re-reads old answers without any request. No secret is ever part of a key or a row.

Runs that send requests hold an exclusive lock on the cache (:meth:`AnswerCache.writer_lock`, an
``fcntl.flock`` on the sidecar file ``<cache>.lock``, released by the operating system when the
process ends, even by SIGKILL), so two identical runs never pay twice; if an answer for a key is
stored anyway by someone else first (a platform without ``flock``), the stored answer wins and is
the one a run reports (:meth:`AnswerCache.put` returns False).

A file that is not a storyeval cache of a known schema (another program's SQLite database, an
``answers`` table with other columns, a file that is no SQLite database) is refused with one
line naming it, *before* anything in it is changed (it is inspected read-only; no table is
added and it is not switched to WAL). An SQLite error later on (a corrupt page, a full disk)
is one line naming the file too; a damaged cache is never modified, and the message says how
to copy what can still be read into a new cache (``sqlite3 FILE .recover``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from storyeval.exceptions import InputError

__all__ = [
    "KEY_VERSION",
    "AnswerCache",
    "key_from_prefix",
    "key_prefix",
    "messages_digest",
    "request_key",
]

#: Part of every key; bump to invalidate all keys if the key recipe changes.
KEY_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    messages_sha TEXT NOT NULL,
    sampling TEXT NOT NULL,
    try_index INTEGER NOT NULL,
    seed INTEGER,
    raw TEXT NOT NULL,
    finish_reason TEXT,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    latency_s REAL,
    attempts INTEGER,
    created REAL NOT NULL,
    parser_version TEXT,
    rating REAL,
    status TEXT,
    explanation TEXT
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_SCHEMA_VERSION = "1"


def messages_digest(messages: Sequence[dict[str, str]]) -> str:
    """SHA-256 hex digest of the rendered chat messages (roles and contents, unambiguously
    separated)."""
    h = hashlib.sha256()
    for m in messages:
        role, content = m["role"].encode("utf-8"), m["content"].encode("utf-8")
        h.update(b"%d:%s%d:%s" % (len(role), role, len(content), content))
    return h.hexdigest()


def key_prefix(*, backend: str, model: str, sampling: dict[str, Any]) -> str:
    """The part of `request_key` shared by every request of a run."""
    return json.dumps([KEY_VERSION, backend, model, sampling], sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False)


def key_from_prefix(prefix: str, messages_sha: str, try_index: int, seed: int | None) -> str:
    """`request_key` from a `key_prefix` (the fast path for many requests)."""
    blob = f"{prefix}\x1f{messages_sha}\x1f{seed}\x1f{int(try_index)}"
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def request_key(*, backend: str, model: str, messages_sha: str, sampling: dict[str, Any],
                try_index: int, seed: int | None) -> str:
    """The cache key of one request (SHA-256 hex).

    Inputs: ``KEY_VERSION``, backend kind, model, `messages_digest` of the messages, the
    sampling parameters (canonical JSON), the seed and the try index. Never an API key or a URL.
    """
    return key_from_prefix(key_prefix(backend=backend, model=model, sampling=sampling),
                           messages_sha, try_index, seed)


_COLUMNS = ("key", "backend", "model", "messages_sha", "sampling", "try_index", "seed", "raw",
            "finish_reason", "prompt_tokens", "completion_tokens", "latency_s", "attempts",
            "created", "parser_version", "rating", "status", "explanation")
#: The statement of `AnswerCache.put`: a stored answer wins, except an empty one.
_PUT = (f"INSERT INTO answers ({','.join(_COLUMNS)}) VALUES ({','.join('?' * len(_COLUMNS))}) "
        "ON CONFLICT(key) DO UPDATE SET "
        + ",".join(f"{c}=excluded.{c}" for c in _COLUMNS if c != "key")
        + " WHERE trim(answers.raw) = ''")


def _has_wal(p: Path) -> bool:
    wal = Path(str(p) + "-wal")
    return wal.exists() and wal.stat().st_size > 0


def _create(p: Path, synchronous: str) -> None:
    """Create a new, empty cache at ``p`` whole: built under a temporary name, then linked into
    place (``os.link`` fails if another process created ``p`` meanwhile, and then its cache is
    used). A crash leaves at most a temporary file, never an empty or half-made cache."""
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute(f"PRAGMA synchronous={synchronous}")
            con.executescript(_SCHEMA)
            con.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (_SCHEMA_VERSION,))
        finally:
            con.close()  # checkpoints the WAL into the file and removes it
        try:
            os.link(tmp, p)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: let SQLite create it in place
            pass
    except sqlite3.Error:  # pragma: no cover - e.g. a read-only folder: SQLite will say why
        pass
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(str(tmp) + suffix)


def _cache_error(path: str, exc: BaseException) -> InputError:
    """One line for an SQLite error on the cache file."""
    text = str(exc)
    if "not a database" in text:
        return InputError(f"cache file {path!r} is not a storyeval answer cache (not an SQLite "
                          "database); storyeval changed nothing in it: give another --cache path")
    if "malformed" in text or "corrupt" in text:
        return InputError(
            f"cache file {path!r} is damaged ({text}); storyeval changed nothing in it. Copy "
            f"what can be read into a new cache with `sqlite3 {path} .recover | sqlite3 NEW` "
            "and pass --cache NEW (answers in it are not asked again)")
    if "full" in text or "disk I/O" in text:
        return InputError(f"cannot write the cache file {path!r}: {text} (free space and rerun; "
                          "answers stored so far are kept)")
    return InputError(f"cache file {path!r}: {text}")


def _sqlite_errors(method):
    """Turn an SQLite error inside a cache method into one line naming the file."""
    import functools

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise _cache_error(self.path, exc) from None

    return wrapper


def _check_known(path: str) -> None:
    """Refuse, before changing anything, a file that is not a storyeval cache of a known
    version: a foreign SQLite database (other tables, or ``answers`` without storyeval's
    columns), a damaged one, or another file. Read-only: the file is opened with
    ``mode=ro`` and never switched to WAL."""
    from urllib.parse import quote

    try:
        con = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro", uri=True,
                              timeout=30)
    except sqlite3.Error as exc:
        raise _cache_error(path, exc) from None
    try:
        tables = {r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")}
        if tables and tables <= {"answers", "meta"}:
            columns = {r[1] for r in con.execute("PRAGMA table_info(answers)")}
            if "answers" in tables and not set(_COLUMNS) <= columns:
                tables.add("answers (with other columns)")
            elif "meta" in tables:
                row = con.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
                if row is not None and row[0] != _SCHEMA_VERSION:
                    raise InputError(f"cache file {path!r} has schema {row[0]}, this storyeval "
                                     f"reads schema {_SCHEMA_VERSION}")
    except sqlite3.DatabaseError as exc:
        raise _cache_error(path, exc) from None
    finally:
        con.close()
    foreign = sorted(tables - {"answers", "meta"})
    if foreign or not tables:
        held = f"it holds the table(s) {', '.join(foreign)}" if foreign else "it holds no table"
        raise InputError(f"cache file {path!r} is not a storyeval answer cache ({held}); "
                         "storyeval changed nothing in it: give another --cache path")


class AnswerCache:
    """SQLite answer store (WAL, ``synchronous=NORMAL``, one commit per answer).

    Parameters
    ----------
    path : str or Path
        The database file (created with its folder if missing). ``":memory:"`` for tests.
    synchronous : {"NORMAL", "FULL"}, default "NORMAL"
        ``NORMAL`` survives a killed process (SIGKILL); ``FULL`` also survives a power loss at
        the cost of an fsync per answer.

    Examples
    --------
    >>> c = AnswerCache(":memory:")
    >>> c.put(key="k", backend="openai", model="m", messages_sha="s", sampling={}, try_index=0,
    ...       seed=0, raw="4")
    True
    >>> c.get_many(["k"])["k"]["raw"]
    '4'
    """

    def __init__(self, path: str | Path, *, synchronous: str = "NORMAL") -> None:
        if synchronous.upper() not in ("NORMAL", "FULL"):
            raise InputError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self.path = str(path)
        if self.path != ":memory:":
            p = Path(self.path)
            if p.exists() and p.is_dir():
                raise InputError(f"cache path {self.path!r} is a directory, expected a file")
            if p.exists() and p.stat().st_size == 0 and not _has_wal(p):
                raise InputError(
                    f"cache file {self.path!r} is empty (0 bytes), so it is not a storyeval answer "
                    "cache (an interrupted copy or download?); storyeval never leaves an empty "
                    "cache behind. Delete it to start a new cache, or give the right file")
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists():
                _create(p, synchronous.upper())
        self._lock = threading.Lock()
        if self.path != ":memory:":
            _check_known(self.path)  # before anything is changed (no table, no WAL switch)
        try:
            self._con = sqlite3.connect(self.path, timeout=30, check_same_thread=False,
                                        isolation_level=None)
            self._con.execute("PRAGMA journal_mode=WAL")
            self._con.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._con.executescript(_SCHEMA)
            row = self._con.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
            if row is None:
                self._con.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)",
                                  (_SCHEMA_VERSION,))
        except sqlite3.DatabaseError as exc:
            raise _cache_error(self.path, exc) from None
        if row is not None and row[0] != _SCHEMA_VERSION:
            raise InputError(f"cache file {self.path!r} has schema {row[0]}, this storyeval "
                             f"reads schema {_SCHEMA_VERSION}")

    # -- locking ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def writer_lock(self, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
        """Hold the cache's exclusive writer lock (``fcntl.flock`` on ``<path>.lock``).

        A run that sends requests holds it from the moment it decides what to send until its
        last answer is stored, so a second run on the same cache waits, then finds the first
        run's answers stored and sends only what is still missing. ``on_wait(message)`` is
        called once if the lock is held by another process (the message names its pid). The
        operating system releases the lock when the holder ends, even by SIGKILL. Without
        ``fcntl`` (Windows) or for ``":memory:"`` this does nothing.
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX
            fcntl = None
        if fcntl is None or self.path == ":memory:":
            yield
            return
        lock_path = self.path + ".lock"
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    try:
                        holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
                    except OSError:
                        holder = ""
                    on_wait(f"the answer cache {self.path!r} is in use by another storyeval run"
                            f"{f' (pid {holder})' if holder.isdigit() else ''}; waiting for it "
                            "to finish, then only what is still missing is sent")
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
            except OSError:  # the pid is a courtesy
                pass
            yield
        finally:
            os.close(fd)  # releases the lock

    # -- writing ---------------------------------------------------------------------------
    @_sqlite_errors
    def put(self, *, key: str, backend: str, model: str, messages_sha: str, sampling: dict,
            try_index: int, seed: int | None, raw: str, finish_reason: str | None = None,
            prompt_tokens: int | None = None, completion_tokens: int | None = None,
            latency_s: float | None = None, attempts: int | None = None,
            parser_version: str | None = None, rating: float | None = None,
            status: str | None = None, explanation: str | None = None) -> bool:
        """Store one answer and commit at once.

        Returns False if an answer for the key was already stored: the stored answer wins
        (read it with :meth:`get_many` and use it). The one exception is a stored empty answer
        (older storyeval versions cached those), which a new answer replaces.
        """
        row = (key, backend, model, messages_sha,
               json.dumps(sampling, sort_keys=True, separators=(",", ":")), int(try_index),
               seed, raw, finish_reason, prompt_tokens, completion_tokens, latency_s, attempts,
               time.time(), parser_version, rating, status, explanation)
        with self._lock:
            cur = self._con.execute(_PUT, row)
        return cur.rowcount == 1

    @_sqlite_errors
    def discard(self, key: str) -> bool:
        """Remove the answer stored for ``key`` and commit at once (an answer found, after it
        was stored, to be a replay of another request's response); True if one was removed."""
        with self._lock:
            cur = self._con.execute("DELETE FROM answers WHERE key = ?", (key,))
        return cur.rowcount == 1

    @_sqlite_errors
    def update_parsed(self, rows: Iterable[tuple[str, float | None, str, str]],
                      parser_version: str) -> int:
        """Store re-parsed results ``(key, rating, status, explanation)`` for ``parser_version``."""
        data = [(r, s, e, parser_version, k) for k, r, s, e in rows]
        if not data:
            return 0
        with self._lock:
            self._con.execute("BEGIN")
            try:
                self._con.executemany(
                    "UPDATE answers SET rating=?, status=?, explanation=?, parser_version=? "
                    "WHERE key=?", data)
                self._con.execute("COMMIT")
            except BaseException:
                self._con.execute("ROLLBACK")
                raise
        return len(data)

    # -- reading ---------------------------------------------------------------------------
    @_sqlite_errors
    def get_many(self, keys: Iterable[str], *,
                 columns: Sequence[str] = ("raw", "parser_version", "rating", "status",
                                           "explanation")) -> dict[str, dict[str, Any]]:
        """Stored rows for the given keys (missing keys are absent from the result)."""
        bad = [c for c in columns if c not in _COLUMNS]
        if bad:
            raise InputError(f"unknown cache column(s) {bad}; available: {list(_COLUMNS)}")
        keys = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        select = ",".join(("key", *columns))
        rows: list[tuple] = []
        with self._lock:
            for start in range(0, len(keys), 900):  # SQLite's limit on bound parameters
                chunk = keys[start:start + 900]
                rows += self._con.execute(
                    f"SELECT {select} FROM answers WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk).fetchall()
        for row in rows:
            out[row[0]] = dict(zip(columns, row[1:]))
        return out

    @_sqlite_errors
    def keys(self) -> set[str]:
        """All stored keys."""
        with self._lock:
            return {r[0] for r in self._con.execute("SELECT key FROM answers")}

    @_sqlite_errors
    def __len__(self) -> int:
        with self._lock:
            return int(self._con.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    @_sqlite_errors
    def to_frame(self):
        """All stored rows as a DataFrame (for inspection and export)."""
        import pandas as pd

        with self._lock:
            rows = self._con.execute(f"SELECT {','.join(_COLUMNS)} FROM answers").fetchall()
        return pd.DataFrame(rows, columns=list(_COLUMNS))

    def close(self) -> None:
        """Close the connection (the data are already committed)."""
        with self._lock:
            self._con.close()

    def __enter__(self) -> AnswerCache:  # noqa: PYI034
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
