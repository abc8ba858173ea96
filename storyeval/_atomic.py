"""Atomic outputs: a file is either its previous version or the complete new one, never cut.

- [`atomic_write_text`][storyeval._atomic.atomic_write_text] and
  [`atomic_write_bytes`][storyeval._atomic.atomic_write_bytes] write a temporary file in the
  target's folder, flush it to disk and ``os.replace`` it onto the target;
- [`atomic_path`][storyeval._atomic.atomic_path] does the same for writers that take a path
  (``DataFrame.to_csv``, ``Figure.savefig``);
- [`OutputFolder`][storyeval._atomic.OutputFolder] stages all the files of one run in a hidden
  folder and moves them into place at the end: an interrupted run leaves the previous run's
  files as they were. A folder that already holds files is refused unless ``overwrite``; then
  the files of the previous run (listed in the hidden manifest ``.storyeval-run.json``) that
  this run does not write are removed. Files storyeval did not write are never removed, and
  nothing is removed or written through a symbolic link that leads out of the folder.
- While it stages and publishes, a run holds the folder's lock
  ([`folder_lock`][storyeval._atomic.folder_lock], ``fcntl.flock`` on ``.storyeval-lock``, removed
  at the end): a second run on the same folder at that moment is refused with one line naming
  the first one's process, so two runs never mix or delete each other's files.

A target that exists and is not a regular file (``/dev/null``, ``/dev/stdout``, a pipe) is
written directly: there is nothing to replace.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType

from storyeval.exceptions import InputError

__all__ = ["LOCK", "MANIFEST", "OutputFolder", "folder_lock", "atomic_path", "atomic_write_bytes",
           "atomic_write_text", "check_out_file"]

MANIFEST = ".storyeval-run.json"
"""The hidden file listing the files a run wrote into its output folder."""
LOCK = ".storyeval-lock"
"""The hidden lock file of an output folder (held with ``fcntl.flock`` while a run writes; removed
when it ends)."""
STAGING_PREFIX = ".storyeval-tmp-"


def _is_special(path: Path) -> bool:
    """Whether ``path`` exists and is neither a regular file nor a folder (a device, a pipe)."""
    return path.exists() and not path.is_file() and not path.is_dir()


def _temp_sibling(path: Path) -> Path:
    """A fresh hidden name beside ``path`` that keeps its suffix (writers infer the format)."""
    return path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}{path.suffix}")


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` reworded to name the file the user asked for, not a temporary name."""
    return type(exc)(exc.errno, exc.strerror or str(exc), str(path))


def check_out_file(path: Path, option: str = "--out") -> None:
    """An error when ``path``, an output file, is an existing folder."""
    if path.is_dir():
        raise InputError(f"{option} {path}: is a folder; give a file name")


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; on success it replaces ``path``.

    On an exception inside the block the temporary file is removed and ``path`` is untouched.
    A ``path`` that is a device or a pipe is yielded as it is (written directly).
    """
    path = Path(path)
    if _is_special(path):
        try:
            yield path
        except OSError as exc:
            raise _named(exc, path) from exc
        return
    check_out_file(path, "output")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_sibling(path)
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        raise _named(exc, path) from exc
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically; returns ``path``."""
    path = Path(path)
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
    return path


