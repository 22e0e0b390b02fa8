"""Command line: `graphrag-ray init | prompt-tune | index | update | query | eval | versions`
and the rest `--help` lists (also `python -m graphrag_ray`)."""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import yaml

from graphrag_ray import stopping
from graphrag_ray.config import GraphRagConfig, load_config
from graphrag_ray.distributed.engine import ray_initialized
from graphrag_ray.errors import GraphRagError, environment_error
from graphrag_ray.query.methods import QUERY_METHODS
from graphrag_ray.tune.sample import SAMPLINGS

if TYPE_CHECKING:
    from graphrag_ray.storage import Manifest


def _eprint(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_init(args: argparse.Namespace) -> int:
    from graphrag_ray.prompts_loader import BUILTIN_PROMPTS_DIR, PROMPT_NAMES

    root = Path(args.dir)
    settings = root / "settings.yaml"
    if settings.exists() and not args.force:
        raise GraphRagError(f"{settings} exists; pass --force to overwrite it")
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    for name in PROMPT_NAMES:
        target = root / "prompts" / f"{name}.txt"
        if args.force or not target.exists():
            shutil.copyfile(BUILTIN_PROMPTS_DIR / f"{name}.txt", target)
    settings.write_text(starter_settings(), encoding="utf-8")
    print(f"wrote {settings} and {root / 'prompts'}/ (edit entity types and examples there)")
    print(f"next: graphrag-ray index --config {settings} --input INPUT_DIR --output INDEX_DIR")
    return 0


def starter_settings() -> str:
    """Every key with its default (from the config model); the API key stays in the
    environment."""
    data = GraphRagConfig().public_dict()
    data["prompts"]["dir"] = "prompts"
    header = (
        "# graphrag-ray settings. Every key shows its default; delete what you do not change.\n"
        "# ${NAME} and ${NAME:-default} read environment variables.\n"
        "# extraction.method: nlp (offline, no LLM) or llm (any OpenAI-compatible endpoint:\n"
        "#   set llm.api_base and llm.model; the API key is read from GRAPHRAG_API_KEY or\n"
        "#   OPENAI_API_KEY, or give llm.api_key: ${SOME_VARIABLE}).\n"
        "# summarize/reports/global_search.method: auto follows extraction (llm or extractive).\n\n"
    )
    return header + yaml.safe_dump(data, sort_keys=False, width=100)


def _build_overrides(args: argparse.Namespace) -> list[str]:
    """--set, with --no-cache and --keep as the settings they stand for."""
    return args.set + (["cache.enabled=false"] if args.no_cache else []) + (
        [f"output.keep_versions={args.keep}"] if args.keep else [])


def cmd_index(args: argparse.Namespace) -> int:
    from graphrag_ray.index.build import build_index

    overrides = _build_overrides(args)
    config = load_config(args.config, overrides)
    if args.dry_run:
        from graphrag_ray.index.estimate import estimate_index, format_estimate, previous_rates

        estimate = estimate_index(args.input, config, previous_rates(args.output, config))
        print(json.dumps(estimate, indent=2) if args.json else format_estimate(estimate))
        return 0
    started = time.perf_counter()
    manifest = build_index(args.input, args.output, config, progress=_eprint, progress_bars=True)
    _print_build(manifest, args.output, time.perf_counter() - started)
    return 0


def cmd_update(args: argparse.Namespace) -> int:
    from graphrag_ray.config import config_from_manifest
    from graphrag_ray.index.update import format_update_estimate, update_index
    from graphrag_ray.storage import IndexStore, Manifest

    overrides = _build_overrides(args)
    # Without --config, the settings the index was built with.
    config = load_config(args.config, overrides) if args.config else \
        config_from_manifest(IndexStore(args.index).read_manifest(), overrides)
    started = time.perf_counter()
    result = update_index(args.index, args.input, config, progress=_eprint,
                          progress_bars=not args.dry_run, dry_run=args.dry_run)
    if args.dry_run and not result.get("no_change"):
        print(json.dumps(result, indent=2) if args.json else format_update_estimate(result))
    elif not isinstance(result, Manifest):
        print(f"no change: version {result['version']} is up to date with {args.input}")
    else:
        _print_build(result, args.index, time.perf_counter() - started)
        update = result.update
        print("update: documents " + ", ".join(f"{n} {k}" for k, n in
                                                update["documents"].items())
              + f"; chunks {update['chunks']['reused']} reused, "
              f"{update['chunks']['extracted']} extracted")
        changes = update["communities"]
        print("communities kept/changed/new/gone per level: " + ", ".join(
            f"{level}: {c['kept']}/{c['changed']}/{c['new']}/{c['gone']}"
            for level, c in changes["per_level"].items())
            + f"; level-0 adjusted Rand index {changes['level0_adjusted_rand_index']}")
    return 0


def kept_out_line(manifest: Manifest) -> str:
    """What no extraction read, said in the build's summary (it was only in the manifest)."""
    extraction, repeated = manifest.extraction, manifest.repeated_passages or {}
    line = ""
    if extraction.kept_out_tokens:
        line = (f"kept out of extraction: {extraction.kept_out_tokens:,} tokens "
                f"({extraction.kept_out_share:.1%}): boilerplate "
                f"{extraction.boilerplate_chunks} text units"
                + (f", of them {repeated['boilerplate_passages']} passages repeated in "
                   f"{repeated['occurrences'] - repeated.get('content_occurrences', 0)} places"
                   if repeated.get("boilerplate_passages") else ""))
    if repeated.get("content_passages"):
        line += ("; " if line else "") + (
            f"repeated text extracted once: {repeated['content_passages']} passages, "
            f"{repeated['content_tokens_extracted_once']:,} tokens not extracted again")
    return line


def _print_build(manifest: Manifest, output: str, seconds: float) -> None:
    from graphrag_ray.llm.accounting import format_usage_table

    extraction = manifest.extraction
    print(f"index version {manifest.version} published at {output} in {seconds:.1f}s")
    files = manifest.input_files
    print(f"input: {files['read']} file{'s' if files['read'] != 1 else ''} read" + (
        f", {files['skipped']} skipped (see skipped_inputs in the manifest)"
        if files["skipped"] else ""))
    print("tables: " + ", ".join(f"{k}={v}" for k, v in manifest.tables.items()))
    print("communities per level: " + ", ".join(
        f"{k}: {v}" for k, v in manifest.communities_per_level.items()))
    reasons = extraction.malformed_by_reason
    print(f"extraction: {extraction.chunks} chunks, {extraction.failed_chunks} failed, "
          f"{extraction.malformed_records} malformed records" + (
              " (" + "; ".join(f"{n} {reason}" for reason, n in sorted(
                  reasons.items(), key=lambda item: -item[1])) + ")" if reasons else ""))
    kept_out = kept_out_line(manifest)
    if kept_out:
        print(kept_out)
    embeddings = manifest.embeddings
    if embeddings.method:
        print(f"embeddings: {embeddings.method} ({embeddings.model})"
              + (f"; {embeddings.note}" if embeddings.note else ""))
    usage = manifest.llm_usage
    if usage.total.calls or usage.total.cache_hits or usage.total.failed_calls:
        print(f"LLM usage ({usage.model}):")
        print(format_usage_table({name: figures.model_dump() for name, figures in
                                  {**usage.stages, "total": usage.total}.items()}))
    earlier = usage.earlier_runs
    if earlier:
        paid = [cost for cost in (usage.total.cost_usd, earlier["total"]["cost_usd"])
                if cost is not None]
        print(f"earlier runs of this index that published nothing ({len(earlier['runs'])}): "
              f"{earlier['total']['calls']} calls, {earlier['total']['prompt_tokens']:,} prompt "
              f"and {earlier['total']['completion_tokens']:,} completion tokens"
              + (f"; paid for this version in all: ${sum(paid):.4f}" if len(paid) == 2
                 else ""))
    if manifest.tables.get("entities") == 0:
        method = (manifest.config.get("extraction") or {}).get("method")
        _eprint("warning: no entities were extracted, so there is nothing to query" + (
            "; the offline extractor (extraction.method=nlp) finds capitalised names only"
            if method == "nlp" else f" (extraction.method={method})"))
    if extraction.failed_chunks:
        print(f"warning: {extraction.failed_chunks} chunks failed; their reasons are in "
              "text_units.extraction_error", file=sys.stderr)


def cmd_adopt(args: argparse.Namespace) -> int:
    from graphrag_ray.index.adopt.stage import (
        adopt_index, format_adoption_plan, plan_adoption, settings_lines)

    if args.dry_run:
        plan = plan_adoption(args.source, args.set, args.input)
        print(json.dumps(plan, indent=2) if args.json else format_adoption_plan(plan))
        return 0
    manifest = adopt_index(args.source, args.output, args.set, progress=_eprint,
                           input_folder=args.input)
    adopted = manifest.adopted_from
    print(f"index version {manifest.version} published at {args.output}: adopted "
          f"{adopted['tool']} {adopted['format']} output from {adopted['output']}")
    print("tables: " + ", ".join(f"{k}={v}" for k, v in manifest.tables.items()))
    print("communities per level: " + ", ".join(
        f"{k}: {v}" for k, v in manifest.communities_per_level.items()))
    print(f"vectors: {manifest.embeddings.method} ({manifest.embeddings.model}, "
          f"{manifest.embeddings.dimensions} dimensions)")
    for line in settings_lines(adopted["mapped"], adopted["not_mapped"]):
        print(line)
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from graphrag_ray.api import GraphIndex
    from graphrag_ray.config import config_from_manifest
    from graphrag_ray.storage import IndexStore

    store = IndexStore(args.index).open(args.version)
    manifest = store.read_manifest()
    config = (load_config(args.config, args.set) if args.config
              else config_from_manifest(manifest, args.set))
    index = GraphIndex(store, manifest, config)
    options: dict = {"history": _read_history(args.history)}
    method = QUERY_METHODS[args.method]
    for name in _method_options():
        value = getattr(args, name)
        if method.takes(name):
            options[name] = value
        elif value is not None:
            takers = [m.name for m in QUERY_METHODS.values() if m.takes(name)]
            raise GraphRagError(f"--{name} applies to --method {' or '.join(takers)} only")
    streaming = args.stream and not args.json
    if streaming:
        options["on_token"] = lambda piece: print(piece, end="", flush=True)
    try:
        result = index.search(args.method, args.question, **options)
    finally:
        index.close()
    for note in result.notes:
        _eprint(f"note: {note}")
    if not result.answer.strip():
        # An empty answer is no answer: a script must not take it for one.
        _eprint(f"error: --method {args.method} got no usable reply"
                + (": " + "; ".join(f[:300] for f in result.failures[:3])
                   if result.failures else ""))
        return 1
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, default=str))
        return 0
    print("" if streaming else result.answer)
    print()
    print(format_sources(result))
    for failure in result.failures:
        _eprint(f"warning: {failure[:1000]}")
    return 0


