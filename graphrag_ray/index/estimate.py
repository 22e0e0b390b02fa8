"""`index --dry-run`: expected LLM calls, tokens and cost per stage, without calling the LLM.

Extraction is counted exactly from the chunks: one call per chunk, plus a yes/no check and a
continuation per gleaning round (an upper bound: every check answered yes), plus one claims
call when claims are on; prompt tokens are the rendered prompts, conversation included.
Summaries and reports depend on the graph the LLM will find, which we cannot know; the build's
own first stages (the same functions: reading, chunking, extraction, merge, communities) run
offline as a proxy, and we count its elements with several descriptions and its communities
that need their own report. Completion tokens are assumptions stated in the output.
"""

from __future__ import annotations

import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import IndexNotFoundError
from graphrag_ray.index.chunks.positions import spread_numbers
from graphrag_ray.index.chunks.read_and_chunk import stored_pieces
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.extract.kept_extractions import extraction_fingerprint
from graphrag_ray.index.extract.stage import EXTRACTION_METHODS
from graphrag_ray.index.graph.communities import carried_down
from graphrag_ray.index.graph.description_blocks import read_descriptions
from graphrag_ray.index.pipelines import BuildState, pipeline, pipeline_name, run_stages
from graphrag_ray.index.pools import uses_chat_llm
from graphrag_ray.index.reports.summary_worker import needs_llm_summary
from graphrag_ray.input.loader import list_input_files
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.llm.accounting import cost_usd
from graphrag_ray.prompts_loader import load_prompts, render
from graphrag_ray.storage import IndexStore, IndexVersion, Manifest
from graphrag_ray.storage.manifest import StageUsage
from graphrag_ray.tokens import count_tokens

# Assumed completion sizes (fractions of the configured maxima, or of the input).
EXTRACTION_OUTPUT_PER_INPUT_TOKEN = 0.5
GLEANING_OUTPUT_FRACTION = 0.5  # a gleaning round finds about half as much again
CHECK_OUTPUT_TOKENS = 1
REPORT_OUTPUT_FRACTION = 0.6
SUMMARY_OUTPUT_FRACTION = 0.5
REPORT_INPUT_TOKENS_PER_ENTITY = 120  # rendered entity + its share of edges, before the cap
DENSITY_SAMPLE_CHUNKS = 200  # a calibrating version's text units read for `offline_density`
# The printed range: a calibrated stage within this share (measured: within 10% on the
# Carol and podcast cases, tests/index/test_estimate_calibration.py); an assumed completion
# between these multiples of the assumption.
CALIBRATED_SPREAD = 0.1
ASSUMED_COMPLETION_RANGE = (0.5, 2.0)


def _template_tokens(prompts: dict[str, str], config: GraphRagConfig, name: str,
                     **values: object) -> int:
    ex = config.extraction
    return count_tokens(render(prompts[name], tuple_delimiter=ex.tuple_delimiter,
                               record_delimiter=ex.record_delimiter,
                               completion_delimiter=ex.completion_delimiter, **values),
                        config.tokenizer.encoding)


def extraction_calls(chunk_tokens: list[int], config: GraphRagConfig,
                     prompts: dict[str, str]) -> dict[str, int]:
    """Extraction's calls and tokens as assumed: each chunk's conversation (the prompt, its
    reply, then per gleaning round the check and the continue prompt, each resending all
    before it), replies of `EXTRACTION_OUTPUT_PER_INPUT_TOKEN`, halving each round, every
    check answering yes. A previous build's measurements scale it (`measured_rates`)."""
    ex = config.extraction
    base = _template_tokens(prompts, config, "extract_graph",
                            entity_types=", ".join(ex.entity_types), input_text="")
    check = _template_tokens(prompts, config, "glean_check")
    cont = _template_tokens(prompts, config, "glean_continue")
    calls = prompt = completion = 0
    for tokens in chunk_tokens:
        out = min(ex.max_output_tokens, int(tokens * EXTRACTION_OUTPUT_PER_INPUT_TOKEN))
        conversation = base + tokens
        calls += 1
        prompt += conversation
        completion += out
        for _ in range(ex.max_gleanings):
            conversation += out
            if ex.glean_check:
                conversation += check
                calls += 1
                prompt += conversation
                completion += CHECK_OUTPUT_TOKENS
                conversation += CHECK_OUTPUT_TOKENS
            conversation += cont
            calls += 1
            prompt += conversation
            out = int(out * GLEANING_OUTPUT_FRACTION)
            completion += out
    return {"calls": calls, "prompt_tokens": prompt, "completion_tokens": completion}


