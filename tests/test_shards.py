"""Sharded runs (issue 40): the split, the shard metadata, and `storyeval merge` of `score`,
`rate` and `pairwise judge` shards into the output of one run, byte for byte."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from _openai_stub_server import Script, StubServer

from storyeval.cli import main
from storyeval.data.shards import Shard, pair_ids, shard_numbers, shard_rows
from storyeval.exceptions import InputError
from storyeval.metrics import hanna_stories, score

# ---------------------------------------------------------------------------------------------
# the split
# ---------------------------------------------------------------------------------------------


def test_shard_numbers_are_blake2b_mod_n_by_hand():
    ids = ["GPT-2/17", "Human/0", "ünïcode/3", ""]
    for n in (1, 2, 3, 7, 1000):
        # the rule written out with hashlib, one id at a time
        want = [1 + int.from_bytes(hashlib.blake2b(i.encode("utf-8"), digest_size=8).digest(),
                                   "big") % n for i in ids]
        assert shard_numbers(ids, n).tolist() == want


def test_shards_partition_and_do_not_depend_on_order_or_neighbours():
    ids = [f"sys{i % 7}/{i}" for i in range(5000)]
    n = 4
    parts = [shard_rows(ids, f"{k}/{n}") for k in range(1, n + 1)]
    together = np.sort(np.concatenate(parts))
    assert together.tolist() == list(range(len(ids)))
    sizes = np.array([len(p) for p in parts])
    assert abs(sizes - len(ids) / n).max() < 5 * np.sqrt(len(ids) / n)  # a fair split
    # a story keeps its shard when the input is reordered or grows
    number = dict(zip(ids, shard_numbers(ids, n)))
    shuffled = list(np.random.default_rng(0).permutation(ids)) + ["new/1"]
    assert all(number[i] == s for i, s in zip(shuffled, shard_numbers(shuffled, n))
               if i in number)


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2"])
def test_bad_shard_is_an_input_error(text):
    with pytest.raises(InputError, match="--shard"):
        Shard.parse(text)


def test_pair_ids_join_with_the_unit_separator():
    assert pair_ids(["a/1"], ["b/1"]) == ["a/1\x1fb/1"]


# ---------------------------------------------------------------------------------------------
# score
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def story_file(tmp_path_factory):
    # 36 HANNA stories, human (no reference) and LLM ones, in a shuffled order
    path = tmp_path_factory.mktemp("stories") / "stories.csv"
    hanna_stories().sample(36, random_state=1).to_csv(path, index=False)
    return path


# surface (regex words): per-story measures and the set-level inter-story repetition; bleu:
# reference-based, NaN with a reason for the human stories
SCORE = ["--metrics", "bleu,surface", "--surface-tokenizer", "regex", "--no-progress"]


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_three_shards_merge_into_the_bytes_of_one_run(tmp_path, story_file, suffix, capsys):
    single = tmp_path / f"single{suffix}"
    assert main(["score", "--input", str(story_file), *SCORE, "--out", str(single)]) == 0
    shards = []
    for k in (1, 2, 3):
        out = tmp_path / f"part{k}{suffix}"
        assert main(["score", "--input", str(story_file), *SCORE, "--shard", f"{k}/3",
                     "--out", str(out)]) == 0
        assert (tmp_path / f"part{k}{suffix}.shard.json").is_file()
        shards.append(out)
    sizes = [json.loads(Path(f"{s}.shard.json").read_text())["positions"] for s in shards]
    assert sorted(p for s in sizes for p in s) == list(range(36)) and all(sizes)
    merged = tmp_path / f"merged{suffix}"
    # any order of the shards on the command line
    assert main(["merge", str(shards[2]), str(shards[0]), str(shards[1]), "--out",
                 str(merged)]) == 0
    assert merged.read_bytes() == single.read_bytes()
    assert "3 shards of `storyeval score` (36 stories)" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".jsonl"])
def test_empty_shards_merge_too(tmp_path, story_file, suffix):
    # 3 stories in 5 shards: at least two shards hold no story and write an empty table
    small = tmp_path / "small.csv"
    pd.read_csv(story_file).head(3).to_csv(small, index=False)
    args = ["score", "--input", str(small), "--metrics", "bleu", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / f"one{suffix}")]) == 0
    parts = [tmp_path / f"p{k}{suffix}" for k in range(1, 6)]
    for k, out in enumerate(parts, start=1):
        assert main([*args, "--shard", f"{k}/5", "--out", str(out)]) == 0
    empty = [json.loads(Path(f"{p}.shard.json").read_text())["positions"] == [] for p in parts]
    assert sum(empty) >= 2
    assert main(["merge", *map(str, parts), "--out", str(tmp_path / f"m{suffix}")]) == 0
    assert (tmp_path / f"m{suffix}").read_bytes() == (tmp_path / f"one{suffix}").read_bytes()


def test_library_shards_hold_the_rows_of_one_run(story_file):
    stories = pd.read_csv(story_file)
    full = score(stories, "bleu,surface", options={"surface": {"tokenizer": "regex"}},
                 show_progress=False)
    parts = [score(stories, "bleu,surface", options={"surface": {"tokenizer": "regex"}},
                   show_progress=False, shard=f"{k}/3") for k in (1, 2, 3)]
    key = ["story_id", "measure"]
    together = pd.concat(parts).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(together, full.sort_values(key).reset_index(drop=True))
    # the inter-story repetition is set-level: taken over all stories in every shard
    assert together["measure"].str.startswith("Inter-story").any()


@pytest.fixture(scope="module")
def score_shards(tmp_path_factory, story_file):
    folder = tmp_path_factory.mktemp("shards")
    for k in (1, 2, 3):
        assert main(["score", "--input", str(story_file), *SCORE, "--shard", f"{k}/3",
                     "--out", str(folder / f"p{k}.csv")]) == 0
    assert main(["score", "--input", str(story_file), *SCORE, "--shard", "1/2",
                 "--out", str(folder / "half1.csv")]) == 0
    assert main(["score", "--input", str(story_file), "--metrics", "bleu", "--no-progress",
                 "--shard", "2/3", "--out", str(folder / "bleu2.csv")]) == 0
    return folder


@pytest.mark.parametrize("names, message", [
    (["p1", "p2", "p2", "p3"], "overlapping shards: 2/3 ("),
    (["p1", "p3"], "missing shard(s) 2/3 of 3"),
    (["p1", "half1", "p3"], "differ in their shard count"),
    (["p1", "bleu2", "p3"], "different settings (metrics, "),
])
def test_merge_refuses_overlapping_missing_or_foreign_shards(score_shards, names, message,
                                                             tmp_path, capsys):
    out = tmp_path / "m.csv"
    code = main(["merge", *[str(score_shards / f"{n}.csv") for n in names], "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and message in err and not out.exists()
    assert len(err.strip().splitlines()) == 1  # one line, naming the shards


def test_merge_refuses_output_without_metadata_or_of_another_format(score_shards, tmp_path,
                                                                    capsys):
    plain = tmp_path / "plain.csv"
    plain.write_text("story_id\n")
    assert main(["merge", str(plain), "--out", str(tmp_path / "m.csv")]) == 2
    assert "no shard metadata" in capsys.readouterr().err
    absent = tmp_path / "p9.csv"  # a typo in a shard's name: said as such
    assert main(["merge", str(absent), "--out", str(tmp_path / "m.csv")]) == 2
    assert f"{absent}: no such file or folder" in capsys.readouterr().err
    assert main(["merge", *[str(score_shards / f"p{k}.csv") for k in (1, 2, 3)], "--out",
                 str(tmp_path / "m.parquet")]) == 2
    assert "the shards are csv files" in capsys.readouterr().err


def test_score_shard_usage_errors(story_file, tmp_path, capsys):
    assert main(["score", "--input", str(story_file), *SCORE, "--shard", "1/3"]) == 2
    assert "--shard needs --out" in capsys.readouterr().err
    assert main(["score", "--input", str(story_file), *SCORE, "--shard", "1/3", "--out",
                 str(tmp_path / "a.csv"), "--diversity-out", str(tmp_path / "d.csv")]) == 2
    assert "--diversity-out" in capsys.readouterr().err
    assert main(["score", "--input", str(story_file), *SCORE, "--shard", "4/3", "--out",
                 str(tmp_path / "a.csv")]) == 2
    assert "1 <= K <= N" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# rate and pairwise judge against the local fake server
# ---------------------------------------------------------------------------------------------


def _stories(n_prompts=5, systems=("S0", "S1", "S2")) -> pd.DataFrame:
    rows = [(f"{s}/{p}", s, p, f"Write about thing {p}.", f"A tale by {s} for prompt {p}.",
             f"Human {p}.") for p in range(n_prompts) for s in systems]
    return pd.DataFrame(rows, columns=["story_id", "system", "prompt_id", "prompt", "story",
                                       "reference"])


def _rate(srv, stories, cache, *extra):
    return ["rate", "--backend", "openai", "--base-url", srv.base_url, "--model", "stub",
            "--model-name", "Stub", "--stories", str(stories), "--cache", str(cache),
            "--no-progress", "--no-api-key", "--eval-prompts", "1-2", "--criteria", "RE,CH",
            "--tries", "2", "--paired", *extra]


def test_rate_shards_merge_into_the_tables_of_one_run(tmp_path, capsys):
    stories = tmp_path / "stories.csv"
    _stories().to_csv(stories, index=False)
    with StubServer(Script()) as srv:
        assert main(_rate(srv, stories, tmp_path / "one.sqlite", "--out",
                          str(tmp_path / "one"))) == 0
        for k in (1, 2, 3):  # each shard with its own cache and output folder
            assert main(_rate(srv, stories, tmp_path / f"c{k}.sqlite", "--shard", f"{k}/3",
                              "--out", str(tmp_path / f"part{k}"))) == 0
    capsys.readouterr()
    sizes = [len(pd.read_csv(tmp_path / f"part{k}" / "ratings.csv")) for k in (1, 2, 3)]
    assert sum(sizes) == 15 * 2 * 2 * 2 and min(sizes) > 0
    assert main(["merge", *[str(tmp_path / f"part{k}") for k in (3, 1, 2)], "--out",
                 str(tmp_path / "merged")]) == 0
    one = sorted(p.name for p in (tmp_path / "one").iterdir())
    merged = sorted(p.name for p in (tmp_path / "merged").iterdir())
    assert merged == one and "judge_systems_paired.csv" in one
    for name in one:
        if name != "settings.json":  # it names the shards merged
            assert (tmp_path / "merged" / name).read_bytes() == \
                (tmp_path / "one" / name).read_bytes(), name
    settings = json.loads((tmp_path / "merged" / "settings.json").read_text())
    assert [s["shard"] for s in settings["merged_shards"]] == ["3/3", "1/3", "2/3"]
    # a shard run with another --tries is not a shard of the same run
    with StubServer(Script()) as srv:
        assert main(_rate(srv, stories, tmp_path / "c2.sqlite", "--shard", "2/3", "--out",
                          str(tmp_path / "other"), "--tries", "1")) == 0
    assert main(["merge", *[str(tmp_path / p) for p in ("part1", "other", "part3")], "--out",
                 str(tmp_path / "m2")]) == 2
    assert "different settings (tries)" in capsys.readouterr().err


def _judge_answer(payload, key) -> str:
    # a verdict per dimension drawn from the request key; some answers unreadable
    h = int(key[:8], 16)
    if h % 7 == 0:
        return "I cannot choose."
    pick = "AB"
    return "\n".join(f"{d}: {pick[(h >> i) & 1]}" for i, d in
                     enumerate(["Plot", "Creativity", "Development", "Language Use",
                                "Overall"])) + "\n"


def _judge(srv, stories, cache, *extra):
    return ["pairwise", "judge", "--backend", "openai", "--base-url", srv.base_url, "--model",
            "stub", "--judge", "Stub", "--stories", str(stories), "--cache", str(cache),
            "--no-progress", "--no-api-key", *extra]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_judge_shards_merge_into_the_files_of_one_run(tmp_path, suffix, capsys):
    stories = tmp_path / "stories.csv"
    _stories(n_prompts=6, systems=("S0", "S1", "S2", "S3")).to_csv(stories, index=False)
    with StubServer(Script(answer=_judge_answer)) as srv:
        assert main(_judge(srv, stories, tmp_path / "one.sqlite", "--out",
                           str(tmp_path / f"one{suffix}"))) == 0
        for k in (1, 2, 3):
            assert main(_judge(srv, stories, tmp_path / f"c{k}.sqlite", "--shard", f"{k}/3",
                               "--out", str(tmp_path / f"p{k}{suffix}"))) == 0
    assert main(["merge", *[str(tmp_path / f"p{k}{suffix}") for k in (1, 2, 3)], "--out",
                 str(tmp_path / f"merged{suffix}")]) == 0
    capsys.readouterr()
    one, merged = tmp_path / f"one{suffix}", tmp_path / f"merged{suffix}"
    assert merged.read_bytes() == one.read_bytes()
    fail = f"{{}}.failures{suffix}"
    assert (tmp_path / fail.format("merged")).read_bytes() == \
        (tmp_path / fail.format("one")).read_bytes()
    assert (tmp_path / fail.format("one")).stat().st_size > 100  # some unreadable answers
    info = json.loads(Path(f"{tmp_path / 'p1'}{suffix}.shard.json").read_text())
    assert info["total"] == 6 * 6 and info["command"] == "pairwise judge"


def test_rate_shard_dry_run_plans_only_its_stories_and_has_its_own_cache(tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    stories = tmp_path / "stories.csv"
    _stories().to_csv(stories, index=False)
    assert main(["rate", "--model", "m", "--stories", str(stories), "--shard", "2/4",
                 "--eval-prompts", "1", "--tries", "1", "--dry-run", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    ids = _stories()["story_id"].tolist()
    assert plan["n_stories"] == len(shard_rows(ids, "2/4"))
    assert not list(tmp_path.glob("*.sqlite"))  # a dry run creates no cache
    # without --cache, each shard gets its own cache file
    from storyeval.cli import build_parser
    from storyeval.cli.llm_options import shard_from_args

    args = build_parser().parse_args(["rate", "--model", "m", "--shard", "2/4"])
    assert shard_from_args(args) == Shard(2, 4)
    assert str(args.cache) == "storyeval-llm-cache.shard-2-of-4.sqlite"
    args = build_parser().parse_args(["pairwise", "judge", "--model", "m", "--shard", "1/2",
                                      "--cache", "mine.sqlite"])
    shard_from_args(args)
    assert str(args.cache) == "mine.sqlite"


def test_scale_page_datasets_recipe_runs_on_a_dataset_saved_to_disk(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    import re

    monkeypatch.chdir(tmp_path)
    stories = hanna_stories().sample(12, random_state=2)
    ds = datasets.Dataset.from_pandas(
        stories.rename(columns={"story_id": "id", "story": "text"}), preserve_index=False)
    ds.save_to_disk("my_stories")
    page = (Path(__file__).parent.parent / "docs" / "scale.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"^```python\n(.*?)^```", page, flags=re.DOTALL | re.M)
              if "load_from_disk" in b]
    assert len(blocks) == 1
    namespace: dict = {}
    exec(compile(blocks[0], "scale.md", "exec"), namespace)  # noqa: S102
    read = pd.read_parquet("stories.parquet")
    assert read["story_id"].tolist() == stories["story_id"].tolist()
    parts = [namespace["part"],
             score(read, "bleu,surface", shard="2/2", show_progress=False)]
    got = sorted(pd.concat(parts)["story_id"].unique())
    assert got == sorted(stories["story_id"])
    assert not set(parts[0]["story_id"]) & set(parts[1]["story_id"])


def test_rate_and_judge_shards_without_a_story_merge_too(tmp_path, capsys):
    stories = tmp_path / "stories.csv"
    _stories(n_prompts=2, systems=("S0", "S1")).to_csv(stories, index=False)  # 4 stories
    ids = _stories(n_prompts=2, systems=("S0", "S1"))["story_id"].tolist()
    n = 5
    assert 0 in [len(shard_rows(ids, f"{k}/{n}")) for k in range(1, n + 1)]
    with StubServer(Script(answer=_judge_answer)) as srv:
        assert main(_rate(srv, stories, tmp_path / "one.sqlite", "--out",
                          str(tmp_path / "one"))) == 0
        assert main(_judge(srv, stories, tmp_path / "j.sqlite", "--out",
                           str(tmp_path / "one.csv"))) == 0
        for k in range(1, n + 1):
            assert main(_rate(srv, stories, tmp_path / f"c{k}.sqlite", "--shard", f"{k}/{n}",
                              "--out", str(tmp_path / f"part{k}"))) == 0
            assert main(_judge(srv, stories, tmp_path / f"j{k}.sqlite", "--shard",
                               f"{k}/{n}", "--out", str(tmp_path / f"v{k}.csv"))) == 0
    assert "holds none of the stories" in capsys.readouterr().out
    assert main(["merge", *[str(tmp_path / f"part{k}") for k in range(1, n + 1)], "--out",
                 str(tmp_path / "merged")]) == 0
    for name in ("ratings.csv", "scores.csv", "judge_systems.csv", "consistency.csv"):
        assert (tmp_path / "merged" / name).read_bytes() == \
            (tmp_path / "one" / name).read_bytes(), name
    assert main(["merge", *[str(tmp_path / f"v{k}.csv") for k in range(1, n + 1)], "--out",
                 str(tmp_path / "merged.csv")]) == 0
    assert (tmp_path / "merged.csv").read_bytes() == (tmp_path / "one.csv").read_bytes()
    assert (tmp_path / "merged.failures.csv").read_bytes() == \
        (tmp_path / "one.failures.csv").read_bytes()


# ---------------------------------------------------------------------------------------------
# merge verifies every shard before it writes (issue 48): fault injection
# ---------------------------------------------------------------------------------------------


def _records(p: Path) -> list[bytes]:
    """The CSV records of a file, with their line ends (a quoted field may hold newlines)."""
    records, current = [], b""
    for line in p.read_bytes().splitlines(keepends=True):
        current += line
        if current.count(b'"') % 2 == 0:
            records.append(current)
            current = b""
    return records + ([current] if current else [])


def _cut_line(p: Path) -> None:  # the last record lost, cut at its line boundary
    p.write_bytes(b"".join(_records(p)[:-1]))


def _cut_mid_line(p: Path) -> None:
    records = _records(p)
    p.write_bytes(b"".join(records[:-1]) + records[-1][:len(records[-1]) // 2])


def _dup_row(p: Path) -> None:
    records = _records(p)
    p.write_bytes(b"".join([*records, records[-1]]))


def _dup_swap(p: Path) -> None:  # a row repeated in place of another: the count holds
    records = _records(p)
    p.write_bytes(b"".join([records[0], records[1], records[1], *records[2:-1]]))


def _header(old: bytes, new: bytes):
    def damage(p: Path) -> None:
        head, sep, rest = p.read_bytes().partition(b"\n")
        p.write_bytes(head.replace(old, new, 1) + sep + rest)
    return damage


def _extra_column(p: Path) -> None:
    records = _records(p)
    p.write_bytes(b"".join(r.rstrip(b"\n") + (b",1\n" if i else b",extra\n")
                           for i, r in enumerate(records)))


def _edit_cell(p: Path) -> None:  # the same shape, one digit of the first row's last field
    import re

    records = _records(p)
    last = [m for m in re.finditer(rb"\d", records[1])][-1].start()
    digit = b"%d" % ((int(records[1][last:last + 1]) + 1) % 10)
    records[1] = records[1][:last] + digit + records[1][last + 1:]
    p.write_bytes(b"".join(records))


DAMAGE = {  # how a shard's file is damaged -> what the refusal says
    "cut at a line boundary": (_cut_line, r"\d+ rows, its sidecar records \d+"),
    "cut mid-line": (_cut_mid_line, r"SHA-256 differs|cannot be read as csv"),
    "0-byte": (lambda p: p.write_bytes(b""), r"0 rows( \(0 bytes\))?, its sidecar records [1-9]"),
    "header-only": (lambda p: p.write_bytes(p.read_bytes().partition(b"\n")[0] + b"\n"),
                    r"0 rows( \(0 bytes\))?, its sidecar records [1-9]"),
    "NUL-filled": (lambda p: p.write_bytes(b"\0" * p.stat().st_size),
                   r"header differs|cannot be read as csv|0 rows, its sidecar"),
    "a duplicated row": (_dup_row, r"\d+ rows, its sidecar records \d+"),
    "a row repeated in place of another": (_dup_swap, r"unit '.+' has \d+ rows, its sidecar "
                                                      r"records \d+"),
    "an extra column": (_extra_column, r"header differs .*1 extra column\(s\), first 'extra'"),
    "a renamed header": (_header(b"story_id", b"story_idx"),
                         r"column 'story_idx' where 'story_id' is expected"),
    "an edited cell": (_edit_cell, r"SHA-256 differs from the one its sidecar records"),
}


def _copy_shards(src: Path, dst: Path, names) -> list[Path]:
    import shutil

    out = []
    for name in names:
        if (src / name).is_dir():
            shutil.copytree(src / name, dst / name)
        else:
            for f in src.glob(f"{name}*"):
                shutil.copy(f, dst / f.name)
        out.append(dst / name)
    return out


def _refused(args, out: Path, capsys, *, names: str, says: str) -> str:
    """`storyeval merge ARGS --out OUT`: exit 2, one line naming the shard, no output."""
    import re

    code = main(["merge", *map(str, args), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    assert names in err and re.search(says, err), err
    assert not out.exists() and not list(out.parent.glob(f".{out.name}*")), err
    return err


@pytest.mark.parametrize("case", list(DAMAGE))
def test_merge_refuses_a_damaged_score_shard(score_shards, tmp_path, capsys, case):
    damage, says = DAMAGE[case]
    parts = _copy_shards(score_shards, tmp_path, ["p1.csv", "p2.csv", "p3.csv"])
    damage(parts[1])
    _refused(parts, tmp_path / "m.csv", capsys, names=str(parts[1]), says=says)


@pytest.fixture(scope="module")
def rate_shards(tmp_path_factory):
    """3 `rate` shards of 15 stories, and shard 2/3 of another stories file with the same ids
    (one story's text differs)."""
    folder = tmp_path_factory.mktemp("rate")
    stories, other = folder / "stories.csv", folder / "other.csv"
    _stories().to_csv(stories, index=False)
    changed = _stories()
    changed.loc[4, "story"] = "Another tale altogether."
    changed.to_csv(other, index=False)
    with StubServer(Script()) as srv:
        for k in (1, 2, 3):
            assert main(_rate(srv, stories, folder / f"c{k}.sqlite", "--shard", f"{k}/3",
                              "--out", str(folder / f"part{k}"))) == 0
        assert main(_rate(srv, other, folder / "o2.sqlite", "--shard", "2/3", "--out",
                          str(folder / "other2"))) == 0
    return folder


@pytest.mark.parametrize("case", list(DAMAGE))
def test_merge_refuses_a_damaged_rate_shard(rate_shards, tmp_path, capsys, case):
    damage, says = DAMAGE[case]
    parts = _copy_shards(rate_shards, tmp_path, ["part1", "part2", "part3"])
    damage(parts[1] / "ratings.csv")
    _refused(parts, tmp_path / "merged", capsys, names=str(parts[1] / "ratings.csv"),
             says=says)


def _sidecar_edit(edit):
    def damage(sidecar: Path) -> None:
        data = json.loads(sidecar.read_text())
        edit(data)
        sidecar.write_text(json.dumps(data))
    return damage


def _units_of_shard_1(sidecar: Path) -> None:
    """Shard 2/3's sidecar given the units (with their positions and counts) of shard 1/3."""
    one = (sidecar.parent.parent / "part1" / "shard.json" if sidecar.name == "shard.json"
           else sidecar.with_name("p1.csv.shard.json"))
    src = json.loads(one.read_text())

    def edit(d):
        d.update(units=src["units"], positions=src["positions"])
        for f, g in zip(d["extra"]["files"], src["extra"]["files"]):
            f["unit_rows"] = g["unit_rows"]
    _sidecar_edit(edit)(sidecar)


SIDECAR_DAMAGE = {  # a damaged sidecar -> what the refusal says
    "naming ../../x": (_sidecar_edit(lambda d: d["extra"]["files"][0].update(name="../../x")),
                       r"name '\.\./\.\./x' leaves the sidecar's folder"),
    "naming an absolute path": (
        _sidecar_edit(lambda d: d["extra"]["files"][0].update(name="/etc/passwd")),
        r"name '/etc/passwd' leaves the sidecar's folder"),
    "a JSON list": (lambda s: s.write_text("[1, 2]"), r"a JSON list, not an object"),
    "garbage": (lambda s: s.write_bytes(b"\x00\xff{not json"), r"not a storyeval shard "
                                                                r"metadata file \("),
    "a unit listed twice": (
        _sidecar_edit(lambda d: d.update(units=[d["units"][1], *d["units"][1:]])),
        r"unit '.+' listed twice"),
    "the units of another shard": (_units_of_shard_1, r"unit '.+' belongs to shard 1/3"),
}


@pytest.mark.parametrize("case", list(SIDECAR_DAMAGE))
@pytest.mark.parametrize("command", ["score", "rate"])
def test_merge_refuses_a_damaged_sidecar(score_shards, rate_shards, tmp_path, capsys, command,
                                         case):
    damage, says = SIDECAR_DAMAGE[case]
    if command == "score":
        parts = _copy_shards(score_shards, tmp_path, ["p1.csv", "p2.csv", "p3.csv"])
        sidecar, out = Path(f"{parts[1]}.shard.json"), tmp_path / "m.csv"
    else:
        parts = _copy_shards(rate_shards, tmp_path, ["part1", "part2", "part3"])
        sidecar, out = parts[1] / "shard.json", tmp_path / "merged"
    damage(sidecar)
    _refused(parts, out, capsys, names=str(sidecar), says=says)


@pytest.mark.parametrize("command", ["score", "rate"])
def test_merge_refuses_missing_twice_or_another_inputs_shards(score_shards, rate_shards,
                                                              story_file, tmp_path, capsys,
                                                              command):
    if command == "score":
        other = tmp_path / "other.csv"  # the same ids, one story's text changed
        stories = pd.read_csv(story_file)
        stories.loc[0, "story"] = "Another tale altogether."
        stories.to_csv(other, index=False)
        assert main(["score", "--input", str(other), *SCORE, "--shard", "2/3", "--out",
                     str(tmp_path / "other2.csv")]) == 0
        p1, p2, p3 = (score_shards / f"p{k}.csv" for k in (1, 2, 3))
        foreign, out = tmp_path / "other2.csv", tmp_path / "m.csv"
    else:
        p1, p2, p3 = (rate_shards / f"part{k}" for k in (1, 2, 3))
        foreign, out = rate_shards / "other2", tmp_path / "merged"
    capsys.readouterr()
    _refused([p1, p3], out, capsys, names=str(p1), says=r"missing shard\(s\) 2/3 of 3")
    _refused([p1, p2, p3, p2], out, capsys, names=str(p2), says=r"overlapping shards: 2/3 \(")
    _refused([p1, foreign, p3], out, capsys, names=str(foreign),
             says=r"differ in their input \(texts of the same ids\)")
    # and the merge of the right shards works
    assert main(["merge", str(p3), str(p2), str(p1), "--out", str(out)]) == 0


def test_merge_reads_the_path_given_not_the_name_in_the_sidecar(score_shards, tmp_path,
                                                                capsys):
    import shutil

    p1, p2, p3 = _copy_shards(score_shards, tmp_path, ["p1.csv", "p2.csv", "p3.csv"])
    moved = tmp_path / "renamed.csv"  # the file and its sidecar renamed: still shard 2/3
    shutil.copy(p2, moved)
    shutil.copy(f"{p2}.shard.json", f"{moved}.shard.json")
    assert main(["merge", str(p1), str(moved), str(p3), "--out", str(tmp_path / "a.csv")]) == 0
    capsys.readouterr()
    _cut_line(moved)  # p2.csv, named in the sidecar, is intact: the file given is read
    _refused([p1, moved, p3], tmp_path / "b.csv", capsys, names=str(moved),
             says=r"rows, its sidecar records")
    before = p1.read_bytes()  # --out onto a shard's own file
    assert main(["merge", str(p1), str(p2), str(p3), "--out", str(p1)]) == 2
    assert f"--out {p1}: is the shard output" in capsys.readouterr().err
    assert p1.read_bytes() == before
    _refused([p1, tmp_path, p3], tmp_path / "c.csv", capsys, names=str(tmp_path),
             says=r"no shard metadata")


@pytest.mark.parametrize("command", ["score", "rate"])
@pytest.mark.parametrize("shard", ["1/99999999999999999999",
                                   "99999999999999999999/99999999999999999999",
                                   "99999999999999999999/3"])
def test_huge_shard_numbers_are_one_line_errors(story_file, tmp_path, capsys, command, shard):
    if command == "score":
        args = ["score", "--input", str(story_file), *SCORE, "--out", str(tmp_path / "s.csv")]
    else:
        args = ["rate", "--model", "m", "--stories", str(story_file), "--dry-run"]
    assert main([*args, "--shard", shard]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--shard: " in err, err
    assert not list(tmp_path.iterdir())


def _make_old(sidecar: Path) -> None:
    """A sidecar as storyeval 0.3 wrote it (version 1: no input texts, no file records)."""
    data = json.loads(sidecar.read_text())
    data["version"] = 1
    del data["inputs"]
    for f in data["extra"]["files"]:
        for key in ("columns", "rows", "unit_rows", "bytes", "sha256"):
            del f[key]
    sidecar.write_text(json.dumps(data))


@pytest.mark.parametrize("command", ["score", "rate"])
def test_old_sidecars_are_refused_unless_trusted(score_shards, rate_shards, tmp_path, capsys,
                                                 command):
    if command == "score":
        parts = _copy_shards(score_shards, tmp_path, ["p1.csv", "p2.csv", "p3.csv"])
        sidecars, target = [Path(f"{p}.shard.json") for p in parts], parts[1]
        out, again = tmp_path / "m.csv", tmp_path / "m2.csv"
    else:
        parts = _copy_shards(rate_shards, tmp_path, ["part1", "part2", "part3"])
        sidecars, target = [p / "shard.json" for p in parts], parts[1] / "ratings.csv"
        out, again = tmp_path / "merged", tmp_path / "merged2"
    for s in sidecars:
        _make_old(s)
    _refused(parts, out, capsys, names=str(sidecars[0]),
             says=r"made by an older storyeval .*--trust-old-sidecars")
    assert main(["merge", *map(str, parts), "--out", str(out), "--trust-old-sidecars"]) == 0
    err = capsys.readouterr().err
    assert err.count("has an old sidecar") == 3 and out.exists()
    _cut_line(target)  # what version 1 allows still refuses a cut file
    _refused([*parts, "--trust-old-sidecars"], again, capsys, names=str(target),
             says=r"no row of unit|rows, its sidecar records")
    _dup_swap(parts[2] / "ratings.csv" if command == "rate" else parts[2])
    _refused([parts[0], parts[2], parts[1], "--trust-old-sidecars"], again, capsys,
             names=str(parts[2]), says=r"repeats an earlier row|rows, its sidecar records")


def test_merge_checks_a_judge_shards_failures_file_beside_its_sidecar(tmp_path, capsys):
    stories = tmp_path / "stories.csv"
    _stories(n_prompts=4, systems=("S0", "S1", "S2")).to_csv(stories, index=False)
    with StubServer(Script(answer=_judge_answer)) as srv:
        for k in (1, 2):
            assert main(_judge(srv, stories, tmp_path / f"c{k}.sqlite", "--shard", f"{k}/2",
                               "--out", str(tmp_path / f"p{k}.csv"))) == 0
    parts = [tmp_path / "p1.csv", tmp_path / "p2.csv"]
    fails = [tmp_path / f"p{k}.failures.csv" for k in (1, 2)]
    target = max(fails, key=lambda f: f.stat().st_size)  # the one with unreadable answers
    assert len(_records(target)) > 1
    capsys.readouterr()
    _dup_row(target)
    _refused(parts, tmp_path / "m.csv", capsys, names=str(target),
             says=r"\d+ rows, its sidecar records \d+")
    assert not (tmp_path / "m.failures.csv").exists()
    target.unlink()
    _refused(parts, tmp_path / "m.csv", capsys, names=str(target),
             says=r"no such file \(the shard's failures file\)")


def test_inputs_fingerprint_sees_texts_not_column_order_or_string_dtype():
    from storyeval.data.shards import inputs_fingerprint

    a = pd.DataFrame({"story_id": ["a", "b"], "story": ["x", None], "prompt_id": [1, 2]})
    same = [a[["prompt_id", "story", "story_id"]],
            a.astype({"story_id": "string[pyarrow]", "story": "string[pyarrow]"})]
    edited, nan_text = a.copy(), a.copy()
    edited.loc[0, "story"] = "y"
    nan_text["story"] = ["x", "nan"]  # the text "nan" is not a missing story
    assert {inputs_fingerprint(t) for t in [a, *same]} == {inputs_fingerprint(a)}
    assert inputs_fingerprint(edited) != inputs_fingerprint(a)
    assert inputs_fingerprint(nan_text) != inputs_fingerprint(a)
    # by hand: sorted columns, each name and cell as an 8-byte big-endian length and its bytes
    cell = [(len(x).to_bytes(8, "big") + x) for x in (b"prompt_id", b"1", b"2", b"story", b"x")]
    h = hashlib.sha256(b"".join(cell) + b"\xff" * 8 + b"".join(
        len(x).to_bytes(8, "big") + x for x in (b"story_id", b"a", b"b")))
    assert inputs_fingerprint(a) == h.hexdigest()