def _method_options() -> dict[str, tuple]:
    """Each query method's own option (`QueryMethod.options`) once, with the methods that
    take it."""
    found: dict[str, tuple] = {}
    for method in QUERY_METHODS.values():
        for option in method.options:
            found.setdefault(option.name, (option, []))[1].append(method.name)
    return found


def _read_history(path: str | None) -> list[dict] | None:
    if not path:
        return None
    try:
        history = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GraphRagError(f"--history {path}: {exc}") from None
    if not isinstance(history, list) or not all(isinstance(t, dict) and "content" in t
                                                for t in history):
        raise GraphRagError(f"--history {path} must hold a JSON list of "
                            '{"role": ..., "content": ...} turns')
    return history


def format_sources(result) -> str:
    """The provenance under an answer: what was cited, and the documents it comes from."""
    sources = result.sources
    details = result.details
    lines = ["Sources:"]
    if sources.reports:
        lines.append(f"  reports (communities): {_some(sources.reports)}")
    for label, ids in (("entities", sources.entities), ("relationships", sources.relationships),
                       ("claims", sources.claims), ("text units", sources.text_units)):
        if ids:
            lines.append(f"  {label}: {len(ids)}")
    if sources.documents:
        lines.append("  documents: " + _some([d["title"] or d["id"] for d in sources.documents]))
    if len(lines) == 1:
        lines.append("  none")
    figures = [f"method {result.method}"]
    if "level" in details:
        figures.append(f"level {details['level']}")
    if "dynamic" in details:
        dynamic = details["dynamic"]
        figures.append(f"dynamic selection: {dynamic['reports_selected']} of "
                       f"{dynamic['reports_total']} reports, {dynamic['rating_calls']} ratings, "
                       f"{dynamic['saved_tokens']} tokens saved vs level "
                       f"{dynamic['deepest_level']}")
    if "relevance_tests" in details:
        figures.append(f"{details['relevance_tests']} of {details['budget']} relevance tests, "
                       f"{details['relevant_passages']} passages relevant")
    usage = result.usage
    # What the provider received: every request, retried and failed ones included.
    requests = usage.calls + usage.retries + usage.failed_calls
    figures.append(f"{requests} LLM request{'s' if requests != 1 else ''}" + (
        f" ({usage.retries + usage.failed_calls} of them retries or failures)"
        if usage.retries or usage.failed_calls else "")
        + (f", {usage.cache_hits} answered from the cache" if usage.cache_hits else ""))
    figures.append(f"{result.context_tokens} context tokens")
    lines.append("[" + "; ".join(figures) + "]")
    return "\n".join(lines)


