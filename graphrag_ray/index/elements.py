"""What an element (an entity, a relationship) is to every stage that handles one: its id,
the type marks extractors set, its key's shard, its instances cut into the shards the merge
reads, and the names resolution gives it (`Renames`, which claims and mentions follow).
Extraction, the merge, resolution, reports and updates all share these, so they sit below
them all."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa


def element_id(*parts: str) -> str:
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


# Marks an instance's type as an extractor's guess (offline extraction: from the name's shape
# or one preposition before it, `nlp_extractor._guess_type`), which counts for
# `GUESS_WEIGHT` of a type with evidence.
GUESSED_TYPE = "?"


# Joins the types a mention says one of without saying which ("at Pemberley", "at Pixar": a
# place or an organization, not a person): `_majority` gives its weight to whichever of
# them the name's other instances weigh more, the first on a tie.
EITHER = "|"


Pieces = tuple[pa.Table, pa.Table, pa.Table]  # one shard's entities, mentions, relationships


def partition_instances(entity_instances: pa.Table, relationship_instances: pa.Table,
                        n_shards: int) -> list[Pieces]:
    """Instances hash-partitioned by key (entity title; relationship endpoint pair), with each
    relationship's endpoints also routed, as mentions, to their entities' shards, so every
    shard holds everything its keys need. Partitioning a whole table, or each block of it and
    concatenating the blocks' pieces in order, gives the same shards."""
    mentions = endpoint_mentions(relationship_instances)
    pair_keys = [pair_key(s, t) for s, t in zip(
        relationship_instances.column("source").to_pylist(),
        relationship_instances.column("target").to_pylist())]
    return list(zip(_partition(entity_instances, entity_instances.column("title"), n_shards),
                    _partition(mentions, mentions.column("title"), n_shards),
                    _partition(relationship_instances, pa.array(pair_keys, pa.string()),
                               n_shards)))


def shard_of(keys: pa.Array | pa.ChunkedArray, n_shards: int) -> np.ndarray:
    """Stable across processes and runs (Python's str hash is salted per process)."""
    return np.array([int.from_bytes(hashlib.blake2b(k.encode("utf-8"), digest_size=8).digest(),
                                    "big") % n_shards for k in keys.to_pylist()], dtype=np.int64)


def _partition(table: pa.Table, keys: pa.Array | pa.ChunkedArray, n_shards: int) -> list[pa.Table]:
    shards = shard_of(keys, n_shards)
    return [table.filter(pa.array(shards == i)) for i in range(n_shards)]


def ordered_pair(source: str, target: str) -> tuple[str, str]:
    """Relationships are undirected: A->B and B->A are one pair."""
    return (source, target) if source < target else (target, source)


def pair_key(source: str, target: str) -> str:
    return "\x00".join(ordered_pair(source, target))


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
        for name in ordered_pair(row["source"], row["target"]):
            titles.append(name)
            units.append(row["text_unit_id"])
            seqs.append(row.get("seq"))
    mentions = {"title": pa.array(titles, pa.string()),
                "text_unit_id": pa.array(units, pa.string())}
    if has_seq:
        mentions["seq"] = pa.array(seqs, pa.int64())
    return pa.table(mentions)


@dataclass
class Renames:
    """Which mentions take another name: an alias's everywhere, or a short name's in given
    text units; then, where a name is split between homonyms (`homonyms.py`), the mentions
    that name ends with in given text units take the split's name."""
    everywhere: dict[str, str] = field(default_factory=dict)  # alias -> canonical title
    in_units: dict[str, dict[str, str]] = field(default_factory=dict)  # alias -> unit -> title
    split: dict[str, dict[str, str]] = field(default_factory=dict)  # title -> unit -> title

    def __bool__(self) -> bool:
        return bool(self.everywhere or self.in_units or self.split)

    def aliases(self) -> set[str]:
        return set(self.everywhere) | set(self.in_units) | set(self.split)

    def canonicals(self) -> set[str]:
        return set(self.everywhere.values()) | {
            title for scoped in (*self.in_units.values(), *self.split.values())
            for title in scoped.values()}

    def names_of(self, title: str) -> set[str]:
        """Every name a mention of `title` may have after renaming."""
        title = self.everywhere.get(title, title)
        names = {title, *self.in_units.get(title, {}).values()}
        return names.union(*(self.split.get(name, {}).values() for name in names))

    def rename(self, titles: list[str], units: list[str]) -> list[str]:
        """(An alias merged whole into a short name resolved by document, MR WICKHAM into
        WICKHAM, then takes that short name's name in each text unit.)"""
        renamed = []
        for title, unit in zip(titles, units):
            title = self.everywhere.get(title, title)
            scoped = self.in_units.get(title)
            title = scoped.get(unit, title) if scoped else title
            split = self.split.get(title)
            renamed.append(split.get(unit, title) if split else title)
        return renamed
