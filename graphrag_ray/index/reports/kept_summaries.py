"""Summaries an update keeps: an entity or relationship whose description list did not
change keeps the description it was summarized to, without summarizing it again.

The merge digests each element's key and description list (`merge.description_digest`).
Every version keeps, per summarized element (more than one description, a summary that did
not fall back), its id, that digest and the tokens of its context row with the summary
(`_element_digests`). An update with the same settings (a summary depends on the summarize
settings, the model and the prompt: all in the settings fingerprint) takes, for each element
of the same id and digest, the description the previous version's entities or relationships
table holds: workers read those tables and put the descriptions in the object store as
summary blocks, so the schedule sees them as summaries already done. On a 1% update most
elements are unchanged; summarizing every one again (offline: an extractive pass over every
description list; with the LLM: a cache lookup each) was work in proportion to the corpus.

A summary that fell back to extractive (the LLM failed) is not kept: the next update asks
again.
"""

from __future__ import annotations

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.distributed import map_items
from graphrag_ray.index.carry_over import CARRY_TASK_CPUS, in_shares
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.graph.stage import Graph
from graphrag_ray.index.context_rows import number_tokens
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import read_parquet

ELEMENT_DIGESTS = "_element_digests"
ELEMENT_DIGESTS_SCHEMA = pa.schema([("id", pa.string()), ("digest", pa.int64()),
                                    ("inner_tokens", pa.int64())])


def _by_key(entities: pa.Table, relationships: pa.Table, entity_column: str,
            edge_column: str | None = None) -> pa.ChunkedArray:
    """A column of the entities, then the same (or `edge_column`) of the relationships: one
    value per element key."""
    return pa.chunked_array(entities.column(entity_column).chunks +
                            relationships.column(edge_column or entity_column).chunks)


def element_digests(entities: pa.Table, relationships: pa.Table, row_tokens: np.ndarray,
                    failed: set[int], encoding: str) -> pa.Table:
    """The summarized elements' rows of `_element_digests`. `row_tokens`: per element key,
    its context row's tokens but the id with its final description (`GraphElements`); the
    inner tokens are those less the degree's and the line break, as the merge counts them
    (`description_blocks.split_descriptions`)."""
    counts = _by_key(entities, relationships, "description_count").to_numpy()
    keys = np.flatnonzero(counts > 1)
    if failed:
        keys = keys[~np.isin(keys, np.fromiter(failed, np.int64, len(failed)))]
    degrees = _by_key(entities, relationships, "degree", "combined_degree").to_numpy()
    inner = row_tokens[keys] - number_tokens(degrees[keys], encoding) - 1
    taken = pa.array(keys, pa.int64())
    return pa.table({
        "id": _by_key(entities, relationships, "id").take(taken),
        "digest": _by_key(entities, relationships, "description_digest").take(taken),
        "inner_tokens": pa.array(inner, pa.int64())}, schema=ELEMENT_DIGESTS_SCHEMA)


def keep_summaries(ctx: BuildContext, graph: Graph, version: IndexVersion | None
                   ) -> np.ndarray:
    """The element keys whose summary is the one `version` (an update's previous version,
    of the same settings) holds (same id, same digest), their descriptions added to
    `graph.addresses` as summary blocks and their row tokens to the structure
    (`inner_tokens`). Empty without one, or when it kept no digests."""
    none = np.empty(0, np.int64)
    if version is None or not version.has_table(ELEMENT_DIGESTS):
        return none
    previous = version.read_table(ELEMENT_DIGESTS)
    entities, relationships = graph.entities, graph.relationships
    ids = _by_key(entities, relationships, "id")
    position = pc.index_in(ids, value_set=previous.column("id").combine_chunks())
    position = position.fill_null(-1).to_numpy()
    counts = _by_key(entities, relationships, "description_count").to_numpy()
    candidates = np.flatnonzero((position >= 0) & (counts > 1))
    same = previous.column("digest").to_numpy()[position[candidates]] == \
        _by_key(entities, relationships, "description_digest").to_numpy()[candidates]
    keys = candidates[same]
    if not len(keys):
        return none
    inner = previous.column("inner_tokens").to_numpy()[position[keys]]
    n_entities = entities.num_rows
    graph.entities, graph.relationships = (
        _with_inner_tokens(table, keys[mask] - offset, inner[mask]) for table, mask, offset in (
            (entities, keys < n_entities, 0), (relationships, keys >= n_entities, n_entities)))
    kept_ids = ids.take(pa.array(keys, pa.int64())).combine_chunks()
    for table, mask in ((schema.ENTITIES, keys < n_entities),
                        (schema.RELATIONSHIPS, keys >= n_entities)):
        if not mask.any():
            continue
        urls = version.table_urls(table)
        for found, handle in map_items(
                _kept_descriptions, in_shares(urls, ctx.config.runtime), ctx.config.runtime,
                num_cpus=CARRY_TASK_CPUS, keep_blocks=True,
                shared=[kept_ids.filter(pa.array(mask)), keys[mask],
                        version.left_out(table)]):
            if len(found):
                graph.addresses.add_summaries(handle, found.tolist())
    return keys


def _with_inner_tokens(table: pa.Table, rows: np.ndarray, tokens: np.ndarray) -> pa.Table:
    values = table.column("inner_tokens").to_numpy().copy()
    values[rows] = tokens
    return table.set_column(table.column_names.index("inner_tokens"), "inner_tokens",
                            pa.array(values, pa.int64()))


def _kept_descriptions(urls: list[str], ids: pa.Array, keys: np.ndarray,
                       left_out: dict[str, pa.Array]) -> tuple[np.ndarray, pa.Table]:
    """Parts of a previous entities or relationships table -> the keys of the `ids` found in
    them and, as a block, their descriptions in that order; not the rows a part leaves out
    (`IndexVersion.left_out`: that element's row is in another part)."""
    found, blocks = [], []
    for url in urls:
        fs, path = fsspec.core.url_to_fs(url)
        part = read_parquet(fs, path, ["id", "description"])
        where = pc.index_in(part.column("id"), value_set=ids)
        present = pc.is_valid(where)
        if path.rsplit("/", 1)[-1] in left_out:
            present = pc.and_(present, pc.invert(pc.is_in(
                part.column("id"), value_set=left_out[path.rsplit("/", 1)[-1]])))
        found.append(keys[where.filter(present).to_numpy()])
        blocks.append(part.select(["description"]).filter(present))
    # In one chunk: the report workers take a few rows of it at a time, and a take from a
    # column of many chunks (a part's row groups) joins them all first.
    return (np.concatenate(found) if found else np.empty(0, np.int64),
            pa.concat_tables(blocks).combine_chunks() if blocks else pa.table(
                {"description": pa.array([], pa.string())}))
