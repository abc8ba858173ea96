"""Command-line options shared by the sub-commands that send requests to an LLM
(``storyeval rate`` and ``storyeval pairwise judge``): backend, sampling and transport."""

from __future__ import annotations

import argparse


def add_backend_model_options(group: argparse._ArgumentGroup) -> None:
    """``--backend`` and ``--model``."""
    group.add_argument("--backend", choices=("openai", "hf", "vllm"), default="openai",
                       help="openai: any OpenAI-compatible chat server (default); hf: local "
                            "transformers (a model folder, or a .gguf file); vllm: vLLM "
                            "offline engine")
    group.add_argument("--model", required=True,
                       help="served model name (openai) or model folder/name (hf, vllm), or a "
                            ".gguf file (hf; needs the gguf package: storyeval[llm-hf])")


def add_sampling_and_transport_options(parser: argparse.ArgumentParser, *,
                                       max_tokens: int, max_tokens_note: str = "") -> None:
    """The sampling group (recorded and part of the cache key), the OpenAI transport group and
    the local-backend group."""
    s = parser.add_argument_group("sampling (recorded and part of the cache key)")
    s.add_argument("--temperature", type=float, default=0.7, help="(default: 0.7)")
    s.add_argument("--top-p", type=float, default=1.0, help="(default: 1.0)")
    s.add_argument("--max-tokens", type=int, default=max_tokens,
                   help=f"(default: {max_tokens}{max_tokens_note})")
    s.add_argument("--seed", type=int, default=0,
                   help="base seed; try t uses seed + t (default: 0)")
    s.add_argument("--no-seed", action="store_true", help="send no seed")
    o = parser.add_argument_group("openai backend")
    o.add_argument("--base-url", action="append", metavar="URL",
                   help="server root (default: http://localhost:8000/v1); repeat it for several "
                        "servers of the same model: requests are spread over them and a failed "
                        "request is retried on the next one (one cache)")
    key = o.add_mutually_exclusive_group()
    key.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                     help="NAME of the environment variable holding the API key (default: "
                          "OPENAI_API_KEY; never the key itself). Unset or empty: an error, "
                          "except for a server on this machine (localhost), which then gets no "
                          "key and a warning")
    key.add_argument("--no-api-key", action="store_true",
                     help="the server needs no key: send no Authorization header")
    o.add_argument("--concurrency", type=int, action="append", metavar="N",
                   help="requests in flight per server (default: 16; raise to keep a large "
                        "server busy); once for all servers, or once per --base-url, in order")
    o.add_argument("--timeout", type=float, default=120.0,
                   help="seconds per request (default: 120)")
    o.add_argument("--max-retries", type=int, default=6, help="(default: 6)")
    o.add_argument("--no-keep-alive", action="store_true",
                   help="one connection per request for every server (by default a server "
                        "that echoes the request nonce, as vLLM does, keeps its connections; "
                        "slower)")
    o.add_argument("--no-model-check", action="store_true",
                   help="accept answers whose 'model' field names another model (default: "
                        "refused unless it equals or starts with --model)")
    o.add_argument("--ca-bundle", metavar="PATH",
                   help="CA certificates (PEM file, or a folder prepared with `openssl rehash`) "
                        "to verify https servers (default: SSL_CERT_FILE / SSL_CERT_DIR when set, "
                        "else certifi's bundle)")
    b = o.add_mutually_exclusive_group()
    b.add_argument("--batch-out", metavar="FILE",
                   help="send nothing: write the requests missing from the cache to FILE in the "
                        "OpenAI batch JSONL format (OpenAI Batch API, `vllm run-batch`)")
    b.add_argument("--batch-in", metavar="FILE",
                   help="send nothing: read the answers from FILE, a batch output in that format "
                        "(same cache keys as an online run)")
    h = parser.add_argument_group("hf / vllm backends")
    h.add_argument("--batch-size", type=int, default=8, help="hf batch size (default: 8)")
    h.add_argument("--device", help="hf device, e.g. cuda or cpu (default: cuda if available)")
    h.add_argument("--dtype", choices=("float16", "bfloat16", "float32"),
                   help="hf weights dtype")
    h.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm (default: 1)")


def sampling_from_args(args: argparse.Namespace):
    """The `SamplingParams` the options ask for."""
    from storyeval.llm.backends import SamplingParams

    return SamplingParams(temperature=args.temperature, top_p=args.top_p,
                          max_tokens=args.max_tokens, seed=None if args.no_seed else args.seed)


