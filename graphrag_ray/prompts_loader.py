"""Prompt files: built-ins ship in the package (from the top-level prompts/ folder); a user's
prompt folder (prompts.dir, written by `graphrag-ray init`) overrides them file by file."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.errors import ConfigError

PROMPT_NAMES = (
    "extract_graph", "glean_check", "glean_continue", "extract_claims",
    "resolve_entities", "summarize_descriptions", "community_report", "global_map", "global_reduce",
    "global_map_single", "local_answer", "basic_answer", "text_map", "text_map_single",
    "rate_community", "hypothetical_answer",
    "drift_step", "drift_reduce",
    "lazy_subquestions", "lazy_relevance", "lazy_map", "lazy_answer",
    "eval_personas", "eval_questions", "eval_judge", "eval_claims",
    "tune_domain", "tune_persona", "tune_entity_types",
)

PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


_PACKAGE_DIR = Path(__file__).resolve().parent
# A source checkout (editable install, `ray job submit --working-dir .`) has prompts/ beside the
# package; a wheel carries them inside it.
BUILTIN_PROMPTS_DIR = next(
    (d for d in (_PACKAGE_DIR.parent / "prompts", _PACKAGE_DIR / "_prompts") if d.is_dir()),
    _PACKAGE_DIR.parent / "prompts")


def builtin_prompt(name: str) -> str:
    return (BUILTIN_PROMPTS_DIR / f"{name}.txt").read_text("utf-8")


def load_prompts(config: GraphRagConfig) -> dict[str, str]:
    prompts = {}
    folder = Path(config.prompts.dir) if config.prompts.dir else None
    if folder is not None and not folder.is_dir():
        raise ConfigError(f"prompts.dir {folder} is not a folder")
    for name in PROMPT_NAMES:
        override = folder / f"{name}.txt" if folder else None
        text = (override.read_text("utf-8") if override and override.exists()
                else builtin_prompt(name))
        # The language is the job's, not the call's: filled in here, once.
        prompts[name] = text.replace("{language}", config.prompts.language
                                     or "the language of the text")
    return prompts


def render(template: str, **values: object) -> str:
    """Fill {name} placeholders that we know; other braces (JSON examples) stay as written."""
    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        return str(values[key]) if key in values else match.group(0)

    return PLACEHOLDER.sub(replace, template)


def prompt_version(template: str) -> str:
    return hashlib.sha256(template.encode("utf-8")).hexdigest()[:12]
