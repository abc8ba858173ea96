"""``storyeval rate``: rate stories with an LLM (Eval-Prompts x criteria x tries), resumable.

Exit codes: 0 ok, 1 some requests failed after their retries (rerun to retry them; answers
already stored are not requested again), 2 usage or input error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from storyeval.cli.llm_options import (
    add_backend_model_options,
    add_price_option,
    add_sampling_and_transport_options,
    add_shard_option,
    backend_from_args,
    cost_of_run,
    dry_run_cost,
    for_file,
    prices_from_record,
    prices_record,
    sampling_from_args,
    shard_from_args,
    shard_settings,
)

#: Options of `rate` that shards merged together must share (besides LLM_SHARD_SETTINGS).
SHARD_SETTINGS = ("model_name", "dataset", "systems", "limit", "eval_prompts", "criteria",
                  "tries", "templates", "guidelines", "criteria_file", "parser",
                  "on_unparsed", "paired")

DESCRIPTION = """\
Rate every story on each criterion with each Eval-Prompt, `--tries` times, through an
OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI), a local Hugging Face model or the
vLLM offline engine. Every answer is stored in the --cache file the moment it arrives; rerunning
the same command resumes and sends only what is missing. Writes the tidy ratings table and the
per-measure scores ("{model} {CODE} {eval_prompt}", mean over usable tries) that
`storyeval meta --scores` reads.
"""

EPILOG = """\
examples:
  storyeval rate --backend openai --base-url http://localhost:8000/v1 --model my-model \\
      --eval-prompts 1-4 --criteria all --tries 3 --dataset hanna --out runs/my-model
  storyeval rate --backend hf --model ./tiny-model --stories stories.csv --eval-prompts 1 --dry-run
  # the paper's extraction (first number; none or off the scale -> 3), from the cache only:
  storyeval rate --model my-model --dataset hanna --cache-only --parser first_number \\
      --on-unparsed midpoint --out runs/my-model-paper

