"""The documentation's generated reference pages: every configuration key (from the config
models: type, default, and the description its `Field` or the comment above it gives) and
every CLI command and flag (from the parser). `tests/test_docs.py` fails when a page differs
from what this writes or a key has no description.

    python scripts/docs_reference.py          # rewrite docs/reference/{configuration,cli}.md
"""

from __future__ import annotations

import argparse
import html
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from graphrag_ray import config as config_module  # noqa: E402
from graphrag_ray.cli import build_parser  # noqa: E402

PAGES = {"configuration": ROOT / "docs" / "reference" / "configuration.md",
         "cli": ROOT / "docs" / "reference" / "cli.md"}
_FIELD_LINE = re.compile(r"^    ([a-z_][a-z0-9_]*)\s*:")


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """Per field of `model` (its own, not inherited), the comment lines right above it, or
    the one ending its line."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in inspect.getsource(model).splitlines()[1:]:
        stripped = line.strip()
        if line.startswith("    #") and not line.startswith("     "):
            pending.append(stripped.lstrip("#").strip())
            continue
        match = _FIELD_LINE.match(line)
        if match:
            inline = line.split("  # ", 1)[1].strip() if "  # " in line else ""
            if inline or pending:
                comments[match.group(1)] = inline or " ".join(pending)
            pending = []
        elif not stripped or not line.startswith("     "):
            pending = []
    return comments


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """Field comments of `model` and the models it derives from (its own first)."""
    found: dict[str, str] = {}
    for klass in reversed(model.__mro__):
        if isinstance(klass, type) and issubclass(klass, BaseModel) and klass is not BaseModel:
            found.update(field_comments(klass))
    return found


def _type_name(annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    text = text or str(annotation)
    return text.replace("typing.", "").replace("NoneType", "None")


def _default(field) -> str:
    if field.default is not PydanticUndefined:
        value = field.default
    elif field.default_factory is not None:
        value = field.default_factory()
    else:
        return "(required)"
    if isinstance(value, BaseModel):
        return "(section)"
    if hasattr(value, "get_secret_value"):
        return "(secret)"
    try:
        return json.dumps(value)
    except TypeError:
        return str(value)


def described_fields(model: type[BaseModel], prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, description) of every leaf key under `model`, sections in
    order; a key without a description has ""."""
    rows = []
    comments = _comments(model)
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            rows += described_fields(annotation, key + ".")
            continue
        description = field.description or comments.get(name, "")
        rows.append((key, _type_name(annotation), _default(field), description))
    return rows


def _code(text: str) -> str:
    """Inline code a table cell can hold: a pipe in a Markdown code span would end the cell
    (or show its backslash), so the span is HTML with the pipe as an entity."""
    return f"<code>{html.escape(text).replace('|', '&#124;')}</code>"


def configuration_page() -> str:
    lines = ["# Configuration reference", "",
             "Generated from the config models (`graphrag_ray/config.py`) by "
             "`python scripts/docs_reference.py`: every key, its type, its default and what it "
             "is for. Set a key in `settings.yaml` (its section, then the key) or on any "
             "command with `--set section.key=value`; `graphrag-ray init DIR` writes a "
             "starter file. YAML values may use `${ENV}` or `${ENV:-default}`. Unknown keys "
             "and bad values are errors that name the key and the file. The API key is never "
             "written to the index, the manifest or logs.", ""]
    section = None
    for key, kind, default, description in described_fields(config_module.GraphRagConfig):
        top = key.split(".")[0]
        if top != section:
            if section is not None:
                lines.append("")
            section = top
            model = config_module.GraphRagConfig.model_fields[top].annotation
            lines += [f"## `{top}`", ""]
            doc = inspect.getdoc(model)
            if doc and model.__doc__ is not None and "__doc__" in model.__dict__:
                lines += [" ".join(doc.split()), ""]
            lines += ["| key | type | default | description |", "|---|---|---|---|"]
        cell = description.replace("|", "\\|")
        lines.append(f"| `{key}` | {_code(kind)} | {_code(default)} | {cell} |")
    return "\n".join(lines) + "\n"


def _actions(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| flag | default | help |", "|---|---|---|"]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        flag = ", ".join(action.option_strings) or action.dest
        default = "" if action.default in (None, argparse.SUPPRESS, False) else \
            f"`{action.default}`"
        text = (action.help or "").replace("|", "\\|").replace("%%", "%")
        rows.append(f"| `{flag}` | {default} | {text} |")
    return rows


def _commands(parser: argparse.ArgumentParser, name: str, depth: int) -> list[str]:
    lines = [f"{'#' * depth} `{name}`", ""]
    if parser.description:
        lines += [parser.description, ""]
    lines += ["```text", parser.format_usage().strip(), "```", ""]
    if any(not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
           for a in parser._actions):
        lines += _actions(parser) + [""]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for sub_name, sub in action.choices.items():
                if helps.get(sub_name):
                    sub.description = sub.description or helps[sub_name]
                lines += _commands(sub, f"{name} {sub_name}", min(depth + 1, 4))
    return lines


def cli_page() -> str:
    parser = build_parser()
    parser.prog = "graphrag-ray"
    lines = ["# CLI reference", "",
             "Generated from the command-line parser (`graphrag_ray/cli.py`) by "
             "`python scripts/docs_reference.py`. `graphrag-ray COMMAND --help` prints the "
             "same.", ""]
    return "\n".join(lines + _commands(parser, "graphrag-ray", 2)) + "\n"


def pages() -> dict[str, str]:
    return {"configuration": configuration_page(), "cli": cli_page()}


def main() -> int:
    for name, text in pages().items():
        PAGES[name].parent.mkdir(parents=True, exist_ok=True)
        PAGES[name].write_text(text, encoding="utf-8")
    missing = [key for key, _, _, text in described_fields(config_module.GraphRagConfig)
               if not text]
    if missing:
        print(f"{len(missing)} keys have no description: {', '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