def _some(values: list, limit: int = 10) -> str:
    shown = ", ".join(map(str, values[:limit]))
    return shown + (f" (+{len(values) - limit} more)" if len(values) > limit else "")


def cmd_eval(args: argparse.Namespace) -> int:
    from graphrag_ray.config import config_from_manifest
    from graphrag_ray.eval import commands
    from graphrag_ray.storage import IndexStore

    if args.eval_command == "retrieval":
        return _eval_retrieval(args)
    if args.eval_command == "answer" and not args.config:
        # Like `query`: the index's own configuration, plus --set.
        config = config_from_manifest(IndexStore(args.index).open().read_manifest(), args.set)
    else:
        config = load_config(args.config, args.set)
    if args.eval_command == "questions":
        questions = commands.questions_step(config, Path(args.out), args.description,
                                            Path(args.from_csv) if args.from_csv else None,
                                            _eprint)
        print(f"wrote {len(questions)} questions to {args.out}")
        return 0
    out = Path(args.dir)
    if args.eval_command == "answer" and args.dry_run:
        from graphrag_ray.api import GraphIndex
        from graphrag_ray.eval.estimate import estimate_answers, format_estimates
        from graphrag_ray.eval.questions import read_questions

        questions = [q.question_text for q in read_questions(Path(args.questions))]
        index = GraphIndex.open(args.index, config=config)
        print(format_estimates(estimate_answers(index, questions, config.eval.conditions),
                               len(questions)))
        return 0
    if args.eval_command == "answer":
        count = commands.answer_step(args.index, Path(args.questions), out, config, _eprint)
        print(f"answered {count} (question, condition) pairs into {out / commands.ANSWERS}")
    elif args.eval_command == "judge":
        count = commands.judge_step(out, config, _eprint)
        print(f"made {count} judgements into {out / commands.JUDGMENTS}")
    elif args.eval_command == "claims":
        count = commands.claims_step(out, config, _eprint)
        print(f"measured claims of {count} answers into {out / commands.CLAIMS}")
    if args.eval_command in ("judge", "claims", "report"):
        for path in commands.report_step(out, config):
            print(f"wrote {path}")
    return 0


