"""A resolution applied to the merged graph: the aliases' mentions renamed, then what the
renaming touched merged again from its instances.

An alias's mentions (its entity instances, the ends of its relationship instances, the text
units its relationships give it) take its canonical entity's name: all of them for an alias
merged whole, only those in the text units given for a short name resolved document by
document (`mentions.py`); a name split between homonyms (`homonyms.py`) then gives its
mentions in each other context that context's name. The touched elements (the aliases, their
canonical entities, the relationships with an alias at one end and those they now join) are
merged again from their renamed instances exactly as the merge merges, so every description,
text unit and type vote follows its mention; a relationship that now joins an entity to
itself goes, and an alias left with no mention goes. Weights are normalised again over the
whole graph. A short name left with no type of its own takes its full names' type.

Each merge shard's task renames its own touched instances (`renamed_pieces`); one task merges
them into a new description block (`merge_renamed`); the driver swaps the rows
(`swap_rows`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.arrow_rows import sorted_rows
from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import (
    BY_ENDS, BY_TITLE, MergeStats, merge_shard, pair_keys, with_weights)
from graphrag_ray.index.elements import Pieces, Renames, pair_key
from graphrag_ray.index.resolve.scoring import UNTYPED


@dataclass
class FoldStats:
    entities_merged: int = 0  # aliases left with no mention of their own
    relationships_merged: int = 0
    self_loops_dropped: int = 0


def renamed_keys(relationships: pa.Table, renames: Renames) -> tuple[set[str], set[str]]:
    """The entity titles and relationship pair keys (`elements.pair_key`) the renaming
    touches: the aliases and their canonical entities; every relationship with an alias at
    one end and every pair it may now join."""
    titles = renames.aliases() | renames.canonicals()
    aliases = pa.array(sorted(renames.aliases()), pa.string())
    moving = relationships.filter(pc.or_(
        pc.is_in(relationships.column("source"), value_set=aliases),
        pc.is_in(relationships.column("target"), value_set=aliases)))
    pairs = set(pair_keys(moving).to_pylist())
    for source, target in zip(moving.column("source").to_pylist(),
                              moving.column("target").to_pylist()):
        pairs.update(pair_key(s, t) for s in renames.names_of(source)
                     for t in renames.names_of(target) if s != t)
    return titles, pairs


def _renamed(table: pa.Table, renames: Renames, columns: tuple[str, ...]) -> pa.Table:
    units = table.column("text_unit_id").to_pylist()
    for name in columns:
        table = table.set_column(table.column_names.index(name), name, pa.array(
            renames.rename(table.column(name).to_pylist(), units), pa.string()))
    return table


def renamed_pieces(pieces: Pieces, renames: Renames, titles: set[str], pairs: set[str]
                   ) -> Pieces:
    """A shard's instances of the touched elements, renamed."""
    entity_instances, mentions, relationship_instances = pieces
    title_set = pa.array(sorted(titles), pa.string())
    entity_instances = entity_instances.filter(
        pc.is_in(entity_instances.column("title"), value_set=title_set))
    mentions = mentions.filter(pc.is_in(mentions.column("title"), value_set=title_set))
    relationship_instances = relationship_instances.filter(pc.is_in(
        pair_keys(relationship_instances), value_set=pa.array(sorted(pairs), pa.string())))
    return (_renamed(entity_instances, renames, ("title",)),
            _renamed(mentions, renames, ("title",)),
            _renamed(relationship_instances, renames, ("source", "target")))


def merge_renamed(shards: list[Pieces], block_number: int, encoding: str
                  ) -> tuple[pa.Table, pa.Table, MergeStats, pa.Table]:
    """Every shard's renamed instances merged, in chunk order: the touched elements' rows
    (structure) and their description block, numbered `block_number`."""
    pieces = tuple(pa.concat_tables([shard[kind] for shard in shards]).sort_by("seq")
                   for kind in range(3))
    entities, relationships, stats = merge_shard(pieces)
    entities, relationships, block = split_descriptions(entities, relationships, block_number,
                                                        encoding)
    return entities, relationships, stats, block


def _typed_by_their_full_names(entities: pa.Table, renames: Renames) -> pa.Table:
    """A short name left with no type of its own (its cues went with the mentions documents
    resolved: NEIL's "Neil said" to NEIL DEGRASSE TYSON) takes the type most of the full
    names it was resolved to have: a name that is a person in some documents is a person's."""
    titles = entities.column("title").to_pylist()
    types = entities.column("type").to_pylist()
    type_of = dict(zip(titles, types))
    changed = False
    for row, (title, kind) in enumerate(zip(titles, types)):
        if kind in UNTYPED and title in renames.in_units:
            votes = Counter(type_of.get(name) for name in renames.in_units[title].values())
            votes = Counter({k: n for k, n in votes.items() if k and k not in UNTYPED})
            if votes:
                types[row] = max(sorted(votes), key=votes.get)
                changed = True
    if not changed:
        return entities
    return entities.set_column(entities.column_names.index("type"), "type",
                               pa.array(types, entities.schema.field("type").type))


def swap_rows(entities: pa.Table, relationships: pa.Table, merged_entities: pa.Table,
              merged_relationships: pa.Table, titles: set[str], pairs: set[str],
              renames: Renames) -> tuple[pa.Table, pa.Table, FoldStats]:
    """The graph with the touched rows replaced by their merge again (`merge_renamed`),
    in the merge's order, with each canonical entity's `aliases` listed."""
    stats = FoldStats()
    keep = pc.invert(pc.is_in(entities.column("title"),
                              value_set=pa.array(sorted(titles), pa.string())))
    entities = sorted_rows(pa.concat_tables([
        entities.filter(keep),
        merged_entities.select(entities.column_names).cast(entities.schema)]), BY_TITLE)
    present = set(merged_entities.column("title").to_pylist())
    stats.entities_merged = len(renames.aliases() - present)
    entities = _typed_by_their_full_names(entities, renames)
    listed: dict[str, set[str]] = {}
    for alias in renames.aliases():
        for name in renames.names_of(alias) - {alias}:
            listed.setdefault(name, set()).add(alias)
    entities = entities.append_column("aliases", pa.array(
        [sorted(listed.get(t, ())) for t in entities.column("title").to_pylist()],
        pa.list_(pa.string())))

    columns = [c for c in relationships.column_names if c != "weight"]
    touched = pc.is_in(pair_keys(relationships), value_set=pa.array(sorted(pairs), pa.string()))
    stats.relationships_merged = pc.sum(touched).as_py() - merged_relationships.num_rows
    relationships = sorted_rows(pa.concat_tables([
        relationships.filter(pc.invert(touched)).select(columns),
        merged_relationships.select(columns).cast(relationships.select(columns).schema)
    ]), BY_ENDS)
    return entities, with_weights(relationships), stats
