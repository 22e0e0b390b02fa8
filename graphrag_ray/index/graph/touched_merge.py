"""An update's merge of one shard: only the elements its changes touch are merged again.

A build keeps each shard's merged structure and description block (`merged/` in the
version's reading). An update knows what changed in the shard (`instance_shards.read_changes`:
the instances extracted now and the keys of those it did not carry): an entity is touched
when an instance or mention of its title changed, a relationship when an instance of its
endpoint pair did. Touched elements are merged again from all their instances (the carried
ones with the new), exactly as `merge.merge_shard` merges them; every other element keeps
its previous row, digest and token counts, and its description list moves to the new block.
The result is the shard a full merge gives (rows in title order within their kind; the
block's rows in another order, which the structure's `description_row` follows).

The merge's figures (`MergeStats`) are the whole shard's, not the touched part's: counted
from the merged rows' state (`merge_state.state_stats`). A shard that only gained instances
is merged without reading the carried ones (`added_merge`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.arrow_rows import sorted_rows
from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import (
    BY_ENDS, BY_TITLE, MergeStats, merge_entities, merge_relationships, pair_keys)
from graphrag_ray.index.elements import Pieces
from graphrag_ray.index.graph.merge_state import state_stats


def touched_keys(changes: tuple[pa.Table, pa.Table, pa.Table]) -> tuple[pa.Array, pa.Array]:
    """(entity titles, relationship pair keys) that the changes touch."""
    entities, mentions, relationships = changes
    titles = pc.unique(pa.chunked_array(entities.column("title").chunks +
                                        mentions.column("title").chunks,
                                        type=pa.string()))
    return titles, pc.unique(pa.chunked_array(
        [pair_keys(relationships)] if relationships.num_rows else [], type=pa.string()))


def merge_touched(pieces: Pieces, changes: tuple[pa.Table, pa.Table, pa.Table],
                  previous: tuple[pa.Table, pa.Table, pa.Table], shard: int, encoding: str
                  ) -> tuple[pa.Table, pa.Table, pa.Table, MergeStats, pa.Array]:
    """The shard's (entities, relationships) structure with state (`merge_state`) and block,
    as `description_blocks.split_descriptions` gives them after a full merge, from
    `previous` (the last version's structure with state, and block, of this shard, its text
    units as rows of the status table the instances are numbered by) and the touched
    elements merged again from all their instances (`pieces`, numbered:
    `merge_state.numbered`); with the shard's figures and the
    titles of the entities touched, or at an end of a touched relationship (the nodes whose
    neighbourhood in the graph may have changed: `continuity`)."""
    entities, mentions, relationships = pieces
    titles, pairs = touched_keys(changes)
    merged_entities, _ = merge_entities(
        entities.filter(pc.is_in(entities.column("title"), value_set=titles)),
        mentions.filter(pc.is_in(mentions.column("title"), value_set=titles)), state=True)
    merged_relationships, _ = merge_relationships(relationships.filter(
        pc.is_in(pair_keys(relationships), value_set=pairs)) if relationships.num_rows
        else relationships, state=True)
    loops = pc.sum(pc.equal(relationships.column("source"),
                            relationships.column("target"))).as_py() or 0
    merged = with_touched(previous, titles, pairs, merged_entities, merged_relationships,
                          shard, encoding)
    return (*merged, state_stats(merged[0], merged[1], loops), touched_nodes(titles, changes))


def touched_nodes(titles: pa.Array, changes: tuple[pa.Table, pa.Table, pa.Table]) -> pa.Array:
    """The touched titles and the ends of the touched relationships."""
    ends = changes[2]
    return pc.unique(pa.chunked_array([titles, *ends.column("source").chunks,
                                       *ends.column("target").chunks], type=pa.string()))


def with_touched(previous: tuple[pa.Table, pa.Table, pa.Table], titles: pa.Array,
                 pairs: pa.Array, entities: pa.Table, relationships: pa.Table, shard: int,
                 encoding: str) -> tuple[pa.Table, pa.Table, pa.Table]:
    """`previous` (structure with state, and block) with the elements of `titles` and
    `pairs` replaced by `entities` and `relationships` (merged again, with `descriptions`):
    the new structure, in key order, and block."""
    new_entities, new_relationships, new_block = split_descriptions(
        entities, relationships, shard, encoding)
    old_entities, old_relationships, old_block = previous
    new_entities = new_entities.select(old_entities.column_names)
    new_relationships = new_relationships.select(old_relationships.column_names)
    old_entities = old_entities.filter(pc.invert(pc.is_in(old_entities.column("title"),
                                                          value_set=titles)))
    if old_relationships.num_rows:
        old_relationships = old_relationships.filter(pc.invert(pc.is_in(
            pair_keys(old_relationships), value_set=pairs)))
    kept_rows = np.concatenate([old_entities.column("description_row").to_numpy(),
                                old_relationships.column("description_row").to_numpy()])
    # One chunk, as a build's block is: the workers take a few rows of it per report, and a
    # take from a list column in two chunks joins the whole column first.
    block = pa.concat_tables([old_block.take(pa.array(kept_rows, pa.int64())),
                              new_block]).combine_chunks()
    # The kept rows first (in that order), then the new block's.
    n_old_entities, n_kept = old_entities.num_rows, len(kept_rows)
    old_entities = _placed(old_entities, np.arange(n_old_entities))
    old_relationships = _placed(old_relationships, np.arange(n_old_entities, n_kept))
    new_entities = _placed(new_entities, n_kept + new_entities.column(
        "description_row").to_numpy())
    new_relationships = _placed(new_relationships, n_kept + new_relationships.column(
        "description_row").to_numpy())
    return (sorted_rows(pa.concat_tables([old_entities, new_entities]), BY_TITLE),
            sorted_rows(pa.concat_tables([old_relationships, new_relationships]), BY_ENDS),
            block)


def _placed(table: pa.Table, rows: np.ndarray) -> pa.Table:
    return table.set_column(table.column_names.index("description_row"), "description_row",
                            pa.array(np.asarray(rows, np.int64), pa.int64()))
