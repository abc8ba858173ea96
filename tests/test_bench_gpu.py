"""benchmarks/bench_gpu.py runs on a CPU (tiny models, three stories) and its numbers hold:
storyeval's BERTScore equals bert_score on the RoBERTa-type encoder it builds, the precisions
are compared, and the JSON holds every section."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("bert_score")

pytestmark = pytest.mark.slow  # builds three tiny models and runs every metric (~30 s idle)

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_gpu.py"


def test_bench_gpu_runs_on_cpu(tmp_path):
    spec = importlib.util.spec_from_file_location("storyeval_bench_gpu", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "bench.json"
    results = bench.main(["--device", "cpu", "--size", "tiny", "--n-stories", "3",
                          "--n-exact", "3", "--batch-size", "4", "--out", str(out)])
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(json.dumps(results))
    assert results["info"]["device"] == "cpu" and results["info"]["n_stories"] == 3
    bert = results["bertscore"]
    assert bert["deviation_f1"]["storyeval_truncate_vs_bert_score_batch1"]["max_abs"] < 1e-6
    assert 0 < bert["deviation_f1"]["bfloat16_vs_float32"]["max_abs"] < 0.05
    mink = results["mink"]
    assert mink["deviation_min_k_storyeval_vs_plain_loop"]["max_abs"] < 1e-4
    bart = results["bartscore"]
    assert bart["deviation_storyeval_vs_reference_style"]["max_abs"] < 1e-4
    for section, key in (("bertscore", "bert_score"), ("mink", "storyeval_bfloat16"),
                         ("bartscore", "storyeval_float32")):
        assert results[section][key]["stories_per_s"] > 0