def _eval_retrieval(args: argparse.Namespace) -> int:
    from graphrag_ray.api import GraphIndex
    from graphrag_ray.config import config_from_manifest
    from graphrag_ray.eval.benchmarks import read_questions
    from graphrag_ray.eval.retrieval import evaluate, format_table
    from graphrag_ray.query.methods import QUERY_METHODS
    from graphrag_ray.storage import IndexStore

    config = load_config(args.config, args.set) if args.config else config_from_manifest(
        IndexStore(args.index).open().read_manifest(), args.set)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in QUERY_METHODS]
    if unknown:
        raise GraphRagError(f"unknown method(s) {', '.join(unknown)}: choose among "
                            f"{', '.join(QUERY_METHODS)}")
    questions = read_questions(args.questions)[:args.limit]
    index = GraphIndex.open(args.index, config=config)
    baselines = [b.strip() for b in args.baselines.split(",") if b.strip() not in ("", "none")]
    if set(baselines) - {"bm25", "dense"}:
        raise GraphRagError(f"--baselines takes bm25, dense or none, not {args.baselines}")
    result = evaluate(index, questions, methods, baselines=baselines,
                      answers=bool(config.llm.api_base), progress=_eprint)
    print(format_table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def cmd_prompt_tune(args: argparse.Namespace) -> int:
    from graphrag_ray.tune.run import TuneRequest, prompt_tune

    config = load_config(args.config, args.set)
    tuning = prompt_tune(config, TuneRequest(
        args.input, args.output, args.config, tuple(args.set), args.sample, args.chunks,
        args.domain, args.language, args.seed))
    how = f"asked of {config.llm.model}" if tuning.method == "llm" else "offline"
    print(f"tuned ({how}) from {args.sample} chunks: language {tuning.language}; "
          f"domain: {tuning.domain}")
    print(f"entity types: {', '.join(tuning.entity_types)}; "
          f"{len(tuning.examples)} worked example(s) from the corpus")
    for note in tuning.notes:
        print(f"note: {note}")
    folder = Path(args.output)
    print(f"wrote {folder / 'settings.yaml'}, {folder / 'prompts'}/ and "
          f"{folder / 'tuning.json'}")
    print(f"next: graphrag-ray index --config {folder / 'settings.yaml'} --input {args.input} "
          "--output INDEX_DIR")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from graphrag_ray.llm.doctor import diagnose

    config = load_config(args.config, args.set)
    checks = diagnose(config)
    for check in checks:
        print(check.line())
    failed = sum(check.status == "fail" for check in checks)
    warned = sum(check.status == "warn" for check in checks)
    print(f"{len(checks)} checks: {failed} failed, {warned} to look at")
    return 1 if failed else 0


def cmd_versions(args: argparse.Namespace) -> int:
    from graphrag_ray.storage import IndexStore

    store = IndexStore(args.index)
    if args.prune:
        for version in store.prune(args.prune):
            print(f"pruned {version}")
    current = store.published_version()
    for version in store.versions():
        manifest = store.read_manifest(version)
        marker = "*" if version == current else " "
        print(f"{marker} {version}  {manifest.created_at}  "
              + ", ".join(f"{k}={v}" for k, v in manifest.tables.items()))
    for version, state in store.unfinished():
        print(f"  {version}  unfinished: " + (
            "a build is writing it" if state == "running" else
            "its build was killed (the next build or `versions --prune` removes it)"))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from graphrag_ray.explore.export import export_graph, neo4j_import_command
    from graphrag_ray.storage import IndexStore

    written = export_graph(IndexStore(args.index).open(args.version), args.format, args.out,
                           args.level, args.community)
    print(f"{args.format}: {written['nodes']} nodes, {written['edges']} edges of "
          f"{written['part']} -> " + ", ".join(written["files"]))
    if args.format == "neo4j":
        print(f"import (Neo4j stopped, from {args.out}): {neo4j_import_command()}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from graphrag_ray.explore.stats import format_facts, index_facts, write_plots
    from graphrag_ray.storage import IndexStore

    version = IndexStore(args.index).open(args.version)
    print(format_facts(index_facts(version)))
    for path in write_plots(version, args.out):
        print(f"wrote {path}")
    return 0


def cmd_explore(args: argparse.Namespace) -> int:
    from graphrag_ray.explore.site import build_site
    from graphrag_ray.storage import IndexStore

    built = build_site(IndexStore(args.index).open(args.version), args.out)
    index_html = Path(args.out).resolve() / "index.html"
    print(f"explorer for {built['communities']} communities and {built['entities']} entities "
          f"in {args.out} ({built['community_files']} community files): open {index_html.as_uri()}")
    if args.serve:
        import functools
        import http.server

        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=args.out)
        with http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler) as server:
            print(f"serving on http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)")
            server.serve_forever()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from graphrag_ray.serve.runner import serve_blocking, serve_settings

    low = high = None
    if args.autoscale:
        low, _, high = args.autoscale.partition(":")
        if not (low.isdigit() and high.isdigit()) or int(low) > int(high) or int(high) < 1:
            raise GraphRagError(f"--autoscale takes MIN:MAX replicas (e.g. 1:4), got "
                                f"{args.autoscale!r}")
        low, high = int(low), int(high)
    settings = serve_settings(args.config, args.set, host=args.host, port=args.port,
                              replicas=args.replicas, min_replicas=low, max_replicas=high)
    if args.replicas is not None:  # fixed replicas, whatever the file's autoscaling says
        settings = settings.model_copy(update={"min_replicas": None, "max_replicas": None})
    spec = _serve_spec(args, settings)

    def announce(host: str, port: int, version: str | None, has_keys: bool) -> None:
        shown = f"[{host}]" if ":" in host else host
        print(f"serving {args.index}" + (f" (version {version})" if version else "")
              + f" on http://{shown}:{port}/v1 (OpenAI-compatible; models: graphrag-<method>), "
              f"explorer at /explore/; API keys {'required' if has_keys else 'off'}; "
              "Ctrl-C stops", flush=True)

    serve_blocking(spec, args.engine, announce)
    return 0


