"""Every numeric option of every command: a value out of range (or not a number) is a
one-line error naming the option, exit code 2, no traceback; every default is in range."""

from __future__ import annotations

import argparse

import pytest

from storyeval.cli import build_parser, main
from storyeval.cli.ranges import numeric_actions, range_of


def _command_parsers() -> list[tuple[list[str], argparse.ArgumentParser]]:
    """(command words, parser) of every sub-command, nested ones included."""
    found = []

    def walk(parser: argparse.ArgumentParser, words: list[str]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if words and not subs:
            found.append((words, parser))
        for sub in subs:
            for name, child in sub.choices.items():
                walk(child, [*words, name])
    walk(build_parser(), [])
    return found


def _required_args(parser: argparse.ArgumentParser) -> list[str]:
    """Placeholder values for what the parser requires (positionals, required groups), so that
    parsing succeeds and the range check is what answers."""
    args: list[str] = []
    for action in parser._actions:
        if not action.option_strings and not isinstance(action, argparse._SubParsersAction):
            args.append(str(next(iter(action.choices))) if action.choices else "x")
    for group in parser._mutually_exclusive_groups:
        if group.required:
            action = group._group_actions[0]
            args += [action.option_strings[0], _placeholder(action)]
    for action in parser._actions:
        if action.option_strings and action.required:
            args += [action.option_strings[0], _placeholder(action)]
    return args


def _placeholder(action: argparse.Action) -> str:
    """A value the parser accepts: the first choice, 1 for a number, else a name."""
    if action.choices:
        return str(next(iter(action.choices)))
    return "1" if action.type in (int, float) else "x"


CASES = [(words, parser, action) for words, parser in _command_parsers()
         for action in numeric_actions(parser)]


def _option(action: argparse.Action) -> str:
    return next(o for o in action.option_strings if o.startswith("--"))


def test_the_sweep_covers_the_numeric_options():
    names = {(" ".join(w), _option(a)) for w, _, a in CASES}
    assert len(names) >= 50
    assert ("meta", "--confidence-level") in names and ("score", "--batch-size") in names


@pytest.mark.parametrize("words, parser, action", CASES,
                         ids=[f"{' '.join(w)} {_option(a)}" for w, _, a in CASES])
def test_out_of_range_values_are_one_line_errors(words, parser, action, capsys):
    option = _option(action)
    allowed = range_of(" ".join(words), option)
    assert allowed is not None, f"{' '.join(words)} {option}: no declared range"
    default = action.default
    assert default is None or allowed.contains(default), f"default {default!r} out of range"
    bad = [str(v) for v in allowed.outside(action.type is int)] + ["not-a-number"]
    if action.type is int:
        bad.append("2.5")
    for value in bad:
        try:
            code = main([*words, *_required_args(parser), f"{option}={value}"])
        except SystemExit as exc:  # argparse's own errors (not a number) exit from parsing
            code = exc.code
        err = capsys.readouterr().err
        lines = err.strip().splitlines()
        assert code == 2, (option, value, err)
        assert len(lines) == 1 and "Traceback" not in err, (option, value, err)
        assert lines[0].startswith(f"storyeval {words[0]}") and ": error: " in lines[0], lines[0]
        assert option in lines[0], lines[0]


def test_confidence_level_as_a_percent_in_the_api():
    from storyeval.exceptions import InputError
    from storyeval.meta import meta_evaluate

    with pytest.raises(InputError, match=r"confidence_level must be in \(0, 1\), got 95; "
                                         r"for 95% give 0.95"):
        meta_evaluate(confidence_level=95)
    with pytest.raises(InputError, match="confidence_level"):
        meta_evaluate(confidence_level=1.5)
    with pytest.raises(InputError, match="n_resamples"):
        meta_evaluate(n_resamples=0)
