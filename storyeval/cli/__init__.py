"""The ``storyeval`` command line: a thin layer over the library.

Each sub-command lives in its own module ``storyeval.cli.<name>`` exposing
``add_parser(subparsers) -> argparse.ArgumentParser`` and ``run(args) -> int``.
Exit codes: 0 ok, 1 a check failed, 2 usage or input error.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import NoReturn

from storyeval._version import __version__
from storyeval.exceptions import InputError, MissingDependencyError, StoryevalWarning
from storyeval.report.present import TERMINAL_WIDTH, terminal_width

#: storyeval's warnings of the command being run, for the reports it writes (index.html).
RUN_WARNINGS: list[str] = []

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2

# Sub-command modules, in the order `storyeval --help` lists them. Modules are imported only
# to register their parser; heavy dependencies are imported inside `run`.
COMMANDS: tuple[str, ...] = (
    "describe",
    "meta",
    "power",
    "plan",
    "ppi",
    "agreement",
    "score",
    "rate",
    "pairwise",
    "merge",
    "bias",
    "contamination",
    "explain",
    "diversity",
    "poetry",
    "dedup",
    "cluster",
    "perturb",
    "robustness",
    "judge_report",
)


RAW_CSV_HELP = ("write CSV cells verbatim; by default a text cell starting with =, +, -, @, a "
                "tab or CR (a spreadsheet formula) gets a leading single quote, which "
                "storyeval's readers remove again (also STORYEVAL_RAW_CSV=1)")


def add_raw_csv_option(parser: argparse.ArgumentParser) -> None:
    """``--raw-csv`` on a command that writes CSV files (see `storyeval._csv`); the
    top-level ``storyeval --raw-csv COMMAND`` does the same for every command."""
    parser.add_argument("--raw-csv", action="store_true", default=argparse.SUPPRESS,
                        help=RAW_CSV_HELP)


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (``storyeval meta: error: ...``, exit code 2) instead of
    the usage block, as for every other input error; ``--help`` shows the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {' '.join(message.split())} "
                              f"(see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every available sub-command."""
    parser = _Parser(
        prog="storyeval",
        description="Statistical meta-evaluation of story evaluation metrics "
        "(HANNA benchmark, Chhun et al. TACL 2024).",
        epilog="Exit codes: 0 ok, 1 a check failed, 2 usage or input error.",
    )
    parser.add_argument("--version", action="version", version=f"storyeval {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error (before the command: "
                             "storyeval --debug meta ...)")
    parser.add_argument("--raw-csv", action="store_true", help=RAW_CSV_HELP)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"storyeval.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"storyeval.cli.{name}":
                continue  # that sub-command is not part of this build
            raise
        sub = module.add_parser(subparsers)
        sub.set_defaults(_run=module.run)
    for sub in _all_parsers(parser)[1:]:
        if "--wide" not in sub._option_string_actions:
            sub.add_argument("--wide", action="store_true",
                             help=f"terminal tables in full, however wide (default: fitted to "
                                  f"{TERMINAL_WIDTH} columns: constant columns in a header "
                                  f"line, the others wrapped into blocks)")
    return parser