def _serve_spec(args: argparse.Namespace, settings):
    """What `serve` and `mcp` answer from: the index, its settings (the `serve.*` overrides
    are the service's, the others the index's) and the pinned version."""
    from graphrag_ray.serve.runner import ServeSpec

    return ServeSpec(index_url=args.index, config_path=args.config,
                     overrides=tuple(o for o in args.set if not o.startswith("serve.")),
                     version=args.version, settings=settings)


def cmd_mcp(args: argparse.Namespace) -> int:
    from graphrag_ray.serve.mcp_server import run_mcp
    from graphrag_ray.serve.runner import serve_settings

    spec = _serve_spec(args, serve_settings(args.config, args.set, host=args.host,
                                            port=args.port))
    # On stdio the protocol owns standard output: what the command says goes to stderr.
    out = sys.stderr if args.transport == "stdio" else sys.stdout
    run_mcp(spec, args.transport, lambda line: print(line, file=out, flush=True))
    return 0


def stored_index(command: argparse.ArgumentParser) -> None:
    """The options of a command that reads a stored index."""
    command.add_argument("--index", required=True, help="folder or fsspec URL of an index")
    command.add_argument("--version", help="an older published version (default: current)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphrag-ray",
                                     description="GraphRAG indexing and querying on Ray")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_init, _add_index, _add_update, _add_adopt, _add_query, _add_eval,
                _add_prompt_tune, _add_doctor, _add_versions, _add_export, _add_stats,
                _add_explore, _add_serve, _add_mcp):
        add(sub)  # (a command: one function below, one entry here)
    return parser


def config_options(p: argparse.ArgumentParser) -> None:
    """--config and --set, for a command that reads settings."""
    p.add_argument("--config", help="settings.yaml (defaults apply without it)")
    p.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a config key, e.g. --set chunks.size=1200 (repeatable)")


