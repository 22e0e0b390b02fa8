"""An index's graph as rows for exports and the explorer: entities with each level's
community, relationships by entity id, streamed part by part, optionally only a part of the
graph (one community, or one level's members)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.errors import InputError
from graphrag_ray.storage.index_store import IndexVersion

NODE_COLUMNS = ["id", "title", "type", "description", "degree", "frequency", "x", "y"]
EDGE_COLUMNS = ["id", "source", "target", "description", "weight", "instance_count",
                "text_unit_ids"]


@dataclass
class GraphPart:
    """Which entities (None: all) and which levels' communities to report per node."""
    entity_ids: set[str] | None
    levels: list[int]
    description: str  # what was selected, for messages and file headers


class CommunityIndex:
    """Per level, each entity's community (the communities table, structure only)."""

    def __init__(self, version: IndexVersion):
        table = version.read_table(schema.COMMUNITIES, ["community", "level", "entity_ids"])
        self.levels = sorted(set(table.column("level").to_pylist()))
        self.of: dict[int, dict[str, int]] = {level: {} for level in self.levels}
        self.members: dict[int, tuple[int, list[str]]] = {}
        for community, level, ids in zip(table.column("community").to_pylist(),
                                          table.column("level").to_pylist(),
                                          table.column("entity_ids").to_pylist()):
            self.members[community] = (level, ids)
            for entity_id in ids:
                self.of[level][entity_id] = community


def select_part(communities: CommunityIndex, level: int | None = None,
                community: int | None = None) -> GraphPart:
    if community is not None:
        if community not in communities.members:
            raise InputError(f"no community {community} in this index "
                             f"(communities 0..{max(communities.members, default=-1)})")
        at_level, ids = communities.members[community]
        return GraphPart(set(ids), [at_level], f"community {community} (level {at_level})")
    if level is not None:
        if level not in communities.of:
            raise InputError(f"no level {level} in this index (levels {communities.levels})")
        return GraphPart(set(communities.of[level]), [level], f"level {level}")
    return GraphPart(None, communities.levels, "the whole graph")


def iter_nodes(version: IndexVersion, communities: CommunityIndex, part: GraphPart
               ) -> Iterator[list[dict]]:
    """Entity rows, a part of the table at a time, each with `community_<level>` (-1: none)."""
    for table in version.iter_table(schema.ENTITIES, NODE_COLUMNS):
        rows = table.to_pylist()
        if part.entity_ids is not None:
            rows = [r for r in rows if r["id"] in part.entity_ids]
        for row in rows:
            for level in part.levels:
                row[f"community_{level}"] = communities.of[level].get(row["id"], -1)
        yield rows


def entity_ids_by_title(version: IndexVersion) -> dict[str, str]:
    table = version.read_table(schema.ENTITIES, ["id", "title"])
    return dict(zip(table.column("title").to_pylist(), table.column("id").to_pylist()))


def iter_edges(version: IndexVersion, part: GraphPart, ids: dict[str, str]
               ) -> Iterator[list[dict]]:
    """Relationship rows with `source`/`target` as entity ids (titles kept as
    `source_title`/`target_title`) and `text_unit_count`, inside the part only."""
    for table in version.iter_table(schema.RELATIONSHIPS, EDGE_COLUMNS):
        rows = []
        for row in table.to_pylist():
            source, target = ids[row["source"]], ids[row["target"]]
            if part.entity_ids is not None and not (source in part.entity_ids
                                                    and target in part.entity_ids):
                continue
            row["source_title"], row["target_title"] = row["source"], row["target"]
            row["source"], row["target"] = source, target
            row["text_unit_count"] = len(row.pop("text_unit_ids") or [])
            rows.append(row)
        yield rows


def community_rows(version: IndexVersion) -> pa.Table:
    """Communities with their report's title, rating and summary (for Neo4j's graph)."""
    communities = version.read_table(schema.COMMUNITIES, ["community", "level", "parent",
                                                          "size"])
    reports = version.read_table(schema.COMMUNITY_REPORTS,
                                 ["community", "title", "rank", "summary"])
    return communities.join(reports, "community", join_type="left outer").sort_by("community")
