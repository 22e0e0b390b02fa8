"""The resolution stage, between the merge and the communities (`resolution.enabled`):

    blocking keys (one task per slice of the entities, hash-partitioned into blocks)
    -> pairs scored per partition (one task each; only pairs worth a look come back)
    -> uncertain pairs confirmed by the LLM (`resolution.confirm_with_llm`)
    -> clusters and canonical entities (driver: the accepted pairs and the names)
    -> the graph folded (driver: structure; one task: the joined description lists)

What it returns replaces the merge's entities, relationships and description blocks, and adds
the `entity_aliases` table. Off, entities get an empty `aliases` column and nothing else
changes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.config import ResolutionConfig
from graphrag_ray.distributed import map_items
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.graph.merge import edge_endpoints
from graphrag_ray.index.resolve.candidates import (
    PAIR_SCHEMA, key_rows, neighbour_lists, score_partition)
from graphrag_ray.index.resolve.clusters import Resolution, resolve_clusters
from graphrag_ray.index.resolve.confirm import confirm_pairs
from graphrag_ray.index.resolve.fold import fold_descriptions, fold_structure, with_folded_counts
from graphrag_ray.index.resolve.scoring import Profiles

ALIAS_SCHEMA = pa.schema([(name, pa.float64() if name == "score" else pa.string())
                          for name in schema.ENTITY_ALIAS_COLUMNS])
PROFILE_COLUMNS = ["title", "type", "text_unit_ids", "description_shard", "description_row"]


def _keys_task(item: tuple[list[str], int, int]) -> tuple[int, pa.Table]:
    titles, first_row, partitions = item
    keys = key_rows(titles, first_row, partitions)
    return keys.num_rows, keys


def _score_task(item: tuple[int, int, int, float], profile: pa.Table, offsets: np.ndarray,
                neighbours: np.ndarray, *blocks: pa.Table) -> tuple[pa.Table, dict]:
    """`blocks`: the key tables (`item[1]` of them), then the merge's description blocks."""
    partition, n_key_tables, max_block_size, review_threshold = item
    key_tables, description_blocks = blocks[:n_key_tables], blocks[n_key_tables:]
    shards = profile.column("description_shard").to_numpy()
    rows = profile.column("description_row").to_numpy()

    def descriptions(row: int) -> list[str]:
        return description_blocks[shards[row]].column("descriptions")[int(rows[row])].as_py()

    return score_partition(partition, key_tables,
                           Profiles(profile, offsets, neighbours, descriptions),
                           max_block_size, review_threshold)


def _fold_task(item, *blocks: pa.Table):
    work, encoding = item
    return fold_descriptions(work, encoding, *blocks)


def candidate_pairs(ctx: BuildContext, entities: pa.Table, relationships: pa.Table,
                    handles: list) -> tuple[pa.Table, dict]:
    """Every pair worth a look (score >= review threshold), found and scored in tasks."""
    config: ResolutionConfig = ctx.config.resolution
    n = entities.num_rows
    per_task = config.entities_per_partition
    partitions = max(1, -(-n // per_task))
    titles = entities.column("title").to_pylist()
    keyed = map_items(_keys_task, [(titles[s:s + per_task], s, partitions)
                                   for s in range(0, n, per_task)],
                      ctx.config.runtime, keep_blocks=True)
    key_tables = [table for _, table in keyed]
    offsets, neighbours = neighbour_lists(n, *edge_endpoints(entities, relationships))
    scored = map_items(
        _score_task, [(p, len(key_tables), config.max_block_size, config.review_threshold)
                      for p in range(partitions)], ctx.config.runtime,
        shared=[entities.select(PROFILE_COLUMNS), offsets, neighbours, *key_tables, *handles])
    counts = Counter({"partitions": partitions, "blocking_keys": sum(k for k, _ in keyed)})
    for _, part_counts in scored:
        counts.update(part_counts)
    pairs = pa.concat_tables([t for t, _ in scored]) if scored else PAIR_SCHEMA.empty_table()
    return pairs, dict(counts)


def resolve_entities(ctx: BuildContext, entities: pa.Table, relationships: pa.Table,
                     handles: list) -> tuple[pa.Table, pa.Table, list, pa.Table]:
    """(entities, relationships, description block handles, entity_aliases)."""
    config: ResolutionConfig = ctx.config.resolution
    if not config.enabled or entities.num_rows < 2:
        return _without_aliases(entities), relationships, handles, ALIAS_SCHEMA.empty_table()
    with ctx.stage("resolve"):
        pairs, counts = candidate_pairs(ctx, entities, relationships, handles)
        titles = entities.column("title").to_pylist()
        uncertain = pairs.filter(pc.less(pairs.column("score"), config.threshold))
        confirmed, confirm_usage = set(), None
        if config.confirm_with_llm and uncertain.num_rows:
            confirmed, confirm_usage = confirm_pairs(ctx, entities, uncertain, handles)
        resolution = resolve_clusters(
            titles, entities.column("type").to_pylist(), entities.column("frequency").to_pylist(),
            pairs, config.threshold, config.force_merge, config.forbid_merge, confirmed)
        aliases = alias_table(titles, entities.column("id").to_pylist(), resolution)
        figures = {**counts, "candidate_pairs": pairs.num_rows,
                   "uncertain_pairs": uncertain.num_rows, "confirmed_by_llm": len(confirmed),
                   "aliases": len(resolution.aliases),
                   "ambiguous_names": len(resolution.ambiguous),
                   "ambiguous_examples": [titles[r] for r in resolution.ambiguous[:20]],
                   "by_method": dict(Counter(a.method for a in resolution.aliases))}
        if confirm_usage is not None:
            figures["llm_usage"] = confirm_usage
        if resolution.aliases:
            entities, relationships, handles, fold = _fold(ctx, entities, relationships,
                                                           handles, resolution)
            figures.update(asdict(fold))
        else:
            entities = _without_aliases(entities)
        ctx.figures.resolution = figures
        return entities, relationships, handles, aliases


def _without_aliases(entities: pa.Table) -> pa.Table:
    return entities.append_column("aliases", pa.array([[]] * entities.num_rows,
                                                      pa.list_(pa.string())))


def _fold(ctx: BuildContext, entities, relationships, handles, resolution: Resolution):
    new_block = len(handles)
    entities, relationships, work, stats = fold_structure(entities, relationships, resolution,
                                                          new_block)
    (figures, block), = map_items(_fold_task, [(work, ctx.tokenizer)],
                                  ctx.config.runtime, keep_blocks=True, shared=handles)
    entities = with_folded_counts(entities, new_block, figures)
    relationships = with_folded_counts(relationships, new_block, figures)
    return entities, relationships, handles + [block], stats


def canonical_names(aliases: pa.Table) -> dict[str, str]:
    """Alias title -> its canonical entity's title (claims' subjects and objects follow)."""
    return dict(zip(aliases.column("alias").to_pylist(),
                    aliases.column("entity_title").to_pylist()))


def alias_table(titles: list[str], ids: list[str], resolution: Resolution) -> pa.Table:
    """One row per alias: its title and former id, its canonical entity, how it was matched."""
    return pa.Table.from_pylist([
        {"alias": titles[a.row], "alias_entity_id": ids[a.row],
         "entity_id": ids[a.canonical], "entity_title": titles[a.canonical], "score": a.score,
         "method": a.method, "evidence": a.evidence} for a in resolution.aliases],
        schema=ALIAS_SCHEMA)