def _add_init(sub) -> None:
    init = sub.add_parser("init", help="write a starter settings.yaml and editable prompts")
    init.add_argument("dir")
    init.add_argument("--force", action="store_true", help="overwrite existing files")
    init.set_defaults(func=cmd_init)


def _add_index(sub) -> None:
    index = sub.add_parser("index", help="build a graph index from documents")
    index.add_argument("--input", required=True, help="folder, file or fsspec URL of documents")
    index.add_argument("--output", required=True, help="folder or fsspec URL for the index")
    index.add_argument("--no-cache", action="store_true",
                       help="bypass the LLM response cache (neither read nor written)")
    index.add_argument("--dry-run", action="store_true",
                       help="print expected LLM calls, tokens and cost per stage; call nothing")
    index.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    index.add_argument("--keep", type=int, metavar="N",
                       help="after publishing, keep only the newest N index versions")
    config_options(index)
    index.set_defaults(func=cmd_index)


def _add_update(sub) -> None:
    update = sub.add_parser("update", help="bring an index up to date with its corpus: "
                                           "add new documents, re-read changed ones, drop "
                                           "deleted ones, paying only for what is new")
    update.add_argument("--index", required=True, help="folder or fsspec URL of the index")
    update.add_argument("--input", required=True,
                        help="the corpus as it is now (folder, file or fsspec URL)")
    update.add_argument("--no-cache", action="store_true",
                        help="bypass the LLM response cache (neither read nor written)")
    update.add_argument("--dry-run", action="store_true",
                        help="print the documents added, changed and deleted and the calls "
                             "the new ones need; call nothing")
    update.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    update.add_argument("--keep", type=int, metavar="N",
                        help="after publishing, keep only the newest N index versions")
    update.add_argument("--config", help="settings.yaml (default: the index's own settings)")
    update.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                        help="override a config key (repeatable)")
    update.set_defaults(func=cmd_update)


def _add_adopt(sub) -> None:
    adopt = sub.add_parser("adopt", help="publish a Microsoft GraphRAG project's output as "
                                         "an index: query, stats, explore and export it")
    adopt.add_argument("--from", dest="source", required=True, metavar="PROJECT",
                       help="its project folder (settings.yaml, output/) or output folder")
    adopt.add_argument("--output", required=True, help="folder or fsspec URL for the index")
    adopt.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                       help="override a setting carried over (repeatable)")
    adopt.add_argument("--input", metavar="FOLDER",
                       help="the corpus it was built from (default: the project's input "
                            "folder), read so that `update` extracts only new text")
    adopt.add_argument("--dry-run", action="store_true",
                       help="print what it would read, embed (and what that costs) and "
                            "carry over; write and call nothing")
    adopt.add_argument("--json", action="store_true", help="with --dry-run: print JSON")
    adopt.set_defaults(func=cmd_adopt)


def _add_query(sub) -> None:
    query = sub.add_parser("query", help="answer a question from an index")
    query.add_argument("--index", required=True, help="folder or fsspec URL of an index")
    query.add_argument("--method", default="global", choices=list(QUERY_METHODS),
                       help="; ".join(f"{m.name}: {m.help}" for m in QUERY_METHODS.values()))
    for name, (option, takers) in _method_options().items():
        described = f"{' and '.join(takers)}: {option.help}"
        if option.kind is bool:  # None unless given, so that another method can refuse it
            query.add_argument(f"--{name}", action="store_const", const=True, default=None,
                               help=described)
        else:
            query.add_argument(f"--{name}", type=option.kind, default=None, help=described)
    query.add_argument("--stream", action="store_true", help="print the answer as it is written")
    query.add_argument("--history", metavar="FILE",
                       help='conversation so far: JSON list of {"role", "content"} turns')
    query.add_argument("--json", action="store_true", help="print the result as JSON")
    query.add_argument("--version", help="an older published index version (default: current)")
    config_options(query)
    query.add_argument("question")
    query.set_defaults(func=cmd_query)