def _all_parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every sub-parser below it (``pairwise`` and ``pairwise bt``, ...)."""
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _all_parsers(sub)
    return out


def _unknown_options(parser: argparse.ArgumentParser, argv: Sequence[str] | None
                     ) -> NoReturn | None:
    """Unrecognised arguments are reported by the sub-command that got them, an option with a
    close match named (``--metrcs``: did you mean --metrics?)."""
    import difflib

    args, extra = parser.parse_known_args(argv)
    if not extra:
        return None
    sub, _ = command_parser(parser, args)
    hints = []
    for word in extra:
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            close = difflib.get_close_matches(name, list(sub._option_string_actions), n=1,
                                              cutoff=0.7)
            if close:
                hints.append(f"{name}: did you mean {close[0]}?")
    message = f"unrecognized arguments: {' '.join(extra)}"
    sub.error(message + (f" ({'; '.join(hints)})" if hints else ""))


def _short_warnings(command: str) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints storyeval's own warnings as one line
    ``storyeval CMD: warning: ...`` (they are addressed to the user, not to a developer)."""
    original = warnings.showwarning
    RUN_WARNINGS.clear()

    def show(message, category, filename, lineno, file=None, line=None):
        from storyeval._progress import end_stage_line

        end_stage_line()  # a warning during a stage: on a line of its own
        if issubclass(category, StoryevalWarning):
            RUN_WARNINGS.append(" ".join(str(message).split()))
            print(f"storyeval {command}: warning: {message}", file=file or sys.stderr)
        elif issubclass(category, RuntimeWarning):
            # a numerical warning of a dependency (numpy: "invalid value encountered"): one
            # line naming the library, no site-packages path and source line
            text = f"{message} (RuntimeWarning in {_library(filename)})"
            RUN_WARNINGS.append(" ".join(text.split()))
            print(f"storyeval {command}: warning: {text}", file=file or sys.stderr)
        else:
            original(message, category, filename, lineno, file, line)
    return show


def _library(filename: str) -> str:
    """The package a file belongs to: ``.../site-packages/numpy/_core/x.py`` -> numpy."""
    parts = str(filename).replace("\\", "/").split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    return "storyeval" if "storyeval" in parts else parts[-1]


def error_line(exc: BaseException) -> str:
    """One line saying what went wrong: ``FILE: reason`` for an OSError, else the message
    (without its traceback; ``--debug`` shows it)."""
    if isinstance(exc, OSError) and exc.filename is not None:
        files = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        text = f"{files}: {exc.strerror or exc}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(text.split())


def command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace
                   ) -> tuple[argparse.ArgumentParser, str]:
    """The (sub-)parser that parsed ``args`` and its command words (``"pairwise bt"``)."""
    current, words = parser, list[str]()
    while True:
        sub = next((a for a in current._actions
                    if isinstance(a, argparse._SubParsersAction)), None)
        name = None if sub is None else getattr(args, sub.dest, None)
        if sub is None or name not in sub.choices:
            return current, " ".join(words)
        current = sub.choices[name]
        words.append(name)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    _unknown_options(parser, argv)
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return EXIT_USAGE
    saved = warnings.showwarning
    warnings.showwarning = _short_warnings(args.command)
    try:
        from storyeval._csv import raw_csv
        from storyeval._progress import no_progress, stages_stop_on_exit
        from storyeval.cli.ranges import check_numeric_options

        check_numeric_options(*command_parser(parser, args), args)
        with (raw_csv(True) if getattr(args, "raw_csv", False) else contextlib.nullcontext(),
              terminal_width(None if getattr(args, "wide", False) else TERMINAL_WIDTH),
              stages_stop_on_exit(),
              # --no-progress: the bars of the library calls too, not only the command's own
              no_progress() if getattr(args, "no_progress", False) else contextlib.nullcontext()):
            return int(args._run(args) or EXIT_OK)
    except (InputError, MissingDependencyError) as exc:
        if args.debug:
            raise
        print(f"storyeval {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (OSError, UnicodeError, ValueError) as exc:  # expected: files, encodings, values
        if args.debug:
            raise
        print(f"storyeval {args.command}: error: {error_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"storyeval {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        warnings.showwarning = saved


def entry() -> int:
    """The ``storyeval`` console script and ``python -m storyeval``: `main`, then the process
    ends. Freezing the garbage collector first spares the interpreter a pass over every object
    at exit (0.1-0.3 s of a 2 s run); `main` itself leaves the collector alone, for callers
    that go on. After a successful command that met numba kernels without cached machine
    code, the background warm-up compiles them (`storyeval.cli.warmup`)."""
    code = main()
    gc.freeze()
    if code == EXIT_OK:  # kernels this run could not load: compiled for the next runs
        from storyeval.cli.warmup import schedule

        schedule()
    return code
