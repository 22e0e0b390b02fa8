"""Element instances -> merged elements.

Entities match by normalized name. When instances disagree on the type, the most frequent type
wins (ties: alphabetical; OTHER only when no instance says more) and every instance's
description is kept in `descriptions`.
Relationships match by their unordered endpoint pair (the graph is undirected); self-loops are
dropped and counted; an endpoint no entity record named becomes an entity of type UNKNOWN.
Edge weight = instance count / largest instance count (the paper's normalized count).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.arrow_rows import sorted_rows


def element_id(*parts: str) -> str:
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def description_digest(key: tuple[str, ...], descriptions: list[str]) -> int:
    """What a report reads of one element, as a signed 64-bit number: its key (an entity's
    title and type, a relationship's ordered ends, a claim's id) and its description list.
    Equal digests across versions: the element did not change (`reports/kept_reports`)."""
    text = "\x00".join(key) + "\x01" + "\x1f".join(descriptions)
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(),
                          "big", signed=True)


@dataclass
class MergeStats:
    entity_instances: int = 0
    relationship_instances: int = 0
    self_loops_dropped: int = 0
    entities_added_from_relationships: int = 0
    type_conflicts: int = 0
    shards: int = 0  # hash partitions merged (set by the merge functions, not summed)


def _unique(values: list[str]) -> list[str]:
    return [v for v in dict.fromkeys(v.strip() for v in values if v and v.strip())]


# Marks an instance's type as an extractor's guess (offline extraction: from the name's shape
# or one preposition before it, `nlp_extractor._guess_type`), which counts for
# `GUESS_WEIGHT` of a type with evidence.
GUESSED_TYPE = "?"
# Measured on the podcast corpus's 100 most frequent entities, hand-labelled
# (`tests/data/resolution_labels`): 12 wrong types at 1/3, 13 with guesses as strong as
# evidence (each chunk one vote), 14 with evidence always first (one strong PERSON cue made
# CHINA a person against its many "in China").
GUESS_WEIGHT = 1 / 3
# Guesses count only where at least this share of a name's instances make one: a stray "in
# Bitcoin", or a transcribed e-mail address "at BehindTheTech", says nothing of a name
# mentioned in a hundred chunks that say nothing more of it. Measured on the labelled top
# 100s: podcast 9 wrong types at 0, 7 at 0.05-0.1, 8 at 0.2 (VIRGINIA, CALIFORNIA lose their
# few "in"); novels 3 wrong up to 0.2, 6 at 0.25 (THORNFIELD, KELLYNCH lose theirs).
MIN_GUESS_SHARE = 0.1


# Joins the types a mention says one of without saying which ("at Pemberley", "at Pixar": a
# place or an organization, not a person): `_majority` gives its weight to whichever of
# them the name's other instances weigh more, the first on a tie.
EITHER = "|"


def _majority(types: list[str]) -> str:
    """The type with the most weight over the instances, a guess weighing `GUESS_WEIGHT`
    (ties: alphabetical); OTHER and UNKNOWN only when no instance gave a type of its own."""
    weights: Counter = Counter()
    undecided: Counter = Counter()  # "GEO|ORGANIZATION" -> weight
    guesses = sum(1 for kind in types if kind and kind.endswith(GUESSED_TYPE))
    heeded = guesses >= MIN_GUESS_SHARE * sum(1 for kind in types if kind)
    for kind in types:
        if kind and kind not in ("OTHER", "UNKNOWN"):
            guessed = kind.endswith(GUESSED_TYPE)
            if guessed and not heeded:
                continue
            kind = kind[:-1] if guessed else kind
            (undecided if EITHER in kind else weights)[kind] += \
                GUESS_WEIGHT if guessed else 1.0
    for kinds, weight in undecided.items():
        options = kinds.split(EITHER)
        weights[max(options, key=lambda k: (weights[k], -options.index(k)))] += weight
    counts = weights or Counter(t for t in types if t)
    if not counts:
        return "UNKNOWN"
    best = max(counts.values())
    return min(t for t, c in counts.items() if c == best)


def merge_elements(entity_instances: pa.Table, relationship_instances: pa.Table
                   ) -> tuple[pa.Table, pa.Table, MergeStats]:
    """Returns (entities, relationships) with description lists, before summarization."""
    return merge_sharded(entity_instances, relationship_instances, 1)


Pieces = tuple[pa.Table, pa.Table, pa.Table]  # one shard's entities, mentions, relationships


def partition_instances(entity_instances: pa.Table, relationship_instances: pa.Table,
                        n_shards: int) -> list[Pieces]:
    """Instances hash-partitioned by key (entity title; relationship endpoint pair), with each
    relationship's endpoints also routed, as mentions, to their entities' shards, so every
    shard holds everything its keys need. Partitioning a whole table, or each block of it and
    concatenating the blocks' pieces in order, gives the same shards."""
    mentions = endpoint_mentions(relationship_instances)
    pair_keys = [_pair_key(s, t) for s, t in zip(relationship_instances.column("source").to_pylist(),
                                                 relationship_instances.column("target").to_pylist())]
    return list(zip(_partition(entity_instances, entity_instances.column("title"), n_shards),
                    _partition(mentions, mentions.column("title"), n_shards),
                    _partition(relationship_instances, pa.array(pair_keys, pa.string()),
                               n_shards)))