def _add_eval(sub) -> None:
    evaluate = sub.add_parser("eval", help="the paper's evaluation: questions, answers under "
                                           "C0-C3/TS/SS, pairwise LLM judging, claim metrics")
    steps = evaluate.add_subparsers(dest="eval_command", required=True)
    questions = steps.add_parser("questions", help="generate users x tasks x questions, or "
                                                   "take an existing question CSV")
    questions.add_argument("--out", required=True, help="CSV to write")
    questions.add_argument("--description", help="a short description of the corpus")
    questions.add_argument("--from-csv", help="a CSV with a question_text (or question) column")
    answer = steps.add_parser("answer", help="answer every question under eval.conditions")
    answer.add_argument("--index", required=True, help="folder or fsspec URL of an index")
    answer.add_argument("--questions", required=True, help="question CSV")
    answer.add_argument("--dir", required=True, help="evaluation folder (resumable)")
    answer.add_argument("--dry-run", action="store_true",
                        help="print the most answering and judging would cost; call nothing")
    for name, text in (("judge", "judge every pair of conditions on eval.metrics"),
                       ("claims", "extract and count claims; cluster them for diversity"),
                       ("report", "write win-rate heatmaps, token and claim tables, summary")):
        step = steps.add_parser(name, help=text)
        step.add_argument("--dir", required=True, help="evaluation folder")
    retrieval = steps.add_parser("retrieval", help="recall@2/5/10 of multi-hop QA's "
                                 "supporting passages per query method, beside BM25 and "
                                 "dense baselines (HotpotQA, 2WikiMultiHopQA, MuSiQue)")
    retrieval.add_argument("--index", required=True, help="an index of the benchmark's "
                           "passages (a JSONL corpus indexed with input.id_column=id)")
    retrieval.add_argument("--questions", required=True, help="the benchmark's question file")
    retrieval.add_argument("--methods", default="basic,local,drift",
                           help="query methods, comma-separated (default: basic,local,drift)")
    retrieval.add_argument("--limit", type=int, help="the first N questions only")
    retrieval.add_argument("--baselines", default="bm25,dense",
                           help="baselines computed in the same run: bm25, dense (the local "
                           "model over the passages), comma-separated, or none")
    retrieval.add_argument("--json", help="write every question's figures to this file")
    for step in steps.choices.values():
        config_options(step)
    evaluate.set_defaults(func=cmd_eval)


def _add_prompt_tune(sub) -> None:
    tune = sub.add_parser("prompt-tune", help="fit the prompts to a corpus: its language, "
                          "domain, entity types and worked examples from its own text; writes "
                          "a settings.yaml and prompts/ to build with")
    tune.add_argument("--input", required=True, help="folder, file or fsspec URL of documents")
    tune.add_argument("--output", default="tuned", help="folder to write settings.yaml, "
                      "prompts/ and tuning.json into (default: tuned)")
    tune.add_argument("--sample", choices=SAMPLINGS, default="auto",
                      help="which chunks to read: auto (nearest the corpus's centroid by "
                      "embedding), random (seeded), top (the first)")
    tune.add_argument("--chunks", type=int, default=15, help="how many chunks to read")
    tune.add_argument("--seed", type=int, default=0, help="seed of the random sampling")
    tune.add_argument("--domain", help="the corpus's domain, in a few words (default: asked "
                      "of the LLM, or offline its commonest words)")
    tune.add_argument("--language", help="the language to write in, e.g. French (default: "
                      "detected from the sample)")
    config_options(tune)
    tune.set_defaults(func=cmd_prompt_tune)


def _add_doctor(sub) -> None:
    doctor = sub.add_parser("doctor", help="check the configured LLM and embeddings endpoints "
                            "in a few tiny calls: key, model, parameters, JSON, rate limits")
    config_options(doctor)
    doctor.set_defaults(func=cmd_doctor)


def _add_versions(sub) -> None:
    versions = sub.add_parser("versions", help="list an index's published versions (* = current)")
    versions.add_argument("--index", required=True, help="folder or fsspec URL of an index")
    versions.add_argument("--prune", type=int, metavar="N",
                          help="first delete all but the newest N versions and abandoned builds")
    versions.set_defaults(func=cmd_versions)


def _add_export(sub) -> None:
    export = sub.add_parser("export", help="write the graph for graph tools: GraphML, GEXF, "
                            "Neo4j's bulk-import CSVs, or plain CSV")
    stored_index(export)
    export.add_argument("--format", required=True, choices=["graphml", "gexf", "neo4j", "csv"])
    export.add_argument("--out", required=True, help="a file (graphml, gexf) or a folder "
                        "(neo4j, csv); any fsspec URL")
    part = export.add_mutually_exclusive_group()
    part.add_argument("--level", type=int, help="only the entities in this level's "
                      "communities, with their community at that level")
    part.add_argument("--community", type=int, help="only this community's entities and the "
                      "relationships between them")
    export.set_defaults(func=cmd_export)


def _add_stats(sub) -> None:
    stats = sub.add_parser("stats", help="print an index's facts and write plots (PNG): "
                           "community sizes, degrees, LLM usage against the limits, stages")
    stored_index(stats)
    stats.add_argument("--out", default="index-stats", help="folder for the PNGs")
    stats.set_defaults(func=cmd_stats)


def _add_explore(sub) -> None:
    explore = sub.add_parser("explore", help="write a static, offline site that explores an "
                             "index (community tree, reports, graph, search, facts)")
    stored_index(explore)
    explore.add_argument("--out", default="index-explorer", help="local folder for the site")
    explore.add_argument("--serve", action="store_true", help="then serve it over HTTP")
    explore.add_argument("--port", type=int, default=8000)
    explore.set_defaults(func=cmd_explore)


