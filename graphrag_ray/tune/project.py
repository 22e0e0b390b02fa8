"""The folder prompt-tune writes, a project like `graphrag-ray init`'s but fitted to a corpus:

    DIR/settings.yaml   your settings (the file given, as written: `${ENV}` references stay
                        references, so no key is copied out) with every `--set`, plus
                        prompts.dir: prompts, prompts.language and extraction.entity_types
    DIR/prompts/        the tuned prompt files (and, when your settings named a prompts
                        folder, your other prompt files, copied)
    DIR/tuning.json     what was decided and from what: language, domain, persona, types,
                        worked examples, the sampling, the model asked

`graphrag-ray index --config DIR/settings.yaml ...` then builds with them.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import yaml

from graphrag_ray.config import apply_override
from graphrag_ray.errors import ConfigError
from graphrag_ray.tune.tuning import Tuning


def raw_settings(config_path: str | None, overrides: list[str]) -> dict:
    """The settings file as written (environment references not filled in) with the
    overrides applied."""
    data: dict = {}
    if config_path:
        loaded = yaml.safe_load(Path(config_path).read_text(encoding="utf-8"))
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{config_path} must hold a mapping of sections")
        data = loaded or {}
    for assignment in overrides:
        apply_override(data, assignment)
    return data


def write_project(folder: Path, tuning: Tuning, prompts: dict[str, str],
                  settings: dict, own_prompts_dir: str | None, details: dict) -> None:
    """Writes the folder (see the module's docstring); files it writes are replaced, others
    in it are left alone."""
    target = folder / "prompts"
    target.mkdir(parents=True, exist_ok=True)
    if own_prompts_dir and Path(own_prompts_dir).is_dir():
        for path in sorted(Path(own_prompts_dir).glob("*.txt")):
            if path.stem not in prompts:
                shutil.copyfile(path, target / path.name)
    for name, text in prompts.items():
        (target / f"{name}.txt").write_text(text, encoding="utf-8")
    settings = dict(settings)
    settings["prompts"] = {**(settings.get("prompts") or {}), "dir": "prompts",
                           "language": tuning.language}
    settings["extraction"] = {**(settings.get("extraction") or {}),
                              "entity_types": tuning.entity_types}
    header = (f"# Written by graphrag-ray prompt-tune on "
              f"{datetime.now(timezone.utc).date().isoformat()} ({tuning.method}): prompts "
              f"fitted to the corpus, in {tuning.language}.\n"
              "# tuning.json beside this file says what was decided and from what.\n")
    (folder / "settings.yaml").write_text(
        header + yaml.safe_dump(settings, sort_keys=False, allow_unicode=True),
        encoding="utf-8")
    (folder / "tuning.json").write_text(
        json.dumps({**tuning.to_json(), **details}, indent=2, ensure_ascii=False),
        encoding="utf-8")
