"""`graphrag-ray stats`: an index's facts, printed, and the plots people would rather look at
than read (matplotlib, written as PNGs; the explorer shows the same files):

- community sizes per level (how the hierarchy splits the graph),
- the degree distribution (log-log: hubs and the long tail),
- LLM requests and tokens in the trailing minute over the build against the configured
  per-minute limits (from the rate budget's 10 s timeline in the manifest; builds without an
  LLM have none),
- the stage timeline (when each stage ran and for how long).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from graphrag_ray import schema
from graphrag_ray.storage.index_store import IndexVersion

PLOTS = ("community_sizes", "degree_distribution", "llm_usage", "stage_timeline")


def index_facts(version: IndexVersion) -> dict:
    """What the explorer's facts page and `stats` print: corpus, tables, levels, LLM usage
    and cost, stage timings, from the manifest alone."""
    manifest = version.read_manifest()
    usage, config = manifest.llm_usage, manifest.config
    return {
        "version": manifest.version, "created_at": manifest.created_at,
        "input": manifest.input,
        "corpus": {"documents": manifest.tables.get(schema.DOCUMENTS),
                   "chunks": manifest.extraction.chunks,
                   "tokens": manifest.extraction.chunk_tokens},
        "tables": manifest.tables,
        "communities_per_level": manifest.communities_per_level,
        "extraction_method": config.get("extraction", {}).get("method"),
        "model": usage.model, "llm_total": usage.total.model_dump(),
        "llm_by_stage": {stage: figures.model_dump(include={
            "calls", "prompt_tokens", "completion_tokens", "rate_limited", "cost_usd"})
                         for stage, figures in usage.stages.items()},
        "limits": {"requests_per_minute": config.get("llm", {}).get("requests_per_minute"),
                   "tokens_per_minute": config.get("llm", {}).get("tokens_per_minute")},
        "timings_s": manifest.timings_s,
        "resolution": manifest.resolution,
        "query_methods": query_methods(config),
    }


def query_methods(config: dict) -> list[dict]:
    """The methods that answer from this index, and what each spends at query time (lazy:
    its relevance budget; none of them needs more from the index than it has)."""
    from graphrag_ray.query.methods import QUERY_METHODS

    budget = config.get("query", {}).get("lazy", {}).get("relevance_budget")
    return [{"method": m.name, "help": m.help + (f" (default budget {budget} tests)"
                                                 if m.name == "lazy" and budget else "")}
            for m in QUERY_METHODS.values()]


def format_facts(facts: dict) -> str:
    corpus = facts["corpus"]
    lines = [f"index version {facts['version']} ({facts['created_at']}) of {facts['input']}",
             f"corpus: {corpus['documents']} documents, {corpus['chunks']} chunks, "
             f"{corpus['tokens']} tokens; extraction: {facts['extraction_method']}",
             "tables: " + ", ".join(f"{k} {v}" for k, v in facts["tables"].items()),
             "communities per level: " + ", ".join(
                 f"{level}: {n}" for level, n in facts["communities_per_level"].items())]
    total = facts["llm_total"]
    if total.get("calls"):
        lines.append(f"LLM ({facts['model']}): {total['calls']} calls, "
                     f"{total.get('prompt_tokens', 0)} prompt + "
                     f"{total.get('completion_tokens', 0)} completion tokens, "
                     f"{total.get('rate_limited', 0)} rate-limited, "
                     f"{_cost(total.get('cost_usd'))}")
        for stage, figures in facts["llm_by_stage"].items():
            if figures.get("calls"):
                lines.append(f"  {stage}: {figures['calls']} calls, "
                             f"{_cost(figures.get('cost_usd'))}")
    else:
        lines.append("LLM: no calls (offline build)")
    lines.append("stages (s): " + ", ".join(f"{k} {v}" for k, v in facts["timings_s"].items()))
    lines.append("query methods: " + ", ".join(m["method"] for m in facts["query_methods"]))
    return "\n".join(lines)


def _cost(usd: float | None) -> str:
    return f"${usd:.4f}" if usd is not None else "cost unknown (no price for the model)"


def write_plots(version: IndexVersion, out_dir: str | Path) -> list[Path]:
    """The PNGs, in `out_dir`; returns the paths written (the LLM plot only when the build
    called an LLM)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest = version.read_manifest()
    written = []

    def save(figure, name: str) -> None:
        figure.tight_layout()
        path = out / f"{name}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        written.append(path)

    communities = version.read_table(schema.COMMUNITIES, ["level", "size"])
    levels = communities.column("level").to_numpy()
    sizes = communities.column("size").to_numpy()
    figure, axis = plt.subplots(figsize=(7, 4))
    present = sorted(set(levels.tolist()))
    if present:
        axis.boxplot([sizes[levels == level] for level in present], showfliers=True)
        axis.set_xticks(range(1, len(present) + 1), [str(level) for level in present])
        axis.set_yscale("log")
    axis.set(title="Community sizes per level", xlabel="level", ylabel="entities (log)")
    save(figure, "community_sizes")

    degrees = Counter(version.read_table(schema.ENTITIES, ["degree"]).column("degree")
                      .to_pylist())
    figure, axis = plt.subplots(figsize=(7, 4))
    shown = sorted(d for d in degrees if d > 0)
    axis.loglog(shown, [degrees[d] for d in shown], "o", markersize=3)
    axis.set(title="Degree distribution", xlabel="degree", ylabel="entities")
    save(figure, "degree_distribution")

    timeline = (manifest.llm_usage.rate_limiter or {}).get("timeline")
    if timeline and sum(timeline["requests"]):
        limits = manifest.config.get("llm", {})
        width = max(1, int(round(60.0 / timeline["bucket_s"])))
        t = (np.arange(len(timeline["requests"])) + 1) * timeline["bucket_s"]

        def last_minute(values: list[int]) -> np.ndarray:
            # What a provider's per-minute limit counts: the trailing 60 s at each point.
            return np.convolve(np.asarray(values, dtype=float), np.ones(width))[:len(values)]

        figure, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
        top.plot(t, last_minute(timeline["requests"]), label="requests in the last 60 s")
        top.plot(t, last_minute(timeline["rate_limited"]), label="429s in the last 60 s")
        bottom.plot(t, last_minute(timeline["tokens"]), label="tokens in the last 60 s")
        for axis, key in ((top, "requests_per_minute"), (bottom, "tokens_per_minute")):
            if limits.get(key):
                axis.axhline(limits[key], color="red", linestyle="--", label=f"limit ({key})")
            axis.set_ylim(bottom=0)
            axis.legend(loc="lower right", fontsize=8)
        top.set(title="LLM usage against the per-minute limits")
        bottom.set(xlabel="seconds since the budget opened")
        save(figure, "llm_usage")

    starts, timings = manifest.stage_starts_s, manifest.timings_s
    stages = sorted((s for s in starts if s in timings), key=lambda s: starts[s])
    figure, axis = plt.subplots(figsize=(8, 0.4 * len(stages) + 1.5))
    for i, stage in enumerate(stages):
        axis.barh(i, max(timings[stage], 0.01), left=starts[stage])
    axis.set_yticks(range(len(stages)), stages)
    axis.invert_yaxis()
    axis.set(title="Stage timeline", xlabel="seconds")
    save(figure, "stage_timeline")
    return written
