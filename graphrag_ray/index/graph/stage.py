"""The graph stages: instances -> merged entities and relationships (one task per shard);
after resolution (`resolve/stage.py::resolved_graph`, which finishes the `Graph`),
hierarchical Leiden and the layout on the driver.

The driver holds the graph's structure only; descriptions stay in object-store blocks
(`description_blocks`) that the summary and report workers read.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray import processes
from graphrag_ray.distributed import map_items
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.extract.instance_shards import (
    gather_shard, only_added, read_changes, read_new, read_shard)
from graphrag_ray.index.extract.stage import (
    ENTITY_INSTANCE_SCHEMA, MENTION_SCHEMA, RELATIONSHIP_INSTANCE_SCHEMA)
from graphrag_ray.index.graph.communities import Community, build_graph, hierarchical_leiden
from graphrag_ray.index.graph.continuity import PreviousPartition, carry_ids, level0_similarity
from graphrag_ray.index.graph.description_blocks import (
    DescriptionAddresses, split_descriptions)
from graphrag_ray.index.graph.layout import positions
from graphrag_ray.index.graph.added_merge import merge_added
from graphrag_ray.index.graph.merge import (
    ENTITY_STATE, RELATIONSHIP_STATE, MergeStats, combine_shards, merge_shard)
from graphrag_ray.index.graph.merge_state import SELF_LOOPS, numbered, renumbered_state
from graphrag_ray.index.graph.provenance import Provenance
from graphrag_ray.index.graph.touched_merge import merge_touched, touched_keys, touched_nodes
from graphrag_ray.index.graph.unit_rows import (
    UNIT_ROWS, renumbered, require_known, rows_now, with_unit_rows)
from graphrag_ray.resources import PeakRss
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.parquet_io import read_parquet, write_parquet

if TYPE_CHECKING:
    from graphrag_ray.index.previous_version import PreviousTables

# What an update's layout reads of the previous entities.
POSITIONS = ["id", "x", "y"]


@dataclass
class Graph:
    """The merged graph as the driver holds it."""
    # Structure with degrees, `description_count`, `inner_tokens`, and each element's text
    # units as rows of `unit_ids` (`unit_rows`).
    entities: pa.Table
    relationships: pa.Table
    endpoints: tuple[np.ndarray, np.ndarray]  # each edge's ends as entity rows
    addresses: DescriptionAddresses  # where each element's description text is
    claims: pa.Table  # id, subject_id, text_unit_id, row_tokens
    claims_block: object  # the claims' context fields, in the object store
    aliases: pa.Table  # entity_aliases (empty unless resolution is enabled)
    unit_ids: pa.Array  # the text unit ids `unit_rows` count in (the extraction's status rows)
    # An update that merged only what it touched: per entity row, whether its merged row or
    # one of its relationships may have changed (None: a build, or anything may have).
    touched: np.ndarray | None = None
    # The entities' positions (x, y), or their worker process's future (`lay_out`): joined
    # to the entities when they are written (`with_layout`).
    layout: tuple[np.ndarray, np.ndarray] | Future | None = None


# The merged shards' structure, state and blocks, in the work area: what the driver reads
# (the structure), and what the version keeps for the next update's merge.
MERGED = "merged"
STATE = "state"  # `merged/entities-state-NNNNN.parquet`: the structure's rows' `merge_state`


def merge_stored_shard(shard: tuple[str, int, str, str | None], unit_ids: pa.Array,
                       previous_rows_now: pa.Array | None, unit_seqs: np.ndarray
                       ) -> tuple[tuple[MergeStats, pa.Array | None], pa.Table]:
    """One shard (work URL, number, tokenizer, the previous reading's URL when an update
    merges only what it touched: `touched_merge`) read from storage and merged: its
    structure written to the work area, where the driver reads it and the version keeps it
    with its state (`merge_state`) and block for the next update, and its description text
    as a block that stays with the workers; with the figures, the titles of the entities an
    update touched (`touched_merge`; None for a build). The driver reads the structure from
    storage, not from the object store: object-store pages a process has read stay in its
    RSS. A folder of many instance pieces,
    read whole here, is written again gathered (`instance_shards.gather_shard`). The
    structure numbers the text units (`unit_rows`: rows of `unit_ids`, the extraction's
    status table's, whose `seq`s are `unit_seqs`); `previous_rows_now` (an update) turns
    the previous shard's rows into those (`unit_rows.rows_now`). A shard that only gained
    instances, whose previous version kept its state, is merged without reading the
    carried instances (`added_merge`)."""
    work_url, number, encoding, previous_url = shard
    schemas = (ENTITY_INSTANCE_SCHEMA, MENTION_SCHEMA, RELATIONSHIP_INSTANCE_SCHEMA)
    previous, self_loops = (None, None) if previous_url is None else _previous_shard(
        previous_url, number, unit_ids, previous_rows_now)
    touched = None
    if self_loops is not None and only_added(work_url, number):
        entities, relationships, block, stats, touched = merge_added(
            numbered(read_new(work_url, number, schemas), unit_seqs), previous, self_loops,
            number, encoding)
    else:
        pieces = read_shard(work_url, number, schemas)
        gather_shard(work_url, number, pieces)
        pieces = numbered(pieces, unit_seqs)
        changes = read_changes(work_url, number) if previous is not None else None
        if self_loops is not None:
            entities, relationships, block, stats, touched = merge_touched(
                pieces, changes, previous, number, encoding)
        else:  # a build, or a previous version that kept no state
            entities, relationships, stats = merge_shard(pieces, state=True)
            entities, relationships, block = split_descriptions(entities, relationships,
                                                                number, encoding)
            if changes is not None:
                touched = touched_nodes(touched_keys(changes)[0], changes)
    if previous is not None:
        for table in (entities, relationships):
            require_known(table)
    _write_merged(work_url, number, entities, relationships, block, stats.self_loops_dropped)
    return (stats, touched), block


def _previous_shard(url: str, number: int, unit_ids: pa.Array, previous_rows_now: pa.Array
                    ) -> tuple[tuple[pa.Table, pa.Table, pa.Table], int | None]:
    """A previous version's merged shard: structure (with its state when it kept one) with
    text units as rows of `unit_ids`, and block; and its self-loop instances (None: it kept
    no state, as versions before it did not)."""
    entities, relationships, block = _read_merged_shard(url, number)
    entities, relationships = (_rows_now(table, unit_ids, previous_rows_now)
                               for table in (entities, relationships))
    fs, root = fsspec.core.url_to_fs(url)
    paths = [_merged_path(root, f"{kind}-{STATE}", number)
             for kind in ("entities", "relationships")]
    if not all(fs.exists(path) for path in paths):
        return (entities, relationships, block), None
    states = [read_parquet(fs, path) for path in paths]
    entities, relationships = (
        renumbered_state(_beside(table, state), previous_rows_now)
        for table, state in zip((entities, relationships), states))
    return (entities, relationships, block), int(states[1].schema.metadata[SELF_LOOPS])


def _beside(table: pa.Table, columns: pa.Table) -> pa.Table:
    for name in columns.column_names:
        table = table.append_column(name, columns.column(name))
    return table


def _write_merged(work_url: str, number: int, entities: pa.Table, relationships: pa.Table,
                  block: pa.Table, self_loops: int) -> None:
    fs, root = fsspec.core.url_to_fs(work_url)
    for kind, table, state in (("entities", entities, ENTITY_STATE),
                               ("relationships", relationships, RELATIONSHIP_STATE)):
        write_parquet(fs, _merged_path(root, kind, number),
                      table.drop_columns(list(state)), read_whole=True)
        kept = table.select(list(state))
        if kind == "relationships":
            kept = kept.replace_schema_metadata({SELF_LOOPS: str(self_loops).encode()})
        write_parquet(fs, _merged_path(root, f"{kind}-{STATE}", number), kept,
                      read_whole=True)
    write_parquet(fs, _merged_path(root, "block", number), block, read_whole=True)


def _rows_now(table: pa.Table, unit_ids: pa.Array, previous_rows_now: pa.Array) -> pa.Table:
    """A previous merged shard's structure with its text units as rows of `unit_ids`. (A
    version written before the kept shards listed rows lists the ids.)"""
    if UNIT_ROWS in table.column_names:
        return renumbered(table, previous_rows_now)
    return with_unit_rows(table, unit_ids, dropped=True)


def _merged_path(root: str, kind: str, number: int) -> str:
    return f"{root}/{MERGED}/{kind}-{number:05d}.parquet"


def _read_merged_shard(url: str, number: int,
                       kinds: tuple[str, ...] = ("entities", "relationships", "block")
                       ) -> tuple[pa.Table, ...]:
    fs, root = fsspec.core.url_to_fs(url)
    return tuple(read_parquet(fs, _merged_path(root, kind, number)) for kind in kinds)


def merged_shards_kept(url: str, shards: int) -> bool:
    """Whether the reading at `url` (a previous version's) kept all `shards` merged shards."""
    fs, root = fsspec.core.url_to_fs(url)
    return all(fs.exists(_merged_path(root, "block", number))
               for number in range(shards))


def read_merged(work_url: str, shards: int) -> list[tuple[pa.Table, pa.Table]]:
    """The shards' structure (`merge_stored_shard`), in shard order, read by threads (Arrow
    decodes without the interpreter; one after the other, they wait on each
    other)."""
    with ThreadPoolExecutor(MERGED_READING_THREADS, thread_name_prefix="read-merged") as pool:
        return list(pool.map(lambda number: _read_merged_shard(
            work_url, number, ("entities", "relationships")), range(shards)))


MERGED_READING_THREADS = 4  # (each decodes with Arrow's own threads too)


@dataclass
class Merged:
    """The merge's product, before resolution: the structure in its final order, each
    shard's (stats, titles) and description block, the unit ids its rows count in."""
    entities: pa.Table
    relationships: pa.Table
    merged: list
    stats: object
    unit_ids: pa.Array
    previous_url: str | None


def merge_shards(ctx: BuildContext, shards: int, extraction: pa.Table,
                 previous_url: str | None = None,
                 previous_units: pa.ChunkedArray | None = None) -> Merged:
    """Each shard merged by its own task (parallel on Ray), the driver getting the structure
    in its final order and the address of every element's description. `extraction`: the
    extraction's status rows. `previous_url` (an update that carried the unchanged files
    over): the previous reading, whose merged shards are merged again only where the update
    touched them, when it kept them; `previous_units`: the text unit ids its status table
    held, which its merged shards number."""
    config = ctx.config
    if previous_url is not None and not merged_shards_kept(previous_url, shards):
        previous_url = None
    with ctx.stage("merge"):
        unit_ids = extraction.column("text_unit_id").combine_chunks()
        previous_rows_now = rows_now(previous_units, unit_ids) \
            if previous_url is not None else None
        merged = map_items(merge_stored_shard, [(ctx.work_url, k, ctx.tokenizer, previous_url)
                                                for k in range(shards)],
                           config.runtime, keep_blocks=True,
                           shared=[unit_ids, previous_rows_now,
                                   extraction.column("seq").to_numpy()])
        entities, relationships, stats = combine_shards([
            (shard_entities, shard_relationships, shard_stats) for
            (shard_entities, shard_relationships), ((shard_stats, _), _) in zip(
                read_merged(ctx.work_url, shards), merged)])
    return Merged(entities, relationships, merged, stats, unit_ids, previous_url)


def find_communities(ctx: BuildContext, graph: Graph, extraction: pa.Table,
                     previous_communities: pa.Table | None = None,
                     kept_of: set[str] | None = None) -> list[Community]:
    """`extraction`: the extraction's status rows (text_unit_id, document_id, seq), which say
    where each entity is mentioned (`provenance`). `previous_communities` (an update): the
    previous version's communities table; Leiden starts from it (and keeps it, given
    `kept_of`, the previous entity ids) and its ids are carried over (`continuity`), with
    what was kept in `ctx.figures.community_changes`."""
    with ctx.stage("communities"):
        previous = None if previous_communities is None else PreviousPartition.from_tables(
            previous_communities, graph.entities.column("id").to_pylist(), kept_of,
            graph.touched)
        communities = detect_communities(
            graph.entities, graph.relationships, graph.endpoints, ctx.config,
            ctx.figures.leiden, previous,
            Provenance.from_tables(graph.entities, extraction))
        if previous is not None:
            ctx.figures.community_changes = {
                "per_level": carry_ids(communities, previous),
                "level0_adjusted_rand_index": level0_similarity(
                    communities, previous, graph.entities.num_rows)}
        return communities


def lay_out(ctx: BuildContext, graph: Graph,
            previous: IndexVersion | PreviousTables | None = None) -> None:
    """`entities.x`/`y` from a layout of the graph (`layout.py`), timed as the `layout`
    stage; in a worker process when the job opened them (`distributed/processes.py`: igraph
    holds the interpreter while it lays out), the
    driver going on with the reports meanwhile (`with_layout` waits for it). `previous` (an
    update that merged only what it touched): the version (its tables, maybe read ahead)
    whose positions the entities it had keep (`layout.place_new`)."""
    with ctx.stage("layout"):
        before = None
        if previous is not None and graph.touched is not None:
            kept = previous.read_table(schema.ENTITIES, POSITIONS)
            where = pc.index_in(graph.entities.column("id"), value_set=kept.column("id"))
            rows = where.fill_null(0).to_numpy()
            before = (kept.column("x").to_numpy()[rows], kept.column("y").to_numpy()[rows],
                      pc.is_valid(where).to_numpy())
        args = (graph.entities.num_rows, *graph.endpoints,
                graph.relationships.column("weight").to_numpy(), ctx.config.layout, before)
        graph.layout = processes.submit(positions, *args) or positions(*args)


def with_layout(graph: Graph) -> pa.Table:
    """The graph's entities with their layout's `x` and `y` (waiting for its process)."""
    layout, graph.layout = graph.layout, None
    if layout is None:
        return graph.entities
    entities = graph.entities
    for name, values in zip(("x", "y"), layout if isinstance(layout, tuple)
                            else layout.result()):
        entities = entities.append_column(name, pa.array(values, pa.float64()))
    return entities


def detect_communities(entities: pa.Table, relationships: pa.Table,
                       endpoints: tuple[np.ndarray, np.ndarray], config: GraphRagConfig,
                       figures: dict | None = None,
                       previous: PreviousPartition | None = None,
                       provenance: Provenance | None = None) -> list[Community]:
    """`endpoints`: `edge_endpoints(entities, relationships)`. `figures`, when given, receives
    the graph's size and Leiden's time and memory. `previous`: a warm start.
    `provenance`: where each entity is mentioned, which places the small components."""
    started = time.perf_counter()
    with PeakRss() as memory:
        sources, targets = endpoints
        weights = relationships.column("weight").to_numpy()
        graph = build_graph(entities.num_rows, sources, targets, weights)
        built = time.perf_counter()
        communities = hierarchical_leiden(graph, config.communities, previous, provenance)
    if figures is not None:
        figures.update({
            "nodes": graph.vcount(), "edges": graph.ecount(),
            "build_graph_s": round(built - started, 3),
            "leiden_s": round(time.perf_counter() - built, 3),
            "communities": len(communities),
            "driver_rss_mb_before": memory.before_mb, "driver_rss_mb_peak": memory.peak_mb})
    return communities
