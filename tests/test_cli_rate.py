"""``storyeval rate`` through storyeval.cli.main and once as a real subprocess."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer

from storyeval.cli import main
from storyeval.exceptions import StoryevalWarning


@pytest.fixture
def stories_csv(tmp_path):
    n = 4
    df = pd.DataFrame({
        "story_id": [f"Sys{i % 2}/{i // 2}" for i in range(n)],
        "system": [f"Sys{i % 2}" for i in range(n)],
        "prompt_id": [i // 2 for i in range(n)],
        "prompt": [f"Prompt {i // 2}" for i in range(n)],
        "story": [f"Once upon a time {i}." for i in range(n)],
        "reference": [f"Human {i // 2}." for i in range(n)],
    })
    path = tmp_path / "stories.csv"
    df.to_csv(path, index=False)
    return path


def _args(srv, stories, tmp_path, *extra):
    return ["rate", "--backend", "openai", "--base-url", srv.base_url, "--model", "stub",
            "--model-name", "Stub", "--stories", str(stories), "--cache",
            str(tmp_path / "cache.sqlite"), "--no-progress", "--no-api-key",
            *extra]


def test_full_run_writes_tables_meta_can_read(tmp_path, stories_csv, capsys):
    out = tmp_path / "run"
    with StubServer(Script()) as srv:
        code = main(_args(srv, stories_csv, tmp_path, "--eval-prompts", "1-2", "--criteria",
                          "RE,CH", "--tries", "3", "--out", str(out)))
        assert code == 0
        printed = capsys.readouterr().out
        assert "48 requests, 0 from the cache, 48 sent, 48 answered, 0 failed" in printed
        assert sum(srv.state.received.values()) == 48
        # resume: --json summary, nothing sent
        assert main(_args(srv, stories_csv, tmp_path, "--eval-prompts", "1-2", "--criteria",
                          "RE,CH", "--tries", "3", "--json")) == 0
        summary = json.loads(capsys.readouterr().out)
        assert summary["sent"] == 0 and summary["plan"]["n_cached"] == 48
        assert summary["statuses"] == {"ok": 48}
    for name in ("ratings.csv", "scores.csv", "failures.csv", "judge_systems.csv",
                 "consistency.csv", "settings.json"):
        assert (out / name).is_file(), name
    ratings = pd.read_csv(out / "ratings.csv")
    assert len(ratings) == 48 and set(ratings["status"]) == {"ok"}
    from storyeval.data.io import read_score_table

    scores = read_score_table(out / "scores.csv")
    assert set(scores["measure"]) == {"Stub RE 1", "Stub CH 1", "Stub AVG 1", "Stub RE 2",
                                      "Stub CH 2", "Stub AVG 2"}
    settings = json.loads((out / "settings.json").read_text())
    assert settings["settings"]["sampling_temperature"] == 0.7
    assert settings["settings"]["parser_version"]


def test_parser_option_reparses_the_cache_and_gives_the_papers_rule(tmp_path, stories_csv,
                                                                     capsys):
    answers = ("The story has 2 characters. I would give it a 4.", "No idea.", "9", "3.5",
               "Three.")

    def scripted(payload, key):
        return answers[int(key[:8], 16) % len(answers)]

    common = ("--eval-prompts", "1", "--criteria", "RE", "--tries", "3")
    with StubServer(Script(answer=scripted)) as srv:
        assert main(_args(srv, stories_csv, tmp_path, *common, "--out",
                          str(tmp_path / "strict"))) == 0
        n = sum(srv.state.received.values())
        assert n == 12
        capsys.readouterr()
        # same cache, the paper's rule: re-parsed, nothing sent
        assert main(_args(srv, stories_csv, tmp_path, *common, "--parser", "first_number",
                          "--on-unparsed", "midpoint", "--out", str(tmp_path / "paper"),
                          "--json")) == 0
        assert sum(srv.state.received.values()) == n
    summary = json.loads(capsys.readouterr().out)
    assert summary["sent"] == 0 and summary["parser"] == "first_number"
    assert summary["settings"]["parser_id"] == "first_number-3"
    settings = json.loads((tmp_path / "paper" / "settings.json").read_text())
    assert settings["settings"]["parser"] == "first_number"
    ratings = pd.read_csv(tmp_path / "paper" / "ratings.csv")
    assert set(ratings["parser"]) == {"first_number-3"}
    assert set(pd.read_csv(tmp_path / "strict" / "ratings.csv")["parser"]) == {"strict-3"}
    # the paper's rule worked by hand for each answer: first number, none/off-scale -> 3
    paper = {answers[0]: 2.0, answers[1]: 3.0, answers[2]: 3.0, answers[3]: 3.5, answers[4]: 3.0}
    want = (ratings.assign(v=[paper[scripted(None, k)] for k in ratings["key"]])
            .groupby("story_id")["v"].mean())
    scores = pd.read_csv(tmp_path / "paper" / "scores.csv")
    got = scores[scores["measure"] == "Stub RE 1"].set_index("story_id")["value"]
    pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_names=False,
                                   rtol=0, atol=1e-12)


def test_bad_parser_is_a_usage_error(tmp_path, stories_csv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["rate", "--model", "m", "--stories", str(stories_csv), "--parser", "last"])
    assert exc.value.code == 2
    assert "--parser" in capsys.readouterr().err


def test_failed_requests_exit_1(tmp_path, stories_csv, capsys):
    with StubServer(Script(status_override=503)) as srv:
        code = main(_args(srv, stories_csv, tmp_path, "--eval-prompts", "1", "--criteria", "RE",
                          "--tries", "1", "--max-retries", "0"))
    assert code == 1
    assert "4 failed" in capsys.readouterr().out


def test_dry_run_creates_no_cache(tmp_path, stories_csv, capsys):
    code = main(["rate", "--model", "m", "--stories", str(stories_csv), "--eval-prompts", "1-4",
                 "--tries", "3", "--cache", str(tmp_path / "c.sqlite"), "--dry-run"])
    assert code == 0
    text = capsys.readouterr().out
    assert "4 stories x 4 Eval-Prompt(s) [1, 2, 3, 4] x 6 criteria x 3 tries = 288 requests" in text
    assert "288 to send" in text and not (tmp_path / "c.sqlite").exists()


@pytest.mark.parametrize("extra, message", [
    (["--eval-prompts", "9"], "eval_prompts"),
    (["--criteria", "XX"], "unknown criterion"),
    (["--tries", "0"], "--tries"),
    (["--temperature", "-1"], "temperature"),
    (["--systems", "Nobody"], "unknown system"),
])
def test_usage_errors_exit_2(tmp_path, stories_csv, capsys, extra, message):
    code = main(["rate", "--model", "m", "--stories", str(stories_csv), "--dry-run",
                 "--cache", str(tmp_path / "c.sqlite"), *extra])
    assert code == 2
    assert message in capsys.readouterr().err


def test_missing_stories_file_exit_2(tmp_path, capsys):
    assert main(["rate", "--model", "m", "--stories", str(tmp_path / "none.csv"),
                 "--dry-run"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["rate", "--model", "m", "--stories", str(tmp_path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and "does not exist" not in err


def _documented_commands() -> list[str]:
    root = Path(__file__).resolve().parents[1]
    text = (root / "docs" / "llm.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", text, re.DOTALL).group(1)
    joined = re.sub(r"\\\n\s*", " ", block)
    return [line.split(" #")[0].strip() for line in joined.splitlines()
            if line.startswith("storyeval ")]


def test_documented_rate_then_meta_flow_works_as_printed(tmp_path, monkeypatch, capsys):
    """docs/llm.md opens with `storyeval rate ... --out runs/my-model` then
    `storyeval meta --scores runs/my-model/scores.csv`: both run as printed (only the server
    address is the local stub's), offline."""
    commands = _documented_commands()
    assert [c.split()[1] for c in commands] == ["rate", "meta"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("STORYEVAL_NO_PROGRESS", "1")
    with StubServer(Script()) as srv, warnings.catch_warnings():
        # meta says that the scores cover 96 of HANNA's 1056 stories: a warning, as printed
        warnings.simplefilter("always", StoryevalWarning)
        for command in commands:
            argv = shlex.split(command.replace("http://localhost:8000/v1", srv.base_url))
            code = main(argv[1:])
            assert code == 0, (command, capsys.readouterr().err)
        assert sum(srv.state.received.values()) == 96 * 3 * 6 * 3
    printed = capsys.readouterr().out
    assert "my-model 1" in printed and "overall level" in printed
    scores = pd.read_csv(tmp_path / "runs" / "my-model" / "scores.csv")
    assert scores["value"].notna().all() and set(scores["system"]) == {"Human"}


def test_subprocess_dry_run_on_hanna():
    env = {**os.environ, "STORYEVAL_NO_PROGRESS": "1"}
    res = subprocess.run([sys.executable, "-m", "storyeval", "rate", "--model", "m",
                          "--dataset", "hanna", "--eval-prompts", "1", "--criteria", "RE",
                          "--tries", "1", "--dry-run", "--json", "--cache",
                          "/nonexistent-dir/never-created.sqlite"],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    # HANNA releases the texts of 96 human + 576 LLM stories
    assert plan["n_stories"] == 672 and plan["n_requests"] == 672 and plan["n_to_send"] == 672
