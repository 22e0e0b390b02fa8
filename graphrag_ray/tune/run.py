"""prompt-tune from start to end: sample the corpus, decide its language, tune (the LLM when
the settings extract with one, else offline), compose the prompts, write the folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import ConfigError, InputError
from graphrag_ray.llm.cache import ResponseCache
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.llm.embedding_methods import Embedder
from graphrag_ray.prompts_loader import PROMPT_NAMES, builtin_prompt, load_prompts
from graphrag_ray.tune.compose import tuned_extraction, tuned_prompts
from graphrag_ray.tune.language import detect_language
from graphrag_ray.tune.project import raw_settings, write_project
from graphrag_ray.tune.sample import choose, corpus_chunks
from graphrag_ray.tune.tuning import (
    NO_EXAMPLE, Tuning, describe_corpus, tune_offline, worked_examples)


@dataclass
class TuneRequest:
    input_url: str
    output: str
    config_path: str | None = None
    overrides: tuple[str, ...] = ()
    sampling: str = "auto"
    chunks: int = 15
    domain: str | None = None
    language: str | None = None
    seed: int = 0


def prompt_tune(config: GraphRagConfig, request: TuneRequest) -> Tuning:
    """Tunes the prompts to the corpus and writes the folder; returns what was decided."""
    if request.chunks < 1:
        raise ConfigError("--chunks must be at least 1")
    chunks = corpus_chunks(request.input_url, config)
    if not chunks:
        raise InputError(f"no text to sample under {request.input_url}")
    # Replies are kept (in `cache.url`, else `OUTPUT/cache`): a rerun pays for none again.
    cache = ResponseCache(config.cache.url or str(Path(request.output) / "cache")) \
        if config.cache.enabled else None
    # `auto` ranks chunks by the configured embeddings (offline: the hashing method).
    embed = Embedder(config.embeddings, LLMServices(cache=cache)).embed \
        if request.sampling == "auto" else None
    picked = [chunks[i] for i in choose(chunks, request.sampling, request.chunks,
                                        request.seed, embed)]
    language = request.language or detect_language(picked)
    # Tuned prompts are written from the built-ins; the tuning's own questions may be the
    # user's (`prompts.dir`).
    builtins = {name: builtin_prompt(name) for name in PROMPT_NAMES}
    if config.extraction.method == "llm":
        chat = LLMServices(cache=cache, declared={"language": language}).chat(
            config.llm, stage="prompt_tune")
        tuning = describe_corpus(chat, load_prompts(config), config, picked, language,
                                 request.domain)
        template = tuned_extraction(builtins["extract_graph"], tuning, with_examples=False)
        tuning.examples = worked_examples(chat, config, picked, tuning, template)
        if not tuning.examples:
            tuning.notes.append(NO_EXAMPLE)
    else:
        tuning = tune_offline(config, picked, language, request.domain)
    folder = Path(request.output)
    write_project(folder, tuning, tuned_prompts(builtins, tuning),
                  raw_settings(request.config_path, list(request.overrides)),
                  config.prompts.dir, {
                      "sampling": request.sampling, "chunks_sampled": len(picked),
                      "corpus_chunks": len(chunks), "seed": request.seed,
                      "language_given": request.language is not None,
                      "model": config.llm.model if tuning.method == "llm" else None})
    return tuning
