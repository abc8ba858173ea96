"""Damaged inputs of the new commands (issue 48): bias, pairwise strengths, ppi, plan,
diversity, perturb and robustness refuse them with exit code 2 and one line that names the
file (and the row or column where there is one), never a traceback or a silent wrong result.

Each case starts from a valid set of small files (checked to run with exit 0 below), damages one
file (empty, header only, cut inside a line, a row duplicated, a name unknown, a value
non-finite) and runs the command in-process through `storyeval.cli.main`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from storyeval.cli import main

SYSTEMS = ("A", "B", "C")
PROMPTS = range(4)


def _stories() -> str:
    rows = ["story_id,system,prompt_id,prompt,story"]
    for s in SYSTEMS:
        for p in PROMPTS:
            rows.append(f"{s}/{p},{s},{p},prompt {p},The {s} cat sat on mat {p}. It was happy. "
                        f"Then it ran away {s} {p}.")
    return "\n".join(rows) + "\n"


def _manifest() -> str:
    rows = ["story_id,original_id,kind,parameters,seed,changed"]
    rows += [f"{s}/{p}~shuffle,{s}/{p},shuffle,{{}},0,True" for s in SYSTEMS for p in PROMPTS]
    return "\n".join(rows) + "\n"


def _scores() -> str:
    rows = ["story_id,prompt_id,measure,value"]
    for s in SYSTEMS:
        for p in PROMPTS:
            for m, base in (("chrF", 0.5), ("perplexity", 20.0)):
                rows.append(f"{s}/{p},{p},{m},{base + p / 10}")
                rows.append(f"{s}/{p}~shuffle,{p},{m},{base + p / 10 - 0.05}")
    return "\n".join(rows) + "\n"


def _items() -> str:
    rows = ["system,prompt_id,human,llm"]
    for i in range(24):
        human = "" if i % 3 else str(1 + i % 5)
        rows.append(f"{'AB'[i % 2]},{i // 2},{human},{1.5 + (i * 7) % 4}")
    return "\n".join(rows) + "\n"


def _pairs() -> str:
    return ("prompt_id,story_a,story_b\n0,A/0,B/0\n0,A/0,C/0\n1,A/1,B/1\n1,B/1,C/1\n"
            "2,A/2,C/2\n")


def _verdicts() -> str:
    rows = ["prompt_id,story_a,story_b,dimension,verdict,order,judge"]
    cycle = ["A", "B", "A", "B", "B", "A", "same", "A", "A", "B", "B", "same", "B", "A", "B"]
    k = 0
    for judge in ("j1", "j2"):
        for p in PROMPTS:
            for a, b in (("A", "B"), ("B", "C"), ("A", "C")):
                for order in ("AB", "BA"):
                    rows.append(f"{p},{a}/{p},{b}/{p},Overall,{cycle[k % len(cycle)]},{order},"
                                f"{judge}")
                    k += 1
    return "\n".join(rows) + "\n"


def _variant_verdicts() -> str:
    rows = ["story_a,story_b,verdict,judge"]
    rows += [f"{s}/{p},{s}/{p}~shuffle,{'AB'[p % 2]},j1" for s in SYSTEMS for p in PROMPTS]
    return "\n".join(rows) + "\n"


def _ratings() -> str:
    rows = ["system,prompt_id,criterion,annotator,value"]
    rows += [f"{s},{p},Overall,{a},{1 + (p * 3 + k + i) % 5}" for i, s in enumerate(SYSTEMS)
             for p in PROMPTS for k, a in enumerate(("h1", "h2"))]
    return "\n".join(rows) + "\n"


def _judge_scores() -> str:
    rows = ["story_id,measure,value"]
    rows += [f"{s}/{p},judge,{1 + (p + 2 * i) % 5}" for i, s in enumerate(SYSTEMS)
             for p in PROMPTS]
    return "\n".join(rows) + "\n"


def _lengths() -> str:
    return "story_id,length\n" + "".join(f"{s}/{p},{10 + p + 7 * SYSTEMS.index(s) % 5}\n"
                                          for s in SYSTEMS for p in PROMPTS)


FILES: dict[str, Callable[[], str]] = {
    "stories.csv": _stories, "manifest.csv": _manifest, "scores.csv": _scores,
    "items.csv": _items, "rverdicts.csv": _variant_verdicts, "ratings.csv": _ratings,
    "judge.csv": _judge_scores, "pairs.csv": _pairs, "verdicts.csv": _verdicts,
    "win.csv": lambda: ",A,B,C\nA,0,5,7\nB,3,0,6\nC,2,4,0\n", "lengths.csv": _lengths,
    "embeddings.csv": lambda: "story_id,e1,e2\n" + "".join(
        f"{s}/{p},{1 + p},{ord(s) % 5 + 1}\n" for s in SYSTEMS for p in PROMPTS),
}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, make in FILES.items():
        out[name] = tmp_path / name
        out[name].write_text(make(), encoding="utf-8")
    out["dir"] = tmp_path
    return out


def _commands(f: dict[str, Path]) -> dict[str, list[str]]:
    """Valid runs of every new command on the valid files."""
    d = f["dir"]
    return {
        "robustness": ["robustness", "--scores", str(f["scores.csv"]), "--manifest",
                       str(f["manifest.csv"]), "--lower-is-better", "perplexity",
                       "--out", str(d / "rob")],
        "robustness-verdicts": ["robustness", "--verdicts", str(f["rverdicts.csv"]),
                                "--manifest", str(f["manifest.csv"]), "--out", str(d / "rv")],
        "diversity": ["diversity", "--stories", str(f["stories.csv"]), "--permutations", "9",
                      "--embeddings", str(f["embeddings.csv"]), "--out", str(d / "div")],
        "perturb": ["perturb", "--stories", str(f["stories.csv"]), "--kinds", "shuffle,typo",
                    "--out", str(d / "suite")],
        "ppi": ["ppi", "--data", str(f["items.csv"]), "--human", "human", "--judge", "llm"],
        "ppi-difference": ["ppi", "--data", str(f["items.csv"]), "--human", "human", "--judge",
                           "llm", "--system", "system", "--systems", "A,B"],
        "plan": ["plan", "assign", "--pairs", str(f["pairs.csv"]), "--annotators", "4",
                 "--out", str(d / "plan.csv")],
        "strengths": ["pairwise", "strengths", str(f["verdicts.csv"]), "--resamples", "20"],
        "strengths-matrix": ["pairwise", "strengths", "--matrix", str(f["win.csv"])],
        "bias": ["bias", "--data", str(f["ratings.csv"]), "--scores", str(f["judge.csv"]),
                 "--metrics", "judge", "--format", "csv"],
        "pairwise-bias": ["pairwise", "bias", str(f["verdicts.csv"]), "--lengths",
                          str(f["lengths.csv"])],
    }


def test_the_valid_files_run(files, capsys):
    # the baseline of every damaged case below: the same files, undamaged, give exit 0
    for name, argv in _commands(files).items():
        assert main(argv) == 0, (name, capsys.readouterr().err)
    capsys.readouterr()


# ---------------------------------------------------------------------------- damage
def _empty(text: str) -> str:
    return ""


def _header_only(text: str) -> str:
    return text.splitlines()[0] + "\n"


def _cut(text: str) -> str:
    """The file cut inside its last line, just after the first comma (a short last row)."""
    head, last = text.rstrip("\n").rsplit("\n", 1)
    return head + "\n" + last[:last.index(",") + 1]


def _duplicate(text: str) -> str:
    lines = text.splitlines()
    return "\n".join([*lines, lines[1]]) + "\n"


def _cell(line: int, column: int, value: str) -> Callable[[str], str]:
    """Cell ``column`` (0-based) of line ``line`` of the file (1 = the header) set to ``value``."""
    def damage(text: str) -> str:
        lines = text.splitlines()
        cells = lines[line - 1].split(",")
        cells[column] = value
        lines[line - 1] = ",".join(cells)
        return "\n".join(lines) + "\n"
    return damage


def _append(row: str) -> Callable[[str], str]:
    return lambda text: text + row + "\n"


# (command, file damaged, damage, extra arguments, what the line must name besides the file)
CASES = [
    # robustness: the manifest
    ("robustness", "manifest.csv", _empty, [], None),
    ("robustness", "manifest.csv", _header_only, [], "header"),
    ("robustness", "manifest.csv", _cut, [], "line 13"),
    ("robustness", "manifest.csv", _duplicate, [], "line 14"),
    ("robustness", "manifest.csv", _append("A/0,A/0,shuffle,{},0,False"), [], "own original"),
    ("robustness", "manifest.csv", _append("A/0~shuffle~x,A/0~shuffle,typo,{},0,True"), [],
     "itself a variant"),
    # robustness: the scores and the options
    ("robustness", "scores.csv", _empty, [], None),
    ("robustness", "scores.csv", _header_only, [], "header"),
    ("robustness", "scores.csv", _cut, [], "line 49"),
    ("robustness", "scores.csv", _duplicate, [], "line 50"),
    ("robustness", "scores.csv", _cell(4, 3, "inf"), [], "line 4"),
    ("robustness", "scores.csv", _cell(4, 3, "1e309"), [], "line 4"),
    ("robustness", "scores.csv", _cell(4, 3, "abc"), [], "line 4"),
    ("robustness", "scores.csv", None, ["--lower-is-better", "perplexty"], "did you mean"),
    ("robustness-verdicts", "rverdicts.csv", _header_only, [], "header"),
    ("robustness-verdicts", "rverdicts.csv", _duplicate, [], "line 14"),
    ("robustness-verdicts", "rverdicts.csv", _cell(2, 2, "maybe"), [], "line 2"),
    ("robustness-verdicts", "rverdicts.csv", None, ["--lower-is-better", "chrF"], "--scores"),
    # diversity
    ("diversity", "stories.csv", _empty, [], None),
    ("diversity", "stories.csv", _header_only, [], "header"),
    ("diversity", "stories.csv", _cut, [], "line 13"),
    ("diversity", "stories.csv", _duplicate, [], "line 14"),
    ("diversity", "stories.csv", None, ["--group", "sytem"], "sytem"),
    ("diversity", "embeddings.csv", _cell(3, 1, "inf"), [], "row 2"),
    ("diversity", "embeddings.csv", _duplicate, [], "row 13"),
    ("diversity", "embeddings.csv", _header_only, [], "header"),
    # perturb
    ("perturb", "stories.csv", _empty, [], None),
    ("perturb", "stories.csv", _header_only, [], None),
    ("perturb", "stories.csv", _cut, [], "row 11"),
    ("perturb", "stories.csv", _duplicate, [], "row 12"),
    ("perturb", "stories.csv", None, ["--kinds", "shufle"], "shuffle"),
    ("perturb", "stories.csv", None, ["--kinds", "typo,typo"], "twice"),
    # ppi
    ("ppi", "items.csv", _empty, [], None),
    ("ppi", "items.csv", _header_only, [], "header"),
    ("ppi", "items.csv", _cut, [], "line 25"),
    ("ppi", "items.csv", _cell(3, 3, "inf"), [], "line 3"),
    ("ppi", "items.csv", _cell(3, 3, "1e309"), [], "line 3"),
    ("ppi", "items.csv", _cell(3, 3, "high"), [], "line 3"),
    ("ppi", "items.csv", _cell(2, 2, "-inf"), [], "line 2"),
    ("ppi", "items.csv", None, ["--judge", "lm"], "did you mean 'llm'"),
    ("ppi-difference", "items.csv", None, ["--systems", "A,Z"], "'Z'"),
    ("ppi-difference", "items.csv", _duplicate, ["--paired-by", "prompt_id"], "two items"),
    # plan assign
    ("plan", "pairs.csv", _empty, [], None),
    ("plan", "pairs.csv", _header_only, [], "header"),
    ("plan", "pairs.csv", _cut, [], "row 4"),
    ("plan", "pairs.csv", _duplicate, [], "row 5"),
    ("plan", "pairs.csv", _append("0,B/0,A/0"), [], "row 5"),
    ("plan", "pairs.csv", _append("3,C/3,C/3"), [], "row 5"),
    # pairwise strengths and pairwise bias
    ("strengths", "verdicts.csv", _empty, [], None),
    ("strengths", "verdicts.csv", _header_only, [], None),
    ("strengths", "verdicts.csv", _cell(2, 4, "maybe"), [], "row 0"),
    ("strengths", "verdicts.csv", None, ["--judge", "j3"], "j3"),
    ("strengths-matrix", "win.csv", _empty, [], None),
    ("strengths-matrix", "win.csv", _header_only, [], None),
    ("strengths-matrix", "win.csv", _cut, [], None),
    ("strengths-matrix", "win.csv", _cell(2, 2, "inf"), [], "column 'B'"),
    ("strengths-matrix", "win.csv", _cell(2, 2, "-3"), [], "column 'B'"),
    ("strengths-matrix", "win.csv", _cell(2, 1, "4"), [], "row 'A'"),
    ("strengths-matrix", "win.csv", _append("A,1,2,3,0"), [], None),
    ("strengths", "verdicts.csv", _append("0,A/0,A/0,Overall,A,AB,j1"), [], "itself"),
    ("pairwise-bias", "lengths.csv", _header_only, [], "header"),
    ("pairwise-bias", "lengths.csv", _duplicate, [], "line 14"),
    ("pairwise-bias", "lengths.csv", _cell(3, 1, "inf"), [], "line 3"),
    ("pairwise-bias", "verdicts.csv", _header_only, [], None),
    ("bias", "judge.csv", _header_only, [], None),
    ("bias", "judge.csv", _duplicate, [], "line 14"),
    ("bias", "judge.csv", _cell(3, 2, "inf"), [], "line 3"),
    ("bias", "ratings.csv", _cut, [], None),
    ("bias", "judge.csv", None, ["--own", "judge=Z"], "'Z'"),
]


def _id(case) -> str:
    command, name, damage, extra, _ = case
    what = damage.__name__.strip("_") if damage is not None else " ".join(extra)
    return f"{command}-{name}-{what}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_damaged_input_is_one_line_naming_the_file(case, files, capsys):
    command, name, damage, extra, names = case
    path = files[name]
    if damage is not None:
        path.write_text(damage(path.read_text(encoding="utf-8")), encoding="utf-8")
    argv = _commands(files)[command]
    argv = [*argv, *extra]
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, out[-500:], err[-2000:])
    assert "Traceback" not in err and "Traceback" not in out
    assert len(lines) == 1, err
    assert re.match(r"storyeval [a-z ]+: error: ", lines[0]), lines[0]
    if damage is not None:
        assert name in lines[0], lines[0]  # the file
    if names is not None:
        assert names in lines[0], lines[0]  # the row, the column or the name


def test_pairwise_strengths_matrix_out_writes_the_report(files, capsys):
    out = files["dir"] / "bt"
    assert main([*_commands(files)["strengths-matrix"], "--out", str(out)]) == 0
    capsys.readouterr()
    table = (out / "strengths.csv").read_text(encoding="utf-8")
    assert table.startswith("item,log_strength,se,")
    assert "<table" in (out / "index.html").read_text(encoding="utf-8")


def test_huge_finite_scores_do_not_overflow(files, capsys):
    # 1e308 is a finite score: the mean change and its interval are finite (robustness), and
    # the human-only interval of ppi stays the humans' (was [nan, nan])
    scores = files["scores.csv"]
    scores.write_text(_cell(2, 3, "1e308")(scores.read_text(encoding="utf-8")), encoding="utf-8")
    assert main(_commands(files)["robustness"]) == 0, capsys.readouterr().err
    capsys.readouterr()
    import numpy as np
    import pandas as pd

    table = pd.read_csv(files["dir"] / "rob" / "robustness.csv").set_index("measure")
    change = table.loc["chrF", ["mean_change", "change_low", "change_high", "change_p"]]
    assert np.isfinite(change.to_numpy(dtype=float)).all(), change
    assert change["mean_change"] == pytest.approx(-1e308 / 12, rel=1e-12)
    items = files["items.csv"]
    items.write_text(_cell(3, 3, "1e308")(items.read_text(encoding="utf-8")), encoding="utf-8")
    assert main([*_commands(files)["ppi"], "--json"]) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    assert result["human_low"] < result["human_estimate"] < result["human_high"] < 10


@pytest.mark.parametrize("damaged", ["returned", "plan"])
def test_plan_check_damaged_files(files, capsys, damaged):
    plan, returned = files["dir"] / "plan.csv", files["dir"] / "returned.csv"
    assert main(_commands(files)["plan"]) == 0
    text = plan.read_text(encoding="utf-8")
    returned.write_text(_duplicate(text) if damaged == "returned" else text, encoding="utf-8")
    if damaged == "plan":
        plan.write_text(_header_only(text), encoding="utf-8")
    capsys.readouterr()
    assert main(["plan", "check", "--plan", str(plan), "--returned", str(returned)]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{damaged}.csv" in lines[0], lines
    assert ("row 5 repeats" if damaged == "returned" else "header") in lines[0], lines