exit codes: 0 ok, 1 some requests failed after retries (rerun to resume), 2 usage or input error.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``storyeval rate``."""
    p = subparsers.add_parser("rate", help="rate stories with an LLM (resumable, cached)",
                              description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    m = p.add_argument_group("model")
    add_backend_model_options(m)
    m.add_argument("--model-name", metavar="LABEL",
                   help="label in the ratings and measure names (default: --model, or the "
                        "folder name of a local path)")
    d = p.add_argument_group("stories")
    src = d.add_mutually_exclusive_group()
    src.add_argument("--dataset", choices=("hanna",), default=None,
                     help="hanna: the 96 human + 576 LLM stories whose texts HANNA releases "
                          "(default when --stories is not given)")
    src.add_argument("--stories", type=Path, metavar="FILE",
                     help="CSV/JSONL/Parquet with story_id, system, prompt_id, prompt, story "
                          "(+ reference for Eval-Prompt 4)")
    d.add_argument("--systems", metavar="LIST", help="comma-separated systems to keep")
    d.add_argument("--limit", type=int, metavar="N", help="only the first N stories")
    w = p.add_argument_group("what to ask")
    w.add_argument("--eval-prompts", default="1-4", metavar="SPEC",
                   help="Eval-Prompts, e.g. 1-4 or 1,3 (default: 1-4)")
    w.add_argument("--criteria", default="all", metavar="LIST",
                   help="criteria names or codes, e.g. RE,CH (default: all)")
    w.add_argument("--tries", type=int, default=3, help="answers per item (default: 3)")
    w.add_argument("--templates", type=Path, metavar="FILE",
                   help="Eval-Prompt templates JSON (default: the packaged HANNA wording)")
    w.add_argument("--guidelines", type=Path, metavar="FILE",
                   help="guidelines JSON for Eval-Prompt 3 (default: packaged)")
    w.add_argument("--criteria-file", type=Path, metavar="FILE",
                   help="criteria JSON {name: {code, definition}} (default: HANNA's six)")
    add_sampling_and_transport_options(p, max_tokens=256)
    c = p.add_argument_group("cache and output")
    c.add_argument("--cache", type=Path, default=Path("storyeval-llm-cache.sqlite"),
                   help="answer cache (SQLite; default: ./storyeval-llm-cache.sqlite)")
    c.add_argument("--cache-only", action="store_true",
                   help="send nothing; use stored answers (re-parsed if the parser changed)")
    c.add_argument("--dry-run", action="store_true",
                   help="print the number of requests and a token estimate, send nothing")
    c.add_argument("--out", type=Path, metavar="DIR",
                   help="write ratings.csv (with each request's tokens and wall seconds), "
                        "scores.csv, failures.csv, failed_requests.csv (one row per "
                        "failed request: story, criterion, try, reason), cost.csv (tokens, "
                        "time and, with --price, cost per judge), judge_systems.csv, "
                        "consistency.csv and settings.json to DIR, all together at the end "
                        "(an interrupted run leaves the previous files whole)")
    c.add_argument("--overwrite", action="store_true",
                   help="with --out: accept a folder that already holds files (checked before "
                        "anything is sent); this run's files replace them and the previous "
                        "run's other files are removed (files storyeval did not write are kept)")
    c.add_argument("--parser", choices=("strict", "first_number"), default="strict",
                   help="rating extraction: strict (default; documented rules, failures "
                        "counted) or first_number (the paper's: the first number in the "
                        "answer). Changing it re-parses the stored answers, sending nothing")
    c.add_argument("--on-unparsed", choices=("nan", "midpoint"), default="nan",
                   help="scores: leave failed answers out (default) or count parse failures "
                        "as the scale midpoint, as the paper did; --parser first_number "
                        "--on-unparsed midpoint is the paper's rule exactly")
    c.add_argument("--paired", action="store_true",
                   help="also write judge_systems_paired.csv: by-prompt paired differences "
                        "between every two systems (paired t, BH per measure)")
    add_price_option(c)
    add_shard_option(c, "stories")
    c.add_argument("--json", action="store_true", help="print the run summary as JSON")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    c.add_argument("-v", "--verbose", action="store_true", help="log every retry")
    return p


def _split(text: str | None) -> list[str] | None:
    return [t.strip() for t in text.split(",") if t.strip()] if text else None


def _stories(args: argparse.Namespace):
    from storyeval.exceptions import InputError
    from storyeval.llm.stories import load_stories

    stories = load_stories(args.stories if args.stories is not None else (args.dataset or "hanna"))
    systems = _split(args.systems)
    if systems:
        unknown = sorted(set(systems) - set(stories["system"]))
        if unknown:
            raise InputError(f"--systems: unknown system(s) {unknown}; available: "
                             f"{sorted(stories['system'].unique())}")
        stories = stories[stories["system"].isin(systems)]
    if args.limit is not None:
        if args.limit < 1:
            raise InputError(f"--limit must be >= 1, got {args.limit}")
        stories = stories.head(args.limit)
    return stories.reset_index(drop=True)


def _write_outputs(out: Path, args: argparse.Namespace, ratings, fails,
                   summary: dict, shard_info=None) -> list[str]:
    """Write the run's files into ``out`` together (staged, then moved into place; see
    ``storyeval._atomic.OutputFolder``).

    settings.json, which lists every other file with its row count and SHA-256, is removed
    before the others are replaced and published last: a folder with a settings.json holds one
    complete run, and one without it an interrupted one.
    """
    import hashlib
    import warnings

    from storyeval._atomic import OutputFolder
    from storyeval.llm import outputs

    tables = {"ratings.csv": for_file(ratings),
              "scores.csv": outputs.to_scores(ratings, on_unparsed=args.on_unparsed),
              "failures.csv": fails, "failed_requests.csv": outputs.failed_requests(ratings),
              "cost.csv": for_file(cost_of_run(ratings, args, unit=["story_id"], by="model"))}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if shard_info is None:  # set-level tables: a shard leaves them to `storyeval merge`
            tables["judge_systems.csv"] = outputs.judge_systems(ratings,
                                                                on_unparsed=args.on_unparsed)
            if args.paired:
                tables["judge_systems_paired.csv"] = outputs.judge_systems(
                    ratings, on_unparsed=args.on_unparsed, paired=True)
            if args.tries >= 2:
                tables["consistency.csv"] = outputs.self_consistency(ratings)
    for w in caught:
        print(f"storyeval rate: warning: {w.message}", file=sys.stderr)
    files = {}
    with OutputFolder(out, overwrite=args.overwrite, command="rate") as folder:
        for name, table in tables.items():
            data = table.to_csv(index=False, lineterminator="\n").encode("utf-8")
            folder.file(name).write_bytes(data)
            files[name] = {"rows": len(table), "sha256": hashlib.sha256(data).hexdigest()}
        if shard_info is not None:  # what `storyeval merge` reads and checks
            _write_shard_json(folder, shard_info)
        settings = {**summary, "files": files}
        folder.file("settings.json").write_text(
            json.dumps(settings, indent=2, default=str) + "\n", encoding="utf-8")
        (out / "settings.json").unlink(missing_ok=True)  # the folder is incomplete until the end
    return [*files, "settings.json"]


def _write_shard_json(folder, shard_info) -> None:
    """The shard's sidecar, with its staged files recorded (`storyeval merge` checks them)."""
    from storyeval.data.shards import record_files

    sealed = record_files(shard_info, folder.file("ratings.csv").parent)
    folder.file("shard.json").write_text(sealed.to_json(), encoding="utf-8")


