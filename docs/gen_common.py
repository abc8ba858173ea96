"""What every docs generator (``docs/gen_*.py``) does the same way: run ``storyeval`` in-process,
show a command as a shell line, and write a snippet only when its text changed.

Imported by the generators (``from gen_common import ...``; a generator run as a script, or
loaded by tests/_docs_scripts.py, finds it beside itself), never published (mkdocs.yml
excludes ``gen_*.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
import traceback
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

_PLAIN = re.compile(r"[\w@%+=:./-]+")


class CommandFailed(RuntimeError):
    """A command of a page exited with another code than the page expects."""


def quoted(word: str) -> str:
    """``word`` as a shell reads it: unquoted when plain, else in single quotes (a comma or a
    space quoted too, as a reader would type it)."""
    return word if _PLAIN.fullmatch(word) else shlex.quote(word)


def shell(argv: Sequence[str], *, wrap: int | None = None) -> str:
    """``storyeval ARGV`` as the shell line shown on a page (``head ...`` as it is). With
    ``wrap``, the line is continued with a backslash before an option whose option and values
    would pass ``wrap`` characters."""
    argv = list(argv)
    if argv and argv[0] == "head":
        return " ".join(argv)
    if wrap is None:
        return " ".join(["storyeval", *(quoted(a) for a in argv)])
    units = ["storyeval"]  # the command, then one unit per option with its values
    for word in argv:
        if word.startswith("--"):
            units.append(quoted(word))
        else:
            units[-1] += " " + quoted(word)
    lines, line = [], ""
    for unit in units:
        if line and len(line) + 1 + len(unit) > wrap:
            lines.append(line + " \\")
            line = "    " + unit
        else:
            line = f"{line} {unit}" if line else unit
    return "\n".join([*lines, line])


@dataclass
class Run:
    """What a command did: its exit code, standard output and standard error."""

    code: int | str
    out: str
    err: str


def invoke(argv: Sequence[str], *, cwd: Path | None = None,
           warning_action: str | None = "default") -> Run:
    """Run ``storyeval ARGV`` in-process (in ``cwd`` when given), its output captured; an
    argparse exit and a crash are results too (``code`` 2, or ``"a crash"`` with the
    traceback in ``err``). ``warning_action``: the warnings filter while it runs ("default":
    each shown once, as in a fresh process; "ignore"; None: as the caller has it)."""
    from storyeval.cli import main

    argv = list(argv)
    if argv and argv[0] == "head":  # `head -n N FILE`: the file's first lines
        lines = Path(argv[-1]).read_text(encoding="utf-8").splitlines(True)
        return Run(0, "".join(lines[:int(argv[2])]), "")
    out, err = io.StringIO(), io.StringIO()
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            if warning_action is not None:
                warnings.simplefilter(warning_action)  # type: ignore[arg-type]
            try:
                code: int | str = main(argv)
            except SystemExit as exc:  # argparse: unknown option, bad choice
                code = exc.code if isinstance(exc.code, int) else 2
            except Exception:  # noqa: BLE001 - a crash is reported with the command
                code = "a crash"
                err.write(traceback.format_exc())
    finally:
        os.chdir(old)
    return Run(code, out.getvalue(), err.getvalue())


def run_cli(argv: Sequence[str], *, expect: int = 0, cwd: Path | None = None,
            warning_action: str | None = "ignore", wrap: int | None = None) -> str:
    """The standard output of ``storyeval ARGV`` (`invoke`); `CommandFailed` with the end of
    its error output when the exit code is not ``expect``. A command expected to fail gets a
    last line ``(exit code N)``."""
    run = invoke(argv, cwd=cwd, warning_action=warning_action)
    if run.code != expect:
        raise CommandFailed(f"`{shell(argv, wrap=wrap)}` failed with {run.code}:\n"
                            f"{run.err[-3000:]}")
    return run.out if run.code == 0 else run.out + f"(exit code {run.code})\n"


def console(command: str | Sequence[str], output: str | None = None, **run: object) -> str:
    """A shell transcript block: ``$ COMMAND`` and its output (None: run the command, an
    argument list, with `run_cli` and the keywords ``run``)."""
    line = command if isinstance(command, str) else shell(command)
    if output is None:
        assert not isinstance(command, str), "a command line given as text is not run"
        output = run_cli(command, **run)  # type: ignore[arg-type]
    return f"```text\n$ {line}\n{output.rstrip()}\n```\n"


@contextlib.contextmanager
def working_directory(path: Path) -> Iterator[None]:
    """The block runs in ``path`` (the previous working directory restored after it)."""
    here = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(here)


def md(frame: pd.DataFrame, digits: int = 3) -> str:
    """A Markdown table through storyeval's own formatter."""
    from storyeval.report.tables import format_table

    return format_table(frame, "md", digits=digits)


def snippet_writer(out: Path, written: list[Path], *,
                   check: Callable[[str, str], None] | None = None
                   ) -> Callable[[str, str], None]:
    """``write(name, text)``: ``out/NAME.md`` holding ``text`` with one final newline, written
    only when it changed (the files' times say what a run changed), appended to ``written``;
    ``check(name, text)`` runs first (it raises to refuse a snippet)."""

    def write(name: str, text: str) -> None:
        text = text.rstrip("\n") + "\n"
        if check is not None:
            check(name, text)
        path = out / f"{name}.md"
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)

    return write


def remove_stale(out: Path, written: Sequence[Path], *, keep: Iterable[str] = ()) -> None:
    """Delete the snippets of ``out`` that this run did not write (a renamed or dropped one),
    except the names in ``keep`` (snippets another script writes there, e.g. a benchmark)."""
    kept = set(keep)
    for stale in sorted(out.glob("*.md")):
        if stale not in written and stale.name not in kept:
            stale.unlink()


def generator_main(generate: Callable[[Path], Sequence[Path]], default_out: Path,
                   description: str, argv: Sequence[str] | None = None) -> int:
    """The command line of a generator: ``--out DIR`` (default ``default_out``), then
    ``generate(out)``, and a line saying how many files it wrote."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    paths = generate(args.out)
    print(f"wrote {len(paths)} files to {args.out}", file=sys.stderr)
    return 0
