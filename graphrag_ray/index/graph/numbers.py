"""Entities' and relationships' `human_readable_id`, kept across versions.

Reports cite entities and relationships by these numbers (`[Data: Entities (12)]`), and an
update keeps the reports of the communities it did not touch, text and all. Numbered by
their place in the table, the elements moved whenever an update added one that sorts before
them, and a kept report's citations named other elements. A build numbers them 0, 1, 2, ...
in table order; an update gives each element the number the previous version gave its id and
numbers new ones after the previous largest, in table order (as Microsoft GraphRAG's
incremental update does). Numbers of elements gone are not given again within that update.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.index.graph.stage import Graph
from graphrag_ray.storage import IndexVersion

if TYPE_CHECKING:
    from graphrag_ray.index.previous_version import PreviousTables

NUMBER = "human_readable_id"
# What an update reads of the previous entities and relationships to number them.
NUMBERED = ["id", NUMBER]


def kept_numbers(ids: pa.Array | pa.ChunkedArray, before: pa.Table | None) -> pa.Array:
    """Per id, its number in `before` (id, human_readable_id), or the next after the
    largest there for an id it lacks, in order; 0, 1, 2, ... without `before`."""
    if before is None or not before.num_rows:
        return pa.array(np.arange(len(ids), dtype=np.int64))
    at = pc.index_in(ids, value_set=before.column("id").combine_chunks())
    numbers = before.column(NUMBER).combine_chunks().take(at).fill_null(0).to_numpy().copy()
    new = pc.is_null(at).to_numpy(zero_copy_only=False)
    numbers[new] = pc.max(before.column(NUMBER)).as_py() + 1 + np.arange(int(new.sum()))
    return pa.array(numbers, pa.int64())


def number_elements(graph: Graph, previous: IndexVersion | PreviousTables | None) -> Graph:
    """The graph's entities and relationships with their `human_readable_id`; `previous`:
    the version an update numbers after (its tables, maybe read ahead)."""
    tables = {}
    for name, table in ((schema.ENTITIES, graph.entities),
                        (schema.RELATIONSHIPS, graph.relationships)):
        before = previous.read_table(name, NUMBERED) \
            if previous is not None and previous.has_table(name) else None
        tables[name] = table.append_column(NUMBER, kept_numbers(table.column("id"), before))
    return replace(graph, entities=tables[schema.ENTITIES],
                   relationships=tables[schema.RELATIONSHIPS])
