"""A resolution applied to the merged graph's structure and descriptions.

Each alias's entity row goes; its canonical entity takes its text units and description
list (the canonical's first) and lists its aliases. A relationship with an alias at one end
moves to the canonical entity; two that now join the same pair become one (instance counts
added, descriptions and text units joined); one that now joins an entity to itself goes.
Weights are normalised again over the whole graph.

The driver changes the structure (`fold_structure`); one task joins the changed elements'
description lists into a new block (`fold_descriptions`), so the text stays in the object
store. Changed elements point at the new block's rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.index.graph.description_blocks import merged_block
from graphrag_ray.index.graph.merge import (
    _ordered_pair, _unique, description_digest, element_id, with_weights)
from graphrag_ray.index.reports.context import inner_cells_tokens
from graphrag_ray.index.resolve.clusters import Resolution
from graphrag_ray.index.resolve.scoring import UNTYPED


@dataclass
class FoldWork:
    """The changed elements, entities first, in the new block's row order: their context
    cells and the (shard block, row) of each description list they join."""
    cells: list[dict] = field(default_factory=list)
    sources: list[list[tuple[int, int]]] = field(default_factory=list)


@dataclass
class FoldStats:
    entities_merged: int = 0
    relationships_merged: int = 0
    self_loops_dropped: int = 0


def _addresses(table: pa.Table) -> list[tuple[int, int]]:
    return list(zip(table.column("description_shard").to_pylist(),
                    table.column("description_row").to_pylist()))


def fold_structure(entities: pa.Table, relationships: pa.Table, resolution: Resolution,
                   new_block: int) -> tuple[pa.Table, pa.Table, FoldWork, FoldStats]:
    """`new_block`: the shard number the joined descriptions will have. The changed rows'
    `inner_tokens`, `description_count` and `description_digest` are placeholders until
    `with_folded_counts`."""
    work, stats = FoldWork(), FoldStats()
    titles = entities.column("title").to_pylist()
    members: dict[int, list[int]] = {}
    for alias in resolution.aliases:
        members.setdefault(alias.canonical, [alias.canonical]).append(alias.row)
    stats.entities_merged = len(resolution.aliases)
    alias_title = {titles[a.row]: titles[a.canonical] for a in resolution.aliases}

    units = entities.column("text_unit_ids").to_pylist()
    types = entities.column("type").to_pylist()
    addresses = _addresses(entities)
    shard = entities.column("description_shard").to_numpy().copy()
    row = entities.column("description_row").to_numpy().copy()
    frequency = entities.column("frequency").to_numpy().copy()
    aliases: list[list[str]] = [[] for _ in titles]
    for canonical, rows in sorted(members.items()):
        joined = _unique([u for r in rows for u in units[r]])
        units[canonical] = joined
        frequency[canonical] = len(joined)
        if types[canonical] in UNTYPED:
            types[canonical] = next((types[r] for r in rows if types[r] not in UNTYPED),
                                    types[canonical])
        aliases[canonical] = sorted(titles[r] for r in rows[1:])
        shard[canonical], row[canonical] = new_block, len(work.cells)
        work.cells.append({"title": titles[canonical], "type": types[canonical]})
        work.sources.append([addresses[r] for r in rows])
    keep = np.ones(len(titles), dtype=bool)
    keep[[a.row for a in resolution.aliases]] = False
    order = entities.column_names + ["aliases"]
    entities = entities.drop_columns(
        ["type", "text_unit_ids", "frequency", "description_shard", "description_row"]
    ).append_column("type", pa.array(types, pa.string())).append_column(
        "text_unit_ids", pa.array(units, pa.list_(pa.string()))).append_column(
        "frequency", pa.array(frequency, pa.int64())).append_column(
        "description_shard", pa.array(shard)).append_column(
        "description_row", pa.array(row)).append_column(
        "aliases", pa.array(aliases, pa.list_(pa.string()))).filter(pa.array(keep)).select(order)

    touched = pc.or_(pc.is_in(relationships.column("source"), pa.array(list(alias_title))),
                     pc.is_in(relationships.column("target"), pa.array(list(alias_title))))
    moved, unmoved = relationships.filter(touched), relationships.filter(pc.invert(touched))
    existing = {pair: i for i, pair in enumerate(zip(unmoved.column("source").to_pylist(),
                                                     unmoved.column("target").to_pylist()))}
    groups: dict[tuple[str, str], list[int]] = {}  # new pair -> moved rows
    for i, (s, t) in enumerate(zip(moved.column("source").to_pylist(),
                                   moved.column("target").to_pylist())):
        s, t = alias_title.get(s, s), alias_title.get(t, t)
        if s == t:
            stats.self_loops_dropped += 1
            continue
        groups.setdefault(_ordered_pair(s, t), []).append(i)
    absorbed = [existing[p] for p in groups if p in existing]
    keep_unmoved = np.ones(unmoved.num_rows, dtype=bool)
    keep_unmoved[absorbed] = False
    stats.relationships_merged = moved.num_rows - stats.self_loops_dropped - len(groups) \
        + len(absorbed)
    moved_units = moved.column("text_unit_ids").to_pylist()
    moved_counts = moved.column("instance_count").to_pylist()
    moved_addresses = _addresses(moved)
    unmoved_units = unmoved.column("text_unit_ids").to_pylist()
    unmoved_counts = unmoved.column("instance_count").to_pylist()
    unmoved_addresses = _addresses(unmoved)
    new_rows = []
    for (s, t), rows in sorted(groups.items()):
        parts_units = [moved_units[r] for r in rows]
        parts_count = [moved_counts[r] for r in rows]
        parts_addresses = [moved_addresses[r] for r in rows]
        if (s, t) in existing:  # the canonical pair's own row comes first
            j = existing[(s, t)]
            parts_units.insert(0, unmoved_units[j])
            parts_count.insert(0, unmoved_counts[j])
            parts_addresses.insert(0, unmoved_addresses[j])
        new_rows.append({"id": element_id("relationship", s, t), "source": s, "target": t,
                         "text_unit_ids": _unique([u for us in parts_units for u in us]),
                         "instance_count": sum(parts_count), "description_count": 0,
                         "inner_tokens": 0, "description_digest": 0,
                         "description_shard": new_block,
                         "description_row": len(work.cells)})
        work.cells.append({"source": s, "target": t})
        work.sources.append(parts_addresses)
    columns = [c for c in relationships.column_names if c != "weight"]
    relationships = pa.concat_tables([
        unmoved.filter(pa.array(keep_unmoved)).select(columns),
        pa.Table.from_pylist(new_rows, schema=relationships.select(columns).schema)]).sort_by(
        [("source", "ascending"), ("target", "ascending")])
    return entities, with_weights(relationships), work, stats


def fold_descriptions(work: FoldWork, encoding: str, *blocks: pa.Table
                      ) -> tuple[dict[str, list[int]], pa.Table]:
    """The changed elements' description lists joined (the new block), and each one's figures
    by column: context row tokens, description count, digest."""
    lists = [_unique([d for shard, row in sources
                      for d in blocks[shard].column("descriptions")[row].as_py()])
             for sources in work.sources]
    block = merged_block(lists)
    current = block.column("description").to_pylist()
    inner = [inner_cells_tokens({**cells, "description": d}, encoding)
             for cells, d in zip(work.cells, current)]
    return {"inner_tokens": inner, "description_count": [len(d) for d in lists],
            "description_digest": [description_digest(tuple(cells.values()), d)
                                   for cells, d in zip(work.cells, lists)]}, block


def with_folded_counts(table: pa.Table, new_block: int, figures: dict[str, list[int]]
                       ) -> pa.Table:
    """The changed rows (those in `new_block`) get their figures (`fold_descriptions`)."""
    changed = table.column("description_shard").to_numpy() == new_block
    at = table.column("description_row").to_numpy()[changed]
    for name, values in figures.items():
        column = table.column(name).to_numpy().copy()
        column[changed] = np.asarray(values, dtype=np.int64)[at]
        table = table.set_column(table.column_names.index(name), name,
                                 pa.array(column, pa.int64()))
    return table
