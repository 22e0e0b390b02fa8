"""A Microsoft GraphRAG `settings.yaml` as our config: what maps, and what does not and why.

Both shapes its users have are read: 3.x (`completion_models`/`embedding_models`, `chunking`)
and 2.x (`models` with `type: openai_chat`..., `chunks`). The result is config data for
`config_from_data` plus two lists the `adopt` command prints and the manifest keeps. API keys
are never carried over (ours come from GRAPHRAG_API_KEY or OPENAI_API_KEY at run time), and
neither are Microsoft's prompt files: an index must not depend on a project folder that may
be gone, and ours are read by our names; the reason printed says how to use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphrag_ray.config import check_url
from graphrag_ray.prompts_loader import PLACEHOLDER, builtin_prompt

# Settings that are Microsoft's machinery, with why they have no counterpart here.
_NOT_OURS = {
    "input_storage": "the input is given to `update --input`",
    "output_storage": "the adopted index is written to --output",
    "update_output_storage": "updates publish new versions of the adopted index",
    "reporting": "logs go to stderr",
    "cache": "the response cache lives with the index (cache.url)",
    "vector_store": "its vectors are read once, at adoption",
    "snapshots": "no graphml or embedding snapshots",
    "extract_graph_nlp": "offline extraction is extraction.method=nlp, with its own rules",
    "embed_text": "what is embedded is fixed (entities, reports, text units)",
    "embed_graph": "node2vec embeddings are not built",
    "umap": "the explorer lays the graph out itself",
    "workflows": "the pipeline is chosen by extraction.method",
    "local_search": "query settings keep our defaults",
    "global_search": "query settings keep our defaults",
    "drift_search": "query settings keep our defaults",
    "basic_search": "query settings keep our defaults",
    "async_mode": "concurrency follows the rate limits",
    "concurrent_requests": "concurrency follows the rate limits",
    "root_dir": "paths are given on the command line",
}


@dataclass
class MappedSettings:
    data: dict[str, Any] = field(default_factory=dict)  # for `config_from_data`
    mapped: list[tuple[str, str]] = field(default_factory=list)  # (theirs, ours)
    unmapped: list[tuple[str, str]] = field(default_factory=list)  # (theirs, why)

    def set(self, theirs: str, ours: str, value: Any) -> None:
        if value is None:
            return
        section, _, key = ours.partition(".")
        self.data.setdefault(section, {})[key] = value
        self.mapped.append((theirs, ours))

    def skip(self, theirs: str, why: str) -> None:
        self.unmapped.append((theirs, why))


def map_settings(settings: dict[str, Any]) -> MappedSettings:
    result = MappedSettings()
    chat, chat_name = _model(settings, "completion_models", "default_completion_model",
                             ("chat",))
    embedding, embedding_name = _model(settings, "embedding_models", "default_embedding_model",
                                       ("embedding",))
    for model, prefix, name in ((chat, "llm", chat_name), (embedding, "embeddings",
                                                            embedding_name)):
        if model is None:
            continue
        _map_model(result, model, prefix, name)
    if embedding is not None:
        # Their vectors are an endpoint's, wherever it is (no api_base: OpenAI's; a
        # placeholder left out): an update embeds with one too, not with an offline model.
        result.set(f"{embedding_name}.model", "embeddings.method", "api")
    chunking = settings.get("chunking") or settings.get("chunks") or {}
    where = "chunking" if "chunking" in settings else "chunks"
    for theirs, ours in (("size", "chunks.size"), ("overlap", "chunks.overlap"),
                         ("encoding_model", "tokenizer.encoding")):
        result.set(f"{where}.{theirs}", ours, chunking.get(theirs))
    for key in set(chunking) - {"size", "overlap", "encoding_model"}:
        result.skip(f"{where}.{key}", "chunks are token windows of chunks.size")
    input_type = (settings.get("input") or {}).get("type") or \
        (settings.get("input") or {}).get("file_type")
    if input_type:
        result.set("input.type", "input.file_types",
                   ["txt", "md"] if input_type == "text" else [input_type])
    extract = settings.get("extract_graph") or {}
    if extract:
        result.set("extract_graph", "extraction.method", "llm")
    result.set("extract_graph.entity_types", "extraction.entity_types",
               extract.get("entity_types"))
    result.set("extract_graph.max_gleanings", "extraction.max_gleanings",
               extract.get("max_gleanings"))
    result.set("summarize_descriptions.max_length", "summarize.max_length",
               (settings.get("summarize_descriptions") or {}).get("max_length"))
    result.set("cluster_graph.max_cluster_size", "communities.max_cluster_size",
               (settings.get("cluster_graph") or {}).get("max_cluster_size"))
    claims = settings.get("extract_claims") or {}
    result.set("extract_claims.enabled", "claims.enabled", claims.get("enabled"))
    result.set("extract_claims.description", "claims.description", claims.get("description"))
    reports = settings.get("community_reports") or {}
    result.set("community_reports.max_length", "reports.max_output_tokens",
               reports.get("max_length"))
    result.set("community_reports.max_input_length", "reports.max_input_tokens",
               reports.get("max_input_length"))
    for section, ours in _PROMPTS.items():
        for key, value in (settings.get(section) or {}).items():
            if "prompt" in key and value:
                result.skip(f"{section}.{key}", _prompt_reason(ours))
    for section, why in _NOT_OURS.items():
        if section in settings:
            result.skip(section, why)
    return result


# Its workflow -> our prompt of the same job.
_PROMPTS = {"extract_graph": "extract_graph", "summarize_descriptions": "summarize_descriptions",
            "extract_claims": "extract_claims", "community_reports": "community_report"}


def _prompt_reason(ours: str) -> str:
    """Why a prompt file is not carried over, and how to use it: ours are read from
    `prompts.dir` by our file names (an index must not depend on a project folder that may
    be gone), with the placeholders ours fill."""
    fills = ", ".join(sorted(set(PLACEHOLDER.findall(builtin_prompt(ours)))))
    return (f"new text goes through our {ours}.txt; to use this file, copy it into a "
            f"folder as {ours}.txt and --set prompts.dir=FOLDER (ours fill {fills}; braces "
            "are read as written, so {{ }} escapes stay doubled)")


def _model(settings: dict, section: str, default_id: str, kinds: tuple[str, ...]
           ) -> tuple[dict | None, str]:
    """The model the workflows use: 3.x names it in `completion_models`/`embedding_models`,
    2.x in `models` by `type` (openai_chat, azure_openai_embedding...)."""
    models = settings.get(section) or {}
    if models:
        name = default_id if default_id in models else next(iter(models))
        return models[name], f"{section}.{name}"
    for name, model in (settings.get("models") or {}).items():
        if any(kind in str(model.get("type", "")) for kind in kinds):
            return model, f"models.{name}"
    return None, section


def _map_model(result: MappedSettings, model: dict, prefix: str, name: str) -> None:
    azure = "azure" in str(model.get("model_provider", "")) or \
        "azure" in str(model.get("type", ""))
    # Azure: the deployment is what requests name.
    result.set(f"{name}.model", f"{prefix}.model",
               model.get("deployment_name") if azure and model.get("deployment_name")
               else model.get("model"))
    base = model.get("api_base")
    try:  # (a ${VARIABLE} is checked once it is read: `adopted_config`)
        result.set(f"{name}.api_base", f"{prefix}.api_base",
                   base if "${" in str(base) else check_url(base, "api_base"))
    except ValueError as exc:  # a template's placeholder left in (PORT): no endpoint, said
        result.skip(f"{name}.api_base", str(exc))
    result.set(f"{name}.api_version", f"{prefix}.api_version", model.get("api_version"))
    if model.get("requests_per_minute") not in (None, "auto", 0):
        result.set(f"{name}.requests_per_minute", f"{prefix}.requests_per_minute",
                   int(model["requests_per_minute"]))
    if model.get("tokens_per_minute") not in (None, "auto", 0):
        result.set(f"{name}.tokens_per_minute", f"{prefix}.tokens_per_minute",
                   int(model["tokens_per_minute"]))
    if "api_key" in model:
        result.skip(f"{name}.api_key", "keys are never stored: set GRAPHRAG_API_KEY")
    if model.get("auth_method") not in (None, "api_key") or \
            model.get("auth_type") not in (None, "api_key"):
        result.skip(f"{name}.auth_method", "only API keys are supported")
    for key in ("retry", "max_retries", "concurrent_requests", "async_mode"):
        if key in model:
            result.skip(f"{name}.{key}", "retries and concurrency follow the rate limits")