def merge_shard(pieces: Pieces) -> tuple[pa.Table, pa.Table, MergeStats]:
    entity_instances, mentions, relationship_instances = pieces
    entities, entity_stats = merge_entities(entity_instances, mentions)
    relationships, relationship_stats = merge_relationships(relationship_instances)
    return entities, relationships, _sum_stats([entity_stats, relationship_stats])


BY_TITLE = [("title", "ascending")]
BY_ENDS = [("source", "ascending"), ("target", "ascending")]


def combine_shards(merged: list[tuple[pa.Table, pa.Table, MergeStats]]
                   ) -> tuple[pa.Table, pa.Table, MergeStats]:
    """The shards' results as one graph: one order however many shards (by title, and by
    endpoint pair), and weights normalized by the global largest instance count."""
    entities = sorted_rows(pa.concat_tables([e for e, _, _ in merged]), BY_TITLE)
    relationships = sorted_rows(pa.concat_tables([r for _, r, _ in merged]), BY_ENDS)
    stats = _sum_stats([s for _, _, s in merged])
    stats.shards = len(merged)
    return entities, with_weights(relationships), stats


def merge_sharded(entity_instances: pa.Table, relationship_instances: pa.Table, n_shards: int,
                  map_shards: Callable[[Callable, list], list] = lambda fn, items: list(map(fn, items))
                  ) -> tuple[pa.Table, pa.Table, MergeStats]:
    """The same result as `merge_elements`, merged in `n_shards` independent pieces;
    `map_shards(fn, shards)` runs them (in parallel on Ray)."""
    return combine_shards(map_shards(merge_shard, partition_instances(
        entity_instances, relationship_instances, n_shards)))


def shard_of(keys: pa.Array | pa.ChunkedArray, n_shards: int) -> np.ndarray:
    """Stable across processes and runs (Python's str hash is salted per process)."""
    return np.array([int.from_bytes(hashlib.blake2b(k.encode("utf-8"), digest_size=8).digest(),
                                    "big") % n_shards for k in keys.to_pylist()], dtype=np.int64)


def _partition(table: pa.Table, keys: pa.Array | pa.ChunkedArray, n_shards: int) -> list[pa.Table]:
    shards = shard_of(keys, n_shards)
    return [table.filter(pa.array(shards == i)) for i in range(n_shards)]


def _ordered_pair(source: str, target: str) -> tuple[str, str]:
    """Relationships are undirected: A->B and B->A are one pair."""
    return (source, target) if source < target else (target, source)


def _pair_key(source: str, target: str) -> str:
    return "\x00".join(_ordered_pair(source, target))


def _sum_stats(parts: list[MergeStats]) -> MergeStats:
    total = MergeStats()
    for part in parts:
        for name, value in asdict(part).items():
            setattr(total, name, getattr(total, name) + value)
    return total