def offline_density(units: pa.Table, config: GraphRagConfig,
                    prompts: dict[str, str]) -> float | None:
    """Offline-extracted entity and relationship instances per token of `units` (id, text,
    n_tokens; a seeded sample of at most `DENSITY_SAMPLE_CHUNKS`: a few seconds whatever
    the corpus's size): how much a text names, which the LLM's extraction output and the
    graph's size follow (Carol's first 40k characters: 16.3 per 1k tokens and 1.94
    completion tokens per token; the next 40k: 12.4 and 1.36)."""
    from graphrag_ray.index.extract.stage import NLPExtractionWorker

    if units.num_rows > DENSITY_SAMPLE_CHUNKS:
        rows = np.random.default_rng(0).choice(units.num_rows, DENSITY_SAMPLE_CHUNKS,
                                               replace=False)
        units = units.take(np.sort(rows))
    tokens = pc.sum(units.column("n_tokens")).as_py() or 0
    if not tokens:
        return None
    extraction = NLPExtractionWorker(config, prompts)(units.select(["id", "text"]))
    instances = sum(pc.sum(pc.list_value_length(extraction.column(c))).as_py() or 0
                    for c in ("entities", "relationships"))
    return instances / tokens


def _version_density(version: IndexVersion, config: GraphRagConfig,
                     prompts: dict[str, str]) -> float | None:
    """`offline_density` of a version's extracted text units."""
    try:
        units = version.read_table(schema.TEXT_UNITS, ["id", "text", "n_tokens",
                                                       "extraction_status"])
    except (IndexNotFoundError, OSError):
        return None
    return offline_density(units.filter(pc.equal(units.column("extraction_status"), "ok")),
                           config, prompts)


def measured_rates(manifest: Manifest, config: GraphRagConfig, prompts: dict[str, str],
                   previous: IndexVersion | None = None) -> dict | None:
    """What a previous build of the same index with the same model and extraction settings
    measured, per LLM stage: calls per chunk (cache hits included: they were calls once)
    and prompt and completion tokens per call, and, given the `previous` version itself, how
    densely its text names things (`offline_density`), so that a corpus that names more or
    less is scaled. None when it is not comparable."""
    stages, extraction = manifest.llm_usage.stages, manifest.extraction
    # What reached the model: boilerplate chunks (a licence, repeated passages and openings,
    # kept as text units of their own) are never extracted.
    chunks = extraction.chunks - extraction.boilerplate_chunks
    chunk_tokens = extraction.chunk_tokens - extraction.boilerplate_tokens
    if not chunks or manifest.llm_usage.model != config.llm.model or \
            manifest.extraction_fingerprint != extraction_fingerprint(config, prompts):
        return None
    rates = {}
    stages = _complete(stages, manifest.llm_usage.earlier_runs)
    extract = stages.get("extract", StageUsage())
    if extract.calls and chunk_tokens:
        # Measured against what `extraction_calls` says of the same chunks (taken at their
        # mean size: the model is linear in a chunk's tokens below the output cap). Tokens
        # are known for the calls made, not for cache hits: they are taken at the same rate.
        model = extraction_calls([round(chunk_tokens / chunks)] * chunks, config, prompts)
        made = extract.calls / (extract.calls + extract.cache_hits)
        measured = {"calls": extract.calls + extract.cache_hits,
                    "prompt_tokens": extract.prompt_tokens / made,
                    "completion_tokens": extract.completion_tokens / made}
        if all(model.values()):
            rates["extract"] = {f"{key}_factor": measured[key] / model[key] for key in model}
    for name in ("summarize", "reports"):
        usage = stages.get(name, StageUsage())
        if usage.calls:  # tokens are known only for calls that were made
            rates[name] = {
                "calls_per_chunk": (usage.calls + usage.cache_hits) / chunks,
                "prompt_per_call": usage.prompt_tokens / usage.calls,
                "completion_per_call": usage.completion_tokens / usage.calls}
    if not rates:
        return None
    density = _version_density(previous, config, prompts) if previous is not None else None
    return {"version": manifest.version, "chunks": chunks, "stages": rates,
            "offline_density": density}


