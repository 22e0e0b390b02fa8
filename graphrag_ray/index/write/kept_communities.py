"""The communities table rows an update keeps: the previous version's parts linked where
their communities are still what they were.

A community's row is its number, level, parent, children and title, its members, the
relationships inside it and their text units. An update whose merge knows what it touched
(`Graph.touched`: per entity, whether its merged row or one of its relationships may have
changed) can tell a row unchanged without building it: the same number, level, parent,
children and title, the same members (by id, in order), none of them touched. Then the
relationships inside are the same (a relationship that appeared, went or changed touches
its ends), with the same text units, so the row a full write would give is the previous
one. A small update keeps nearly every row, which a thread of the driver built again and wrote
on every update, beside the reports.

The kept rows keep their `period` (the day their community was last written), as kept
reports keep theirs.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.index.graph.communities import Community
from graphrag_ray.storage import IndexVersion

# What a previous part is read for: its place, its title and its members.
_COLUMNS = ["id", "community", "level", "parent", "children", "title", "entity_ids"]


def community_title(community: Community) -> str:
    return f"Community {community.id}" + (" (small components sharing documents)"
                                          if community.loose else "")


def link_kept_communities(previous: IndexVersion, staged: IndexVersion,
                          communities: list[Community], entity_ids: pa.Array,
                          touched: np.ndarray) -> tuple[set[int], int]:
    """The previous version's communities parts linked into `staged` where most of their
    rows are still the table's (`IndexVersion.link_parts`); `entity_ids`: by entity row,
    `touched`: per entity row, whether the update's merge touched it. Returns the
    communities the linked parts serve and the number the table's new parts start from
    (0 when nothing is linked)."""
    by_id = {c.id: c for c in communities}
    touched = np.asarray(touched, dtype=bool)

    def serving(_: int, part: pa.Table) -> tuple[np.ndarray, None]:
        return kept_rows(part, by_id, entity_ids, touched), None

    linked, parts = staged.link_parts(previous, schema.COMMUNITIES, _COLUMNS, serving)
    served = {community for _, part, serves in linked
              for community in part.column("community").filter(pa.array(serves)).to_pylist()}
    return served, parts if linked else 0


def kept_rows(part: pa.Table, by_id: dict[int, Community], entity_ids: pa.Array,
              touched: np.ndarray) -> np.ndarray:
    """Per row of a previous communities part (`_COLUMNS`), whether it is the row of a
    community of `by_id` as it is now: the same place and title, the same members in the
    same order, none of them touched."""
    candidates, members = [], []
    for row, (number, level, parent, children, title, size) in enumerate(zip(
            *(part.column(name).to_pylist() for name in _COLUMNS[1:6]),
            pc.list_value_length(part.column("entity_ids")).to_pylist())):
        community = by_id.get(number)
        if community is None or not size or (
                community.level, community.parent, len(community.members),
                community.children, community_title(community)) != \
                (level, parent, size, children or [], title):
            continue
        candidates.append(row)
        members.append(community.members)
    kept = np.zeros(part.num_rows, dtype=bool)
    if not candidates:
        return kept
    rows = np.asarray(candidates, dtype=np.int64)
    now = np.concatenate(members).astype(np.int64)
    before = pc.list_flatten(part.column("entity_ids").combine_chunks().take(pa.array(rows)))
    differs = pc.not_equal(entity_ids.take(pa.array(now)), before).to_numpy(
        zero_copy_only=False) | touched[now]
    starts = np.concatenate([[0], np.cumsum([len(m) for m in members])[:-1]])
    changed = np.add.reduceat(differs.astype(np.int64), starts) > 0 if len(now) else \
        np.zeros(len(rows), dtype=bool)
    kept[rows] = ~changed
    return kept