def _add_serve(sub) -> None:
    serve = sub.add_parser("serve", help="answer queries over HTTP: an OpenAI-compatible API "
                           "(Ray Serve replicas), /v1/query, the explorer")
    stored_index(serve)
    config_options(serve)
    serve.add_argument("--host", help="address to bind (default serve.host, 127.0.0.1; "
                       "another needs GRAPHRAG_SERVE_API_KEYS)")
    serve.add_argument("--port", type=int, help="port (default serve.port, 8000)")
    scaling = serve.add_mutually_exclusive_group()
    scaling.add_argument("--replicas", type=int, help="replicas, each holding the index warm "
                         "(default serve.replicas, 1)")
    scaling.add_argument("--autoscale", metavar="MIN:MAX",
                         help="replicas added and removed with the load")
    serve.add_argument("--engine", choices=("ray", "local"), default="ray",
                       help="ray: a Ray Serve application (the attached cluster's, or a local "
                       "instance); local: one process, no Ray")
    serve.set_defaults(func=cmd_serve)


def _add_mcp(sub) -> None:
    mcp = sub.add_parser("mcp", help="an MCP server for agents: a tool per query method with "
                         "cited answers, lookups by id, reports as resources (stdio or "
                         "streamable HTTP)")
    stored_index(mcp)
    config_options(mcp)
    mcp.add_argument("--transport", choices=("stdio", "http"), default="stdio",
                     help="stdio: the client starts this command; http: streamable HTTP at "
                     "/mcp, for many clients")
    mcp.add_argument("--host", help="with http: address to bind (default serve.host, "
                     "127.0.0.1; another needs GRAPHRAG_SERVE_API_KEYS)")
    mcp.add_argument("--port", type=int, help="with http: port (default serve.port, 8000)")
    mcp.set_defaults(func=cmd_mcp)


class Terminated(BaseException):
    """SIGTERM (`ray job stop`, Kubernetes, systemd) raised in the main thread, so the command
    unwinds like an interrupt: pools stop, an unpublished version is removed, the cache stays.
    A BaseException, like KeyboardInterrupt, so no `except Exception` swallows it."""


RESUME_HINT = ("completed LLM calls are in the cache, so the same command resumes without "
               "paying for them again")


def _stop(signum: int, frame: object) -> None:
    """The first SIGINT or SIGTERM: no request leaves this process from now on (threads
    included: `stopping`), and the main thread unwinds. A second signal ends it at once."""
    stopping.request_stop("interrupted" if signum == signal.SIGINT else "terminated")
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit_now)
    if signum == signal.SIGINT:
        raise KeyboardInterrupt()
    raise Terminated()


def _exit_now(signum: int, frame: object) -> None:
    os.write(2, f"stopped at once (a second signal); {RESUME_HINT}\n".encode())
    os._exit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ray_before = ray_initialized()
    in_main_thread = threading.current_thread() is threading.main_thread()
    stopping.clear()
    if in_main_thread:
        previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return args.func(args)
    except GraphRagError as exc:
        _eprint(f"error: {exc}")
        return 2
    except (KeyboardInterrupt, stopping.StopRequested):
        _eprint(f"interrupted: stopped; {RESUME_HINT}")
        return 130
    except Terminated:
        _eprint(f"terminated (SIGTERM): stopped; {RESUME_HINT}")
        return 128 + signal.SIGTERM
    except Exception as exc:  # an environment failure is a message; anything else, a bug
        message = environment_error(exc)
        if message is None:
            raise
        _eprint(f"error: {message}")
        return 2
    finally:
        _release_native_threads(stop_ray=not ray_before)
        if in_main_thread:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def run() -> NoReturn:
    """The command line's entry point (`graphrag-ray`, `python -m graphrag_ray`): `main`,
    then the process ends without tearing the interpreter down. Finalizing the modules after
    a build frees what it built object by object (every query pays it too), and Arrow's native
    thread pools torn down then could abort a process whose
    work was done. What must happen at exit has happened: the index is published, Ray is
    stopped and Arrow's readers collected (`main`), the exit handlers (logging's) run here
    and the standard streams are flushed. An exception, `--help` included, exits as usual."""
    code = main()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(code)


def _release_native_threads(stop_ray: bool) -> None:
    """Stop the Ray instance this command started (not one its caller runs) and collect
    Arrow's readers while the interpreter is whole: Arrow's native thread pools torn down at
    interpreter exit can abort the process after its work is done ("terminate called without
    an active exception", apache/arrow#34314), seen here rarely."""
    import gc

    if stop_ray and ray_initialized():
        sys.modules["ray"].shutdown()
    gc.collect()