# A stage calibrates a dry run only when the calls paid for it (in the version's run and the
# earlier runs it counts) are at least this share of the calls it made, cache hits included:
# a resumed run's few new calls are no measure of its stage (they were the chunks that
# happened to be left).
COMPLETE_SHARE = 0.9


def _complete(stages: dict[str, StageUsage], earlier: dict | None) -> dict[str, StageUsage]:
    """The stages whose figures are complete, with the earlier runs' calls and tokens added:
    the calls paid, and the cache hits they answer, as one measure."""
    complete = {}
    for name, usage in stages.items():
        before = (earlier or {}).get("stages", {}).get(name, {})
        paid = usage.calls + int(before.get("calls", 0))
        needed = usage.calls + usage.cache_hits
        if needed and paid >= COMPLETE_SHARE * needed:
            scale = needed / paid  # tokens per paid call, for every call the stage made
            complete[name] = usage.model_copy(update={
                "calls": needed, "cache_hits": 0,
                "prompt_tokens": round(scale * (usage.prompt_tokens
                                                + int(before.get("prompt_tokens", 0)))),
                "completion_tokens": round(scale * (usage.completion_tokens
                                                    + int(before.get("completion_tokens", 0))))})
    return complete


def previous_rates(output_url: str, config: GraphRagConfig) -> dict | None:
    """`measured_rates` of the version published at `output_url`, if there is one."""
    try:
        version = IndexStore(output_url).open()
        manifest = version.read_manifest()
    except (IndexNotFoundError, OSError):
        return None
    return measured_rates(manifest, config, load_prompts(config), version)


def _calibrated(stages: dict[str, dict], chunks: int, measured: dict, density: float) -> None:
    """Summaries and reports at the rates a previous build measured (in place), their calls
    scaled by how much more or less this corpus names than that build's (`density`)."""
    for name in ("summarize", "reports"):
        rate = measured["stages"].get(name)
        if rate and stages[name]["calls"]:
            calls = round(rate["calls_per_chunk"] * chunks * density)
            stages[name].update(calls=calls, prompt_tokens=round(rate["prompt_per_call"] * calls),
                                completion_tokens=round(rate["completion_per_call"] * calls))


