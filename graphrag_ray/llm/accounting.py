"""Per-stage LLM accounting: usage columns that workers return, their sums, and cost."""

from __future__ import annotations

import pyarrow as pa

from graphrag_ray.config import LLMConfig
from graphrag_ray.llm.client import USAGE_FIELDS, Usage

USAGE_SCHEMA_FIELDS = [pa.field(name, pa.int64()) for name in USAGE_FIELDS]


def usage_row(usage: Usage | None) -> dict[str, int]:
    return usage.as_dict() if usage is not None else dict.fromkeys(USAGE_FIELDS, 0)


def table_usage(table: pa.Table) -> Usage:
    total = Usage()
    total.add({name: sum(v or 0 for v in table.column(name).to_pylist())
               for name in USAGE_FIELDS if name in table.column_names})
    return total


def cost_usd(usage: Usage | dict, config: LLMConfig, batch: bool = False) -> float | None:
    """Prompt tokens the provider served from its prompt cache cost the price table's third
    figure (the cached-input price) when it has one, the full prompt price otherwise.
    `batch`: at the Batch API's price."""
    price = config.batch_price() if batch else config.price()
    if price is None:
        return None
    values = usage if isinstance(usage, dict) else usage.as_dict()
    cached = values.get("cached_tokens", 0) or 0
    cached_price = price[2] if len(price) > 2 else price[0]
    return round(((values["prompt_tokens"] - cached) * price[0] + cached * cached_price
                  + values["completion_tokens"] * price[1]) / 1e6, 6)


def format_usage_table(stages: dict[str, dict]) -> str:
    """Aligned text table of the per-stage figures the manifest records."""
    columns = ["calls", "cache_hits", "retries", "rate_limited", "failed_calls",
               "prompt_tokens", "cached_tokens", "completion_tokens", "wall_s", "cost_usd"]
    rows = [["stage", *columns]]
    for stage, figures in stages.items():
        rows.append([stage] + ["-" if figures.get(c) is None else f"{figures[c]:g}"
                               if isinstance(figures.get(c), float) else str(figures.get(c, 0))
                               for c in columns])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.rjust(width) if i else cell.ljust(width)
                               for i, (cell, width) in enumerate(zip(row, widths)))
                     for row in rows)
