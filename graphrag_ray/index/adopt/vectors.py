"""Microsoft GraphRAG's vectors, read from its LanceDB store into our embedding tables.

Its three embedded fields are ours (`entity_description`, `text_unit_text`,
`community_full_content`), ids and all, so a vector is taken as it is: what the user paid
for is not embedded again. Reading Lance needs `pylance` (installed with graphrag-ray); without
it, or without the store, the adoption embeds the texts with the configured embeddings instead,
and says so.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.index.embed.feed import EMBEDDING_SCHEMA

# Its LanceDB table -> our embeddings table.
LANCE_TABLES = {"entity_description": schema.ENTITY_DESCRIPTION_EMBEDDINGS,
                "text_unit_text": schema.TEXT_UNIT_EMBEDDINGS,
                "community_full_content": schema.REPORT_EMBEDDINGS}


def lance_store(output_dir: Path) -> Path | None:
    """Where its vectors are: `output/lancedb` (its default `db_uri`), when it holds them."""
    store = output_dir / "lancedb"
    return store if any((store / f"{name}.lance").is_dir() for name in LANCE_TABLES) else None


def read_lance_vectors(store: Path) -> tuple[dict[str, pa.Table] | None, str]:
    """Our embedding tables from the store; (None, why) when they cannot be read."""
    try:
        import lance
    except ImportError:
        return None, ("its vectors are in LanceDB, which needs pylance "
                      "(pip install pylance)")
    tables = {}
    for theirs, ours in LANCE_TABLES.items():
        path = store / f"{theirs}.lance"
        if not path.is_dir():
            return None, f"{path} is missing"
        data = lance.dataset(str(path)).to_table(columns=["id", "vector"])
        tables[ours] = pa.table([data.column("id").cast(pa.string()),
                                 data.column("vector").cast(pa.list_(pa.float32()))],
                                schema=EMBEDDING_SCHEMA)
    return tables, ""


def dimensions_of(tables: dict[str, pa.Table]) -> int | None:
    for table in tables.values():
        if table.num_rows:
            return len(table.column("vector")[0])
    return None