def estimate_index(input_url: str, config: GraphRagConfig, measured: dict | None = None,
                   joining: IndexVersion | None = None,
                   extract_tokens: list[int] | None = None) -> dict:
    """`measured`: `measured_rates` of a previous build of this index; without it, the
    completions are the stated assumptions. `joining`: the version these documents are
    added to (an update), whose elements and communities they touch are counted too.
    `extract_tokens`: the chunks extraction will read, when known better than from these
    documents alone (an update's, `update.chunks_to_extract`)."""
    prompts = load_prompts(config)
    proxy = _offline_build(input_url, config, prompts)
    touched = touched_in(joining, proxy, config) if joining is not None else None
    for key in ("titles", "single_titles", "single_pairs"):
        proxy.pop(key)
    chunk_tokens = proxy.pop("chunk_tokens")
    if extract_tokens is not None:
        chunk_tokens = extract_tokens
    density = _density_ratio(proxy.pop("offline_density"), measured)
    stages, bases = _stage_figures(config, prompts, proxy, chunk_tokens, measured, density)
    if measured:
        _calibrated(stages, len(chunk_tokens), measured, density)
    if touched:
        _add_touched(stages, touched, measured, *bases, config)
    batched = (("extract", "extract_claims") if config.llm.batch else ()) + (
        ("summarize", "reports") if config.llm.batch is True else ()) + (
        ("embed",) if config.embeddings.batch else ())
    by_batch = [n for n in batched if n in stages and stages[n]["calls"]]
    online_cost = {}
    for name, figures in stages.items():
        endpoint = config.embeddings if name == "embed" else config.llm
        figures["cost_usd"] = cost_usd(figures, endpoint, batch=name in by_batch)
        if name in by_batch:
            online_cost[name] = cost_usd(figures, endpoint)
    name = pipeline_name(config)
    return {
        # The stages the build would run, in order (`index/pipelines.py`).
        "pipeline": {"name": name, "stages": [
            {"stage": stage.name, "calls": calls_with(stage, config), "about": stage.about}
            for stage in pipeline(name, config)]},
        "documents": proxy.pop("documents"), "chunks": len(chunk_tokens),
        "corpus_tokens": sum(chunk_tokens), "model": config.llm.model,
        "stages": stages, "total": _total(stages, config, measured, by_batch),
        "proxy_graph": {k: v for k, v in proxy.items() if k != "report_sizes"},
        "touched_in_index": touched,
        "calibrated_on": {"version": measured["version"], "chunks": measured["chunks"],
                          "stages": sorted(measured["stages"]),
                          "density_ratio": round(density, 3)} if measured else None,
        # The Batch API's own pool: its stages are not paced by the online limits.
        "minutes_at_rate_limits": _minutes({n: f for n, f in stages.items()
                                            if n not in by_batch}, config),
        "batch": {"stages": by_batch,
                  "rounds": _batch_rounds(config)
                  if config.llm.batch and "extract" in chat_stages(config) else 0,
                  "online_cost_usd": None if None in online_cost.values()
                  else round(sum(online_cost.values()), 6)} if by_batch else None,
    }


