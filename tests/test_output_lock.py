"""Output folders shared by nothing by accident (issue 37): a run holds its --out folder's lock,
a concurrent run is refused with one line naming the other process, two `meta --out D
--overwrite` at once leave one complete result, and --overwrite never follows a symbolic link
out of the folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from storyeval._atomic import LOCK, MANIFEST, OutputFolder
from storyeval.exceptions import InputError


def test_a_second_writer_is_refused_naming_the_first(tmp_path):
    out = tmp_path / "out"
    with OutputFolder(out, command="a") as first:
        first.write_text("a.txt", "a\n")
        with pytest.raises(InputError, match=f"process {os.getpid()} .*writing this folder"):
            OutputFolder(out, overwrite=True, command="b").open()
    with OutputFolder(out, overwrite=True, command="b") as second:  # released: now it works
        second.write_text("b.txt", "b\n")
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST, "b.txt"])
    # a failed run releases the lock too, and leaves no staging folder
    with pytest.raises(RuntimeError), OutputFolder(out, overwrite=True) as third:
        third.write_text("c.txt", "c\n")
        raise RuntimeError("boom")
    assert sorted(p.name for p in out.iterdir()) == sorted([MANIFEST, "b.txt"])
    OutputFolder(out, overwrite=True).open()


def test_overwrite_never_deletes_or_writes_through_a_link_out_of_the_folder(tmp_path):
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep me\n")
    out.mkdir()
    (out / "sub").symlink_to(outside)
    (out / "link.txt").symlink_to(victim)
    (out / MANIFEST).write_text(json.dumps({"files": ["sub/victim.txt", "link.txt"]}))
    with OutputFolder(out, overwrite=True) as folder:
        folder.write_text("new.txt", "new\n")
    assert victim.read_text() == "keep me\n"  # the planted manifest deleted nothing outside
    assert not (out / "link.txt").is_symlink()  # the link itself (inside) was removed
    with pytest.raises(InputError, match="symbolic link to outside the folder"), \
            OutputFolder(out, overwrite=True) as folder:
        folder.write_text("sub/victim.txt", "overwritten\n")
    assert victim.read_text() == "keep me\n"


def test_two_meta_runs_on_one_folder_at_once_leave_one_complete_result(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "STORYEVAL_NO_PROGRESS": "1",
           "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "storyeval", "meta", "--metrics", "BLEU,chrF", "--levels",
           "system", "--out", str(out), "--format", "csv", "--overwrite"]
    for _ in range(1):
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(2)]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        for code, err in results:
            assert code == 0 or (code == 2 and "writing this folder now" in err
                                 and "Traceback" not in err), err
        assert any(code == 0 for code, _ in results)
        files = json.loads((out / MANIFEST).read_text())["files"]
        assert files and all((out / f).is_file() for f in files)
        held = {p.name for p in out.iterdir()} - {LOCK, MANIFEST}
        assert held == set(files)  # nothing missing, nothing half-written, no staging left