def atomic_write_text(path: str | Path, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; returns ``path``."""
    return atomic_write_bytes(path, text.encode(encoding))


def _previous_files(folder: Path) -> list[str]:
    """The files the previous run listed in the folder's manifest (none if unreadable)."""
    try:
        files = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [f for f in files if isinstance(f, str) and _is_relative(f)]


def _is_relative(name: str) -> bool:
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


class OutputFolder:
    """The output folder of one run: files are staged, then moved into ``path`` together.

    Use as a context manager: files are written to :meth:`file` (a staging path) and published
    when the block ends without an exception; on an exception the staged files are discarded.

    Parameters
    ----------
    path : path
        The output folder (created if needed).
    overwrite : bool, default False
        Accept a folder that already holds files: this run's files replace theirs, and the
        files of the previous storyeval run that this run does not write are removed.
    option : str
        How error messages name the folder (the command-line option).
    command : str
        Recorded in the manifest.
    """

    def __init__(self, path: str | Path, *, overwrite: bool = False, option: str = "--out",
                 command: str = "storyeval") -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.option = option
        self.command = command
        self.staging: Path | None = None
        self.names: list[str] = []
        self.published: list[Path] = []
        self._lock: int | None = None

    def __enter__(self) -> OutputFolder:
        self.open()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.discard()

    def check(self) -> None:
        """An error if the folder is a file, or holds files and ``overwrite`` is off."""
        if self.path.exists() and not self.path.is_dir():
            raise InputError(f"{self.option} {self.path}: exists and is not a folder; give "
                             "a folder name")
        if self.overwrite or not self.path.is_dir():
            return
        held = sorted(e.name for e in self.path.iterdir()
                      if e.name not in (MANIFEST, LOCK) and not e.name.startswith(STAGING_PREFIX))
        if held:
            shown = ", ".join(held[:3]) + (f" and {len(held) - 3} more" if len(held) > 3 else "")
            raise InputError(
                f"{self.option} {self.path}: the folder is not empty (it holds {shown}); pass "
                "--overwrite to replace a previous run's files (its files that this run does "
                "not write are removed), or choose a new folder")

    def open(self) -> None:
        """Check the folder (:meth:`check`), create it, take its lock (:func:`folder_lock`)
        and create the staging folder inside."""
        self.check()
        self.path.mkdir(parents=True, exist_ok=True)
        self._lock = folder_lock(self.path, self.option)
        try:
            self.check()  # another run may have written the folder before the lock was ours
            self.staging = self.path / f"{STAGING_PREFIX}{secrets.token_hex(4)}"
            self.staging.mkdir()
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        fd, self._lock = getattr(self, "_lock", None), None
        if fd is not None:
            release_folder_lock(self.path, fd)

    def file(self, name: str) -> Path:
        """The staging path where the file ``name`` (relative to the folder) is written."""
        if self.staging is None:
            raise RuntimeError("OutputFolder.file() before open()")
        if not _is_relative(name):
            raise InputError(f"output file name {name!r} must stay inside {self.path}")
        if name not in self.names:
            self.names.append(name)
        staged = self.staging / name
        staged.parent.mkdir(parents=True, exist_ok=True)
        return staged

    def final(self, staged: str | Path) -> Path:
        """The published path of a staged file (or of a name relative to the folder)."""
        staged = Path(staged)
        if self.staging is not None and staged.is_relative_to(self.staging):
            staged = staged.relative_to(self.staging)
        return self.path / staged

    def write_text(self, name: str, text: str) -> Path:
        """Stage the text file ``name``; returns its published path."""
        self.file(name).write_text(text, encoding="utf-8")
        return self.final(name)

    def commit(self) -> list[Path]:
        """Move the staged files into the folder, remove the previous run's stale files,
        write the manifest; returns the published paths."""
        if self.staging is None:
            raise RuntimeError("OutputFolder.commit() before open()")
        written = [n for n in self.names if (self.staging / n).is_file()]
        try:
            self._publish(written)
        finally:
            self._remove_staging()
        self.published = [self.path / n for n in written]
        return self.published

    def _inside(self, name: str) -> bool:
        """Whether ``name``'s folder, links resolved, is the output folder or inside it."""
        root = os.path.realpath(self.path)
        parent = os.path.realpath((self.path / name).parent)
        return parent == root or parent.startswith(root + os.sep)

    def _publish(self, written: list[str]) -> None:
        previous = _previous_files(self.path)
        for name in written:
            _fsync(self.staging / name)
        for name in written:
            if not self._inside(name):
                raise InputError(f"{self.option} {self.path}: {name} would be written through a "
                                 "symbolic link to outside the folder; remove the link")
        for name in written:
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.replace(self.staging / name, target)
            except OSError as exc:
                raise _named(exc, target) from exc
        for name in sorted(set(previous) - set(written)):
            stale = self.path / name
            if not self._inside(name):  # a planted manifest or link: never leave the folder
                continue
            if stale.is_symlink() or stale.is_file():
                stale.unlink()  # a link itself is removed, never what it points to
        manifest = {"tool": "storyeval", "command": self.command, "files": written}
        atomic_write_text(self.path / MANIFEST, json.dumps(manifest, indent=1) + "\n")

    def discard(self) -> None:
        """Drop the staged files; the folder keeps what it held."""
        self._remove_staging()

    def _remove_staging(self) -> None:
        try:
            for leftover in self.path.glob(f"{STAGING_PREFIX}*"):
                # under the folder's lock no other run is staging here: a leftover is an
                # interrupted run's
                if (leftover == self.staging or self.overwrite) and not leftover.is_symlink():
                    shutil.rmtree(leftover, ignore_errors=True)
        finally:
            self.staging = None
            self._release()


def release_folder_lock(folder: Path, fd: int) -> None:
    """Remove the lock file (still holding it, so no one else can have taken it meanwhile),
    then release it: a finished run leaves no lock file behind."""
    try:
        (folder / LOCK).unlink(missing_ok=True)
    except OSError:
        pass
    os.close(fd)


def folder_lock(folder: Path, option: str = "--out") -> int | None:
    """Take the exclusive lock of an output folder (``fcntl.flock`` on its hidden file
    ``.storyeval-lock``, released by the operating system when the process ends, even by
    SIGKILL) and return its descriptor; None where ``fcntl`` is missing (Windows).

    Raises
    ------
    InputError
        Another process holds the lock: one line naming the folder and that process's id.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        return None
    path = folder / LOCK
    for _ in range(100):
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as exc:
            raise InputError(f"{option} {folder}: cannot open its lock file {LOCK} "
                             f"({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            except OSError:
                holder = ""
            os.close(fd)
            who = f"process {holder}" if holder.isdigit() else "another process"
            raise InputError(f"{option} {folder}: {who} (another storyeval run) is writing "
                             "this folder now; wait for it to finish or choose another "
                             "folder") from None
        try:  # the holder removes the file before releasing it: is ours still the one there?
            if os.stat(path, follow_symlinks=False).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    else:  # pragma: no cover - a hundred removals in a row
        raise InputError(f"{option} {folder}: cannot take its lock file {LOCK}")
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
    except OSError:  # the pid is a courtesy
        pass
    return fd