def _stage_figures(config: GraphRagConfig, prompts, proxy: dict, chunk_tokens: list[int],
                   measured: dict | None, density: float
                   ) -> tuple[dict[str, dict], tuple[int, int]]:
    """Each stage's calls and tokens before calibration, and the summary and report
    prompts' own tokens (their templates without inputs)."""

    def template_tokens(name: str, **values: object) -> int:
        return _template_tokens(prompts, config, name, **values)

    stages: dict[str, dict] = {"extract": extraction_calls(chunk_tokens, config, prompts)}
    factors = (measured or {}).get("stages", {}).get("extract")
    if factors:
        # The previous build's measured calls and tokens against what this model says of
        # its chunks: gleaning rounds, the check's answers and the model's verbosity, kept;
        # its output scaled by how much this corpus names against that one.
        stages["extract"] = {key: round(value * factors[f"{key}_factor"]
                                        * (density if key == "completion_tokens" else 1))
                             for key, value in stages["extract"].items()}
    if config.claims.enabled:
        claims_base = template_tokens("extract_claims", claim_description=config.claims.description,
                                      entity_specs="", input_text="")
        stages["extract_claims"] = {
            "calls": len(chunk_tokens),
            "prompt_tokens": sum(claims_base + t + 50 for t in chunk_tokens),
            "completion_tokens": int(len(chunk_tokens) * config.claims.max_output_tokens * 0.2)}
    summary_base = template_tokens("summarize_descriptions", entity_name="",
                                   description_list="", max_length=config.summarize.max_length)
    stages["summarize"] = {
        "calls": proxy["multi_description_elements"],
        "prompt_tokens": proxy["multi_description_elements"] * summary_base
        + proxy["description_tokens_to_summarize"],
        "completion_tokens": int(proxy["multi_description_elements"] * config.summarize.max_length
                                 * SUMMARY_OUTPUT_FRACTION)}
    report_base = template_tokens("community_report", input_text="",
                                  max_findings=config.reports.max_findings)
    stages["reports"] = _report_figures(config, proxy, report_base)
    if config.embeddings.resolved_method() == "api":
        # Chunks, entity descriptions (about the summary length) and reports, in batches.
        texts = len(chunk_tokens) + proxy["entities"] + len(proxy["report_sizes"])
        stages["embed"] = {
            "calls": -(-texts // config.embeddings.batch_size),
            "prompt_tokens": sum(chunk_tokens) + int(
                proxy["entities"] * config.summarize.max_length * SUMMARY_OUTPUT_FRACTION
                + len(proxy["report_sizes"]) * config.reports.max_output_tokens
                * REPORT_OUTPUT_FRACTION),
            "completion_tokens": 0}
    calling = chat_stages(config)
    for name in ("extract", "summarize", "reports"):
        if name not in calling:  # offline: no call, no token
            stages[name] = dict.fromkeys(stages[name], 0)
    if "extract" not in calling:
        stages.pop("extract_claims", None)
    return stages, (summary_base, report_base)


def chat_stages(config: GraphRagConfig) -> set[str]:
    """The stages whose method calls the chat model, under `config`."""
    return {name for name, calls in (
        ("extract", EXTRACTION_METHODS[config.extraction.method].calls_llm),
        ("summarize", config.uses_llm(config.summarize.method)),
        ("reports", config.uses_llm(config.reports.method))) if calls}


def _report_figures(config: GraphRagConfig, proxy: dict, report_base: int) -> dict:
    # Communities smaller than `min_llm_entities` get an extractive report: no call.
    reported = [size for size in proxy["report_sizes"]
                if size >= config.reports.min_llm_entities]
    return {
        "calls": len(reported),
        "prompt_tokens": sum(report_base + min(config.reports.max_input_tokens,
                                               REPORT_INPUT_TOKENS_PER_ENTITY * size)
                             for size in reported),
        "completion_tokens": int(len(reported) * config.reports.max_output_tokens
                                 * REPORT_OUTPUT_FRACTION)}


def _total(stages: dict[str, dict], config: GraphRagConfig, measured: dict | None,
           by_batch: list[str]) -> dict:
    """The stages' sums, and the cost's range: calibrated stages within
    `CALIBRATED_SPREAD`, the others' completions within `ASSUMED_COMPLETION_RANGE`."""
    total = {key: sum(f[key] for f in stages.values()) for key in
             ("calls", "prompt_tokens", "completion_tokens")}
    costs = [f["cost_usd"] for f in stages.values() if f["calls"]]
    total["cost_usd"] = None if None in costs else round(sum(costs), 6)
    if total["cost_usd"] is None:
        return total
    calibrated = set((measured or {}).get("stages", {}))
    bounds = []
    for side in (0, 1):
        cost = 0.0
        for name, figures in stages.items():
            if not figures["calls"]:
                continue
            endpoint = config.embeddings if name == "embed" else config.llm
            if name in calibrated:
                scale = 1 - CALIBRATED_SPREAD if side == 0 else 1 + CALIBRATED_SPREAD
                varied = {**figures, "prompt_tokens": figures["prompt_tokens"] * scale,
                          "completion_tokens": figures["completion_tokens"] * scale}
            else:  # prompts are counted; the completions are the guess
                varied = {**figures, "completion_tokens":
                          figures["completion_tokens"] * ASSUMED_COMPLETION_RANGE[side]}
            cost += cost_usd(varied, endpoint, batch=name in by_batch) or 0.0
        bounds.append(round(cost, 6))
    total["cost_usd_range"] = bounds
    return total


def _batch_rounds(config: GraphRagConfig) -> int:
    """One per step of a chunk's conversation: extraction, each gleaning round (and its
    check), the claims."""
    ex = config.extraction
    return 1 + ex.max_gleanings * (2 if ex.glean_check else 1) + int(config.claims.enabled)


def calls_with(stage, config: GraphRagConfig) -> str | None:
    """The endpoint a stage calls with these settings (None: it runs offline here): the
    resolution calls the chat model only to confirm its pairs, the summaries and
    reports only when one of them is by the LLM, embed only an embeddings endpoint."""
    if stage.calls == "chat":
        if stage.name == "resolve_entities":
            uses = config.resolution.enabled and config.resolution.confirm_with_llm
        elif stage.name.startswith("summaries_and_reports"):
            uses = bool({"summarize", "reports"} & chat_stages(config))
        else:
            uses = uses_chat_llm(config)
        return "chat" if uses else None
    if stage.calls == "embeddings":
        return "embeddings" if config.embeddings.resolved_method() == "api" else None
    return stage.calls


def _minutes(stages: dict[str, dict], config: GraphRagConfig) -> float | None:
    """Chat stages at the chat limits, then embeddings at theirs (the embed stage runs last)."""
    minutes = []
    for limits, names in ((config.llm, [n for n in stages if n != "embed"]),
                          (config.embeddings, [n for n in stages if n == "embed"])):
        calls = sum(stages[n]["calls"] for n in names)
        tokens = sum(stages[n]["prompt_tokens"] + stages[n]["completion_tokens"] for n in names)
        bounds = []
        if limits.requests_per_minute:
            bounds.append(calls / limits.requests_per_minute)
        if limits.tokens_per_minute:
            bounds.append(tokens / limits.tokens_per_minute)
        if bounds:
            minutes.append(max(bounds))
    return round(sum(minutes), 2) if minutes else None


def _offline_build(input_url: str, config: GraphRagConfig, prompts: dict[str, str]) -> dict:
    """The build's own first stages (reading, chunking, extraction, merge, communities), run
    offline and in-process in a scratch folder: the chunks are exactly the build's, and the
    offline graph of the same chunks stands in for the one the LLM will find."""
    proxy_config = config.model_copy(deep=True)
    proxy_config.extraction.method = "nlp"
    proxy_config.claims.enabled = False
    proxy_config.cache.enabled = False
    proxy_config.runtime.engine = "local"
    with tempfile.TemporaryDirectory(prefix="graphrag-dry-run-") as scratch:
        ctx = BuildContext(proxy_config, prompts, LLMServices(), IndexStore(scratch).stage(),
                           progress=lambda _: None)
        _, root, files, _, _ = list_input_files(input_url, config.input)
        state = run_stages(ctx, BuildState(input_url, root, files,
                                           spread_numbers(len(files)), [0] * len(files), 1, []),
                           pipeline("dry_run", proxy_config))
        documents = sum(piece.num_rows for piece in stored_pieces(ctx.work_url, "documents"))
        chunks = pa.concat_tables(list(stored_pieces(ctx.work_url, "chunks", [
            "id", "text", "n_tokens", "repeated_passage"])))
        # What extraction reads: a repeated passage's own text unit is never extracted.
        density = offline_density(chunks.filter(pc.invert(pc.fill_null(
            chunks.column("repeated_passage"), False))), config, prompts)
        extraction, graph, communities = state.extraction, state.graph, state.communities
    counts = np.concatenate([graph.entities.column("description_count").to_numpy(),
                             graph.relationships.column("description_count").to_numpy()])
    multi = np.flatnonzero(counts > 1).tolist()
    # In-process, the description blocks are the tables themselves.
    blocks, where = graph.addresses.gather(multi, lists=True)
    lists = read_descriptions(blocks, where, "descriptions")
    encoding = config.tokenizer.encoding
    to_merge = [d for d in lists if needs_llm_summary(d, config.summarize, encoding)]
    by_id = {c.id: c for c in communities}
    return {
        "documents": documents,
        "chunk_tokens": extraction.column("n_tokens").to_pylist(),
        "offline_density": density,
        "entities": graph.entities.num_rows, "relationships": graph.relationships.num_rows,
        "communities": len(communities),
        # Those the LLM merges; fewer and shorter lists are joined without a call.
        "multi_description_elements": len(to_merge),
        "description_tokens_to_summarize": sum(
            min(config.summarize.max_input_tokens, count_tokens("\n".join(d), encoding))
            for d in to_merge),
        "report_sizes": [len(c.members) for c in communities if not carried_down(c, by_id)],
        # Which elements these documents name once only: joined to an index's own (an
        # update), each is summarized again (`touched_in`).
        "single_titles": pc.filter(graph.entities.column("title"),
                                   pc.equal(graph.entities.column("description_count"), 1)
                                   ).to_pylist(),
        "titles": graph.entities.column("title").to_pylist(),
        "single_pairs": list(zip(*(pc.filter(
            graph.relationships.column(side),
            pc.equal(graph.relationships.column("description_count"), 1)).to_pylist()
            for side in ("source", "target")))),
    }


def touched_in(previous: IndexVersion, proxy: dict, config: GraphRagConfig) -> dict:
    """What an update's new documents cost in the index's existing graph (by the offline
    proxy's names): elements they name once that the index has already (summarized again
    with the new description; those named twice are counted with the documents) and the
    index's communities holding an entity they name (reported again: their inputs change).
    """
    entities = previous.read_table(schema.ENTITIES, ["id", "title"])
    ids = dict(zip(entities.column("title").to_pylist(), entities.column("id").to_pylist()))
    named = {ids[t] for t in proxy["titles"] if t in ids}
    summaries = sum(t in ids for t in proxy["single_titles"])
    pairs = previous.read_table(schema.RELATIONSHIPS, ["source", "target"])
    known = set(zip(pairs.column("source").to_pylist(), pairs.column("target").to_pylist()))
    summaries += sum(pair in known or pair[::-1] in known for pair in proxy["single_pairs"])
    communities = previous.read_table(schema.COMMUNITIES, ["community", "children",
                                                           "entity_ids"]).to_pylist()
    members = {c["community"]: set(c["entity_ids"]) for c in communities}
    reports = sum(
        1 for c in communities
        if len(c["entity_ids"]) >= config.reports.min_llm_entities and named & members[
            c["community"]]
        # a community carried down one level shares its child's report
        and not (len(c["children"]) == 1 and members.get(c["children"][0]) == members[
            c["community"]]))
    return {"entities_named": len(named), "summaries": summaries, "reports": reports}


def _add_touched(stages: dict[str, dict], touched: dict, measured: dict | None,
                 summary_base: int, report_base: int, config: GraphRagConfig) -> None:
    """The index's own summaries and reports an update redoes (`touched_in`), at the
    previous build's tokens per call (or the assumptions), added in place."""
    rates = (measured or {}).get("stages", {})
    assumed = {
        "summarize": (summary_base + config.summarize.max_length,
                      config.summarize.max_length * SUMMARY_OUTPUT_FRACTION),
        "reports": (report_base + config.reports.max_input_tokens // 2,
                    config.reports.max_output_tokens * REPORT_OUTPUT_FRACTION)}
    calling = chat_stages(config)
    for name, calls in (("summarize", touched["summaries"]), ("reports", touched["reports"])):
        if not calls or name not in calling:
            continue
        rate = rates.get(name)
        prompt, completion = (rate["prompt_per_call"], rate["completion_per_call"]) if rate \
            else assumed[name]
        stages[name]["calls"] += calls
        stages[name]["prompt_tokens"] += round(prompt * calls)
        stages[name]["completion_tokens"] += round(completion * calls)


def _density_ratio(density: float | None, measured: dict | None) -> float:
    """This corpus's `offline_density` over the calibrating build's (1 when either is
    unknown), bounded: a ratio past 0.5-2 is more likely a different kind of text than
    the same kind more densely named."""
    known = (measured or {}).get("offline_density")
    if not density or not known:
        return 1.0
    return min(2.0, max(0.5, density / known))


def format_estimate(estimate: dict) -> str:
    lines = [f"dry run: {estimate['documents']} documents, {estimate['chunks']} chunks, "
             f"{estimate['corpus_tokens']} tokens; model {estimate['model']}",
             f"pipeline {estimate['pipeline']['name']}: " + " -> ".join(
                 stage["stage"] + (f" ({stage['calls']})" if stage["calls"] else "")
                 for stage in estimate["pipeline"]["stages"]),
             f"{'stage':<16}{'calls':>10}{'prompt_tokens':>16}{'completion_tokens':>19}"
             f"{'cost_usd':>12}"]
    for name, figures in {**estimate["stages"], "total": estimate["total"]}.items():
        cost = "-" if figures["cost_usd"] is None else f"{figures['cost_usd']:.4f}"
        lines.append(f"{name:<16}{figures['calls']:>10}{figures['prompt_tokens']:>16}"
                     f"{figures['completion_tokens']:>19}{cost:>12}")
    proxy = estimate["proxy_graph"]
    calibrated = estimate.get("calibrated_on")
    if calibrated:
        lines.append(f"{', '.join(calibrated['stages'])}: as measured by this index's version "
                     f"{calibrated['version']} ({calibrated['chunks']} chunks, same model and "
                     "extraction settings): extraction's calls and tokens per chunk token, "
                     "gleaning and the check's answers included; summaries' and reports' "
                     "calls per chunk and tokens per call")
    elif not estimate["total"]["calls"]:
        lines.append("no LLM call: every stage runs offline")
    else:
        lines.append(f"summaries and reports are estimated from the offline graph of this "
                     f"corpus ({proxy['entities']} entities, {proxy['relationships']} "
                     f"relationships, {proxy['communities']} communities); extraction counts "
                     "assume every gleaning check says yes; completions are assumed (a build "
                     "into this output calibrates the next dry run)")
    low, high = estimate["total"].get("cost_usd_range") or (None, None)
    if low is not None:
        lines.append(f"likely cost ${low:.4f} - ${high:.4f} (calibrated stages within "
                     f"{CALIBRATED_SPREAD:.0%}; assumed completions from "
                     f"x{ASSUMED_COMPLETION_RANGE[0]} to x{ASSUMED_COMPLETION_RANGE[1]})")
    batch = estimate.get("batch")
    if batch:
        online = "-" if batch["online_cost_usd"] is None else f"${batch['online_cost_usd']:.4f}"
        steps = [f"extraction in {batch['rounds']} rounds"] if batch["rounds"] else []
        if "reports" in batch["stages"]:
            steps.append("then summaries and reports in a round and one more per level whose "
                         "reports wait on their sub-communities'")
        if "embed" in batch["stages"]:
            steps.append("the embeddings in one round once the other stages are done")
        settings = " and ".join(name for name, on in (("llm.batch", batch["rounds"]),
                                                      ("embeddings.batch",
                                                       "embed" in batch["stages"])) if on)
        lines.append(f"by batch ({settings}): {', '.join(batch['stages'])} at batch prices; "
                     f"{', '.join(steps)}, each waiting for its batches (online: {online}); "
                     "the minutes below leave them out")
    if estimate["minutes_at_rate_limits"]:  # (none: no limit, or nothing online to pace)
        lines.append(f"at the configured rate limits this takes at least "
                     f"{estimate['minutes_at_rate_limits']} minutes")
    return "\n".join(lines)