def backend_from_args(args: argparse.Namespace):
    """The backend the options ask for (the API key is read from ``--api-key-env`` later, at
    request time, and never stored)."""
    from storyeval.exceptions import InputError
    from storyeval.llm.backends import make_backend

    batch = args.batch_out or args.batch_in
    if batch and args.backend != "openai":
        raise InputError("--batch-out / --batch-in need --backend openai (the batch format is "
                         "the OpenAI API's)")
    if batch and (getattr(args, "cache_only", False) or getattr(args, "dry_run", False)):
        raise InputError("--batch-out / --batch-in cannot be combined with --cache-only or "
                         "--dry-run")
    if args.backend == "openai":
        return make_backend("openai", args.model,
                            base_url=args.base_url or ["http://localhost:8000/v1"],
                            api_key_env=None if getattr(args, "no_api_key", False)
                            else args.api_key_env, concurrency=args.concurrency or [16],
                            timeout=args.timeout, max_retries=args.max_retries,
                            ca_bundle=args.ca_bundle, batch_out=args.batch_out,
                            batch_in=args.batch_in,
                            keep_alive=not getattr(args, "no_keep_alive", False),
                            check_model=not getattr(args, "no_model_check", False))
    if args.backend == "hf" and args.model.lower().endswith(".gguf"):
        from storyeval.llm.gguf import GGUFBackend

        return GGUFBackend(args.model, batch_size=args.batch_size, device=args.device,
                           dtype=args.dtype)
    if args.backend == "hf":
        return make_backend("hf", args.model, batch_size=args.batch_size, device=args.device,
                            dtype=args.dtype)
    if args.tensor_parallel_size < 1:
        raise InputError("--tensor-parallel-size must be >= 1")
    return make_backend("vllm", args.model,
                        engine_kwargs={"tensor_parallel_size": args.tensor_parallel_size})


#: Options of `rate` and `pairwise judge` that shards merged together must share.
LLM_SHARD_SETTINGS = ("backend", "model", "temperature", "top_p", "max_tokens", "seed",
                      "no_seed", "dtype")
DEFAULT_CACHE = "storyeval-llm-cache.sqlite"


def add_shard_option(group, unit: str) -> None:
    """``--shard K/N`` of `rate` and `pairwise judge`."""
    group.add_argument("--shard", metavar="K/N",
                       help=f"only shard K of N (K = 1..N) of the {unit}, split by a stable "
                            "hash of their ids; the output records the shard for `storyeval "
                            "merge`; the default --cache becomes "
                            "storyeval-llm-cache.shard-K-of-N.sqlite")


def shard_from_args(args):
    """The parsed ``--shard`` (None without it); a shard's default cache is its own file."""
    from pathlib import Path

    from storyeval.data.shards import Shard

    if getattr(args, "shard", None) is None:
        return None
    shard = Shard.parse(args.shard)
    if str(args.cache) == DEFAULT_CACHE:
        args.cache = Path(f"storyeval-llm-cache.shard-{shard.index}-of-{shard.count}.sqlite")
    return shard


def shard_settings(args, names: tuple[str, ...]) -> dict:
    """The options of ``args`` that shards of one run must share."""
    return {k: getattr(args, k, None) for k in (*LLM_SHARD_SETTINGS, *names)}


def add_price_option(group) -> None:
    """``--price`` of `rate` and `pairwise judge`."""
    group.add_argument("--price", metavar="SPEC",
                       help="price per 1M tokens, 'prompt=0.5,completion=1.5[,currency=USD]', "
                            "or a JSON file (one such object, or one per judge / model label "
                            "with '*' for the others): the summary and the cost file then give "
                            "the cost per item, per judge and per 1,000 judgments")


def cost_of_run(frame, args, *, unit: list[str], by: str):
    """The run's cost table (`storyeval.llm.cost.cost_table`) with the ``--price`` given."""
    from storyeval.llm.cost import cost_table, parse_prices

    prices = getattr(args, "prices", None)  # already parsed (a merge of shards)
    spec = getattr(args, "price", None)
    if prices is None and spec is not None:
        prices = parse_prices(spec)
    return cost_table(frame, unit=unit, by=by, prices=prices)


def prices_record(args):
    """The ``--price`` table as JSON-ready data for settings.json (None without one), so that
    `storyeval merge` prices the merged run as the shards were."""
    from dataclasses import asdict

    from storyeval.llm.cost import Prices, parse_prices

    if getattr(args, "price", None) is None:
        return None
    table = parse_prices(args.price)
    if isinstance(table, Prices):
        return asdict(table)
    return {k: asdict(v) for k, v in table.items()}


def prices_from_record(record):
    """The inverse of `prices_record`."""
    from storyeval.llm.cost import Prices

    if not record:
        return None
    if "prompt" in record:
        return Prices(**record)
    return {k: Prices(**v) for k, v in record.items()}


def for_file(frame):
    """``frame`` without the columns of wall time (`storyeval.llm.cost.FILE_USAGE_COLUMNS`:
    a file of the same answers is the same bytes whichever run wrote it)."""
    from storyeval.llm.cost import WALL_COLUMNS

    return frame.drop(columns=[c for c in ("wall_s", *WALL_COLUMNS) if c in frame.columns])


def dry_run_cost(plan, args, label: str) -> str | None:
    """With ``--price``: the most a dry run's requests can cost (the estimated prompt tokens at
    the prompt price plus ``max_tokens`` per request at the completion price)."""
    from storyeval.llm.cost import parse_prices, prices_for

    if getattr(args, "price", None) is None:
        return None
    p = prices_for(parse_prices(args.price), label)
    top = (plan.est_prompt_tokens * p.prompt + plan.max_completion_tokens * p.completion) / 1e6
    return (f"Estimated cost at {p.prompt:g} / {p.completion:g} {p.currency} per 1M prompt / "
            f"completion tokens: at most {top:.4g} {p.currency} (estimated prompt tokens, and "
            "every answer as long as max_tokens).")
