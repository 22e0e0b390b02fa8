"""Element instances -> merged elements.

Entities match by normalized name. When instances disagree on the type, the most frequent type
wins (ties: alphabetical) and every instance's description is kept in `descriptions`.
Relationships match by their unordered endpoint pair (the graph is undirected); self-loops are
dropped and counted; an endpoint no entity record named becomes an entity of type UNKNOWN.
Edge weight = instance count / largest instance count (the paper's normalized count).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass

import pyarrow as pa


def element_id(*parts: str) -> str:
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


@dataclass
class MergeStats:
    entity_instances: int = 0
    relationship_instances: int = 0
    self_loops_dropped: int = 0
    entities_added_from_relationships: int = 0
    type_conflicts: int = 0


def _unique(values: list[str]) -> list[str]:
    return [v for v in dict.fromkeys(v.strip() for v in values if v and v.strip())]


def _majority(types: list[str]) -> str:
    counts = Counter(t for t in types if t)
    if not counts:
        return "UNKNOWN"
    best = max(counts.values())
    return min(t for t, c in counts.items() if c == best)


def merge_elements(entity_instances: pa.Table, relationship_instances: pa.Table
                   ) -> tuple[pa.Table, pa.Table, MergeStats]:
    """Returns (entities, relationships) with description lists, before summarization."""
    stats = MergeStats(entity_instances=entity_instances.num_rows,
                       relationship_instances=relationship_instances.num_rows)
    entities: dict[str, dict] = {}
    for row in entity_instances.to_pylist():
        entry = entities.setdefault(row["title"], {"types": [], "descriptions": [], "units": []})
        entry["types"].append(row["type"])
        entry["descriptions"].append(row["description"])
        entry["units"].append(row["text_unit_id"])

    pairs: dict[tuple[str, str], dict] = {}
    for row in relationship_instances.to_pylist():
        source, target = row["source"], row["target"]
        if source == target:
            stats.self_loops_dropped += 1
            continue
        key = (source, target) if source < target else (target, source)
        entry = pairs.setdefault(key, {"descriptions": [], "units": [], "count": 0})
        entry["descriptions"].append(row["description"])
        entry["units"].append(row["text_unit_id"])
        entry["count"] += 1
        for name in key:
            if name not in entities:
                stats.entities_added_from_relationships += 1
                entities[name] = {"types": [], "descriptions": [], "units": []}
            entities[name]["units"].append(row["text_unit_id"])

    titles = sorted(entities)
    types, descriptions, units, frequency = [], [], [], []
    for title in titles:
        entry = entities[title]
        if len(set(t for t in entry["types"] if t)) > 1:
            stats.type_conflicts += 1
        types.append(_majority(entry["types"]))
        descriptions.append(_unique(entry["descriptions"]))
        unit_ids = _unique(entry["units"])
        units.append(unit_ids)
        frequency.append(len(unit_ids))
    entity_table = pa.table({
        "id": [element_id("entity", t) for t in titles],
        "title": titles, "type": types, "descriptions": descriptions,
        "text_unit_ids": units, "frequency": pa.array(frequency, pa.int64()),
    })

    keys = sorted(pairs)
    max_count = max((pairs[k]["count"] for k in keys), default=1)
    relationship_table = pa.table({
        "id": [element_id("relationship", s, t) for s, t in keys],
        "source": [s for s, _ in keys], "target": [t for _, t in keys],
        "descriptions": [_unique(pairs[k]["descriptions"]) for k in keys],
        "text_unit_ids": [_unique(pairs[k]["units"]) for k in keys],
        "instance_count": pa.array([pairs[k]["count"] for k in keys], pa.int64()),
        "weight": pa.array([pairs[k]["count"] / max_count for k in keys], pa.float64()),
    })
    return entity_table, relationship_table, stats


def add_degrees(entities: pa.Table, relationships: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Node degree (distinct neighbours) and edge combined degree (source + target degree)."""
    degree = Counter()
    for source, target in zip(relationships.column("source").to_pylist(),
                              relationships.column("target").to_pylist()):
        degree[source] += 1
        degree[target] += 1
    entity_degree = [degree[t] for t in entities.column("title").to_pylist()]
    combined = [degree[s] + degree[t] for s, t in zip(relationships.column("source").to_pylist(),
                                                      relationships.column("target").to_pylist())]
    entities = entities.append_column("degree", pa.array(entity_degree, pa.int64()))
    relationships = relationships.append_column("combined_degree", pa.array(combined, pa.int64()))
    return entities, relationships