def _empty_shard(args: argparse.Namespace, shard, shard_info) -> int:
    """A shard that holds no story: nothing to send; with --out, an empty ratings.csv and the
    shard's metadata, for `storyeval merge`."""
    print(f"shard {shard} holds none of the stories: nothing to rate")
    if args.out is not None and not args.dry_run:
        from storyeval._atomic import OutputFolder

        with OutputFolder(Path(args.out), overwrite=args.overwrite, command="rate") as folder:
            folder.file("ratings.csv").write_bytes(b"")
            _write_shard_json(folder, shard_info)
            folder.file("settings.json").write_text(json.dumps(
                {"shard": str(shard), "sent": 0, "answered": 0, "request_failures": 0,
                 "cache": str(args.cache)}, indent=2) + "\n", encoding="utf-8")
    return 0


def _print_failed(failed, out: Path | None, shown: int = 5) -> None:
    """The first failed requests on standard error, each naming its item and reason."""
    for row in failed.head(shown).to_dict("records"):
        print(f"storyeval rate: failed: story {row['story_id']!s}, Eval-Prompt "
              f"{row['eval_prompt']}, {row['criterion']}, try {row['try']}: {row['error']}",
              file=sys.stderr)
    if len(failed) > shown:
        where = f" (all in {out / 'failed_requests.csv'})" if out is not None else ""
        print(f"storyeval rate: ... and {len(failed) - shown} more failed requests{where}",
              file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Run ``storyeval rate``."""
    import warnings

    from storyeval.exceptions import InputError, StoryevalWarning
    from storyeval.llm import outputs
    from storyeval.llm.backends import BackendError
    from storyeval.llm.runner import plan, rate

    if args.tries < 1:
        raise InputError(f"--tries must be >= 1, got {args.tries}")
    if args.dry_run and args.cache_only:
        raise InputError("--dry-run and --cache-only cannot be combined")
    if not args.dry_run:
        from storyeval.cli.common import check_out_args

        check_out_args(args)  # an earlier run's folder is refused before anything is sent
    if args.price is not None:  # a bad price table is refused before anything is sent
        from storyeval.llm.cost import parse_prices

        parse_prices(args.price)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("storyeval rate: %(message)s"))
    log = logging.getLogger("storyeval.llm")
    log.addHandler(handler)
    log.setLevel(logging.INFO if args.verbose else logging.WARNING)
    try:
        shard = shard_from_args(args)
        sampling = sampling_from_args(args)
        backend = backend_from_args(args)
        stories = _stories(args)
        shard_info = None
        if shard is not None:
            from storyeval.data.shards import make_shard_info, shard_rows

            ids = stories["story_id"].astype(str).tolist()
            shard_info = make_shard_info(
                Path(args.out or ".") / "shard.json", command="rate", shard=shard,
                settings=shard_settings(args, SHARD_SETTINGS), all_ids=ids, inputs=stories,
                extra={"format": "folder", "files": [{"role": "ratings", "name": "ratings.csv",
                                                      "format": "csv", "unit": "story_id"}]})
            stories = stories.iloc[shard_rows(ids, shard)].reset_index(drop=True)
            if len(stories) == 0:
                return _empty_shard(args, shard, shard_info)
        common = {"model_name": args.model_name, "eval_prompts": args.eval_prompts,
                      "criteria": args.criteria, "tries": args.tries, "sampling": sampling,
                      "templates": args.templates, "guidelines": args.guidelines,
                      "criteria_file": args.criteria_file}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", StoryevalWarning)
            if args.dry_run:
                the_plan = plan(stories, backend, cache=args.cache, **common)
            else:
                try:
                    result = rate(stories, backend, cache=args.cache, cache_only=args.cache_only,
                                  parser=args.parser,
                                  show_progress=False if args.no_progress else None, **common)
                except BackendError as exc:
                    print(f"storyeval rate: error: {exc}", file=sys.stderr)
                    print("storyeval rate: answers received so far are in the cache; rerun to "
                          "resume", file=sys.stderr)
                    return 1
        for w in caught:
            print(f"storyeval rate: warning: {w.message}", file=sys.stderr)
        if args.dry_run:
            if args.json:
                print(json.dumps(the_plan.to_dict(), indent=2))
            else:
                print(the_plan.summary())
                estimate = dry_run_cost(the_plan, args, the_plan.model)
                if estimate:
                    print(estimate)
            return 0

        ratings = result.ratings
        fails = outputs.failure_rates(ratings)
        cost = cost_of_run(ratings, args, unit=["story_id"], by="model")
        summary = {
            "plan": result.plan.to_dict(), "sent": result.n_sent, "answered": result.n_answered,
            "request_failures": result.n_request_failures, "settings": result.settings,
            "statuses": {k: int(v) for k, v in ratings["status"].value_counts().items()},
            "parser": args.parser, "on_unparsed": args.on_unparsed, "cache": str(args.cache),
            "cost": cost.to_dict("records"), "prices": prices_record(args),
        }
        if shard is not None:
            summary["shard"] = str(shard)
        written: list[str] = []
        if args.out is not None:
            written = _write_outputs(Path(args.out), args, ratings, fails, summary, shard_info)
            summary["out"] = str(args.out)
        if args.json:
            print(json.dumps(summary, indent=2, default=str))
        else:
            pl = result.plan
            sent = f"written to {args.batch_out}" if args.batch_out else "sent"
            print(f"{pl.model}: {pl.n_requests} requests, {pl.n_cached} from the cache, "
                  f"{result.n_sent} {sent}, {result.n_answered} answered, "
                  f"{result.n_request_failures} failed")
            show = fails[["model", "eval_prompt", "criterion", "n", "n_ok", "failure_rate"]]
            print("failures per model x Eval-Prompt x criterion:")
            print(show.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
            from storyeval.llm.cost import cost_lines
            from storyeval.report.present import wrap_text

            print(wrap_text("\n".join(cost_lines(cost, item="story")), prefix="  "))
            if args.out is not None:
                print(f"wrote {', '.join(written)} to {args.out}")
        _print_failed(outputs.failed_requests(ratings), args.out)
        return 1 if result.n_request_failures else 0
    finally:
        log.removeHandler(handler)


def _typed_ratings(raw):
    """The ratings table as `storyeval.llm.rate` returns it, from the text of ratings.csv."""
    import io

    import pandas as pd

    text = raw.to_csv(index=False, lineterminator="\n")
    strings = ("story_id", "system", "model", "criterion", "code", "status", "explanation",
               "error", "key", "parser", "usage_note")
    return pd.read_csv(io.StringIO(text), dtype={c: str for c in strings if c in raw.columns})


def write_merged(out: Path, tables: dict, infos: list, *, overwrite: bool) -> None:
    """`storyeval merge` of `rate` shards: the merged ratings (in the order of one run) and
    every table computed from them, written as one run writes its folder; settings.json names
    the shards merged."""
    from storyeval.llm import outputs

    settings = infos[0].settings
    args = argparse.Namespace(on_unparsed=settings["on_unparsed"], tries=settings["tries"],
                              paired=settings["paired"], overwrite=overwrite, price=None,
                              prices=None)
    ratings = _typed_ratings(tables["ratings"][0])
    shards = []
    for info in infos:
        folder = Path(info.path).parent
        run = json.loads((folder / "settings.json").read_text(encoding="utf-8")) \
            if (folder / "settings.json").is_file() else {}
        shards.append({"shard": str(info.shard), "folder": str(folder),
                       **{k: run.get(k) for k in ("sent", "answered", "request_failures",
                                                   "cache")}})
    first = json.loads((Path(infos[0].path).parent / "settings.json").read_text(
        encoding="utf-8")) if (Path(infos[0].path).parent / "settings.json").is_file() else {}
    args.prices = prices_from_record(first.get("prices"))  # as the shards were priced
    summary = {"merged_shards": shards, "settings": first.get("settings"),
               "prices": first.get("prices"),
               "statuses": {k: int(v) for k, v in ratings["status"].value_counts().items()},
               "parser": settings["parser"], "on_unparsed": settings["on_unparsed"]}
    _write_outputs(out, args, ratings, outputs.failure_rates(ratings), summary)