def endpoint_mentions(relationship_instances: pa.Table) -> pa.Table:
    """Each endpoint of each relationship instance (self-loops dropped): the text units it
    adds to its entity, and the entities no entity record named. A `seq` column (the chunk's
    position) is carried along when present."""
    has_seq = "seq" in relationship_instances.column_names
    columns = ["source", "target", "text_unit_id"] + (["seq"] if has_seq else [])
    titles, units, seqs = [], [], []
    for row in relationship_instances.select(columns).to_pylist():
        if row["source"] == row["target"]:
            continue
        for name in _ordered_pair(row["source"], row["target"]):
            titles.append(name)
            units.append(row["text_unit_id"])
            seqs.append(row.get("seq"))
    mentions = {"title": pa.array(titles, pa.string()),
                "text_unit_id": pa.array(units, pa.string())}
    if has_seq:
        mentions["seq"] = pa.array(seqs, pa.int64())
    return pa.table(mentions)


def merge_entities(entity_instances: pa.Table, mentions: pa.Table) -> tuple[pa.Table, MergeStats]:
    stats = MergeStats(entity_instances=entity_instances.num_rows)
    entities: dict[str, dict] = {}
    for row in entity_instances.to_pylist():
        entry = entities.setdefault(row["title"], {"types": [], "descriptions": [], "units": []})
        entry["types"].append(row["type"])
        entry["descriptions"].append(row["description"])
        entry["units"].append(row["text_unit_id"])
    for title, unit in zip(mentions.column("title").to_pylist(),
                           mentions.column("text_unit_id").to_pylist()):
        if title not in entities:
            stats.entities_added_from_relationships += 1
            entities[title] = {"types": [], "descriptions": [], "units": []}
        entities[title]["units"].append(unit)

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
    return pa.table({
        "id": pa.array([element_id("entity", t) for t in titles], pa.string()),
        "title": pa.array(titles, pa.string()), "type": pa.array(types, pa.string()),
        "descriptions": pa.array(descriptions, pa.list_(pa.string())),
        "text_unit_ids": pa.array(units, pa.list_(pa.string())),
        "frequency": pa.array(frequency, pa.int64()),
    }), stats


def merge_relationships(relationship_instances: pa.Table) -> tuple[pa.Table, MergeStats]:
    """Merged by unordered endpoint pair, with instance counts; `with_weights` adds weights."""
    stats = MergeStats(relationship_instances=relationship_instances.num_rows)
    pairs: dict[tuple[str, str], dict] = {}
    for row in relationship_instances.to_pylist():
        source, target = row["source"], row["target"]
        if source == target:
            stats.self_loops_dropped += 1
            continue
        key = _ordered_pair(source, target)
        entry = pairs.setdefault(key, {"descriptions": [], "units": [], "count": 0})
        entry["descriptions"].append(row["description"])
        entry["units"].append(row["text_unit_id"])
        entry["count"] += 1
    keys = sorted(pairs)
    return pa.table({
        "id": pa.array([element_id("relationship", s, t) for s, t in keys], pa.string()),
        "source": pa.array([s for s, _ in keys], pa.string()),
        "target": pa.array([t for _, t in keys], pa.string()),
        "descriptions": pa.array([_unique(pairs[k]["descriptions"]) for k in keys],
                                 pa.list_(pa.string())),
        "text_unit_ids": pa.array([_unique(pairs[k]["units"]) for k in keys],
                                  pa.list_(pa.string())),
        "instance_count": pa.array([pairs[k]["count"] for k in keys], pa.int64()),
    }), stats


def with_weights(relationships: pa.Table) -> pa.Table:
    """Weight = instance count / the largest instance count in the whole graph."""
    counts = relationships.column("instance_count")
    max_count = (pc.max(counts).as_py() if relationships.num_rows else None) or 1
    return relationships.append_column(
        "weight", pc.divide(pc.cast(counts, pa.float64()), float(max_count)))


def edge_endpoints(entities: pa.Table, relationships: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Each relationship's source and target as row indices into `entities`."""
    index = {title: i for i, title in enumerate(entities.column("title").to_pylist())}
    sources = np.array([index[s] for s in relationships.column("source").to_pylist()],
                       dtype=np.int64)
    targets = np.array([index[t] for t in relationships.column("target").to_pylist()],
                       dtype=np.int64)
    return sources, targets


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
