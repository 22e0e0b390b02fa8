"""The resolution stage, between the merge and the communities (`resolution.enabled`):

    blocking keys (one task per slice of the entities, hash-partitioned into blocks)
    -> pairs scored per partition (one task each; only pairs worth a look come back)
    -> uncertain pairs confirmed by the LLM (`resolution.confirm_with_llm`)
    -> clusters and canonical entities (driver: the accepted pairs and the names)
    -> short names resolved document by document (driver: `mentions.py`)
    -> a person's single name split between contexts that share nothing
       (`resolution.split_homonyms`; driver: `homonyms.py`)
    -> the aliases' mentions renamed (one task per merge shard) and what that touched merged
       again (one task: `fold.py`)

What it returns replaces the merge's entities, relationships and description blocks, adds
the `entity_aliases` table (a short name resolved per document has a row per full name, with
its documents; a split name a row per new entity, with its documents), and says how claims'
subjects and objects are renamed. Off, entities get an empty `aliases` column and nothing
else changes.
"""

from __future__ import annotations

import operator
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass
from functools import reduce

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import languages, schema
from graphrag_ray.config import ResolutionConfig
from graphrag_ray.distributed import map_items
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.extract.instance_shards import read_shard
from graphrag_ray.index.extract.stage import (
    ENTITY_INSTANCE_SCHEMA, MENTION_SCHEMA, RELATIONSHIP_INSTANCE_SCHEMA)
from graphrag_ray.index.graph.claims import build_covariates
from graphrag_ray.index.graph.description_blocks import place_blocks
from graphrag_ray.index.graph.merge import add_degrees, edge_endpoints
from graphrag_ray.index.elements import element_id
from graphrag_ray.index.graph.provenance import Provenance
from graphrag_ray.index.graph.stage import Graph, Merged
from graphrag_ray.index.graph.unit_rows import UNIT_ROWS, with_unit_rows
from graphrag_ray.index.resolve.candidates import (
    PAIR_SCHEMA, key_rows, neighbour_lists, score_partition)
from graphrag_ray.index.resolve.clusters import PairRules, Resolution, resolve_clusters
from graphrag_ray.index.resolve.confirm import confirm_pairs
from graphrag_ray.index.resolve.fold import merge_renamed, renamed_keys, renamed_pieces, swap_rows
from graphrag_ray.index.elements import Renames
from graphrag_ray.index.resolve.homonyms import Split, split_homonyms, typed_apart
from graphrag_ray.index.resolve.mentions import (
    MentionAlias, Works, resolve_mentions, works_of)
from graphrag_ray.index.resolve.scoring import Profiles, WordForms, word_forms
from graphrag_ray.index.resolve.standing import Standings
from graphrag_ray.storage.parquet_io import parquet_parts, read_parquet

ALIAS_SCHEMA = pa.schema([(name, {"score": pa.float64(), "document_ids": pa.list_(pa.string())}
                           .get(name, pa.string())) for name in schema.ENTITY_ALIAS_COLUMNS])
PROFILE_COLUMNS = ["title", "type", UNIT_ROWS, "description_shard", "description_row"]
CHUNK_PARTS_PER_TASK = 64


def _keys_task(item: tuple[list[str], int, int, tuple[str, ...]]) -> tuple[int, pa.Table]:
    titles, first_row, partitions, language = item
    languages.use(language)
    keys = key_rows(titles, first_row, partitions)
    return keys.num_rows, keys


def _score_task(item: tuple[int, int, int, float, tuple[str, ...]], profile: pa.Table,
                offsets: np.ndarray, neighbours: np.ndarray, *blocks: pa.Table
                ) -> tuple[pa.Table, dict]:
    """`blocks`: the key tables (`item[1]` of them), then the merge's description blocks."""
    partition, n_key_tables, max_block_size, review_threshold, language = item
    languages.use(language)
    key_tables, description_blocks = blocks[:n_key_tables], blocks[n_key_tables:]
    shards = profile.column("description_shard").to_numpy()
    rows = profile.column("description_row").to_numpy()

    def descriptions(row: int) -> list[str]:
        return description_blocks[shards[row]].column("descriptions")[int(rows[row])].as_py()

    return score_partition(partition, key_tables,
                           Profiles(profile, offsets, neighbours, descriptions),
                           max_block_size, review_threshold)


def _word_forms_task(item: tuple[str, list[str], tuple[str, ...]]) -> WordForms:
    work_url, parts, language = item
    languages.use(language)
    fs, _ = fsspec.core.url_to_fs(work_url)
    return word_forms([text for part in parts for text in
                       read_parquet(fs, part, ["text"]).column("text").to_pylist() if text])


def _rename_task(item: tuple[str, int], renames: Renames, titles: set[str], pairs: set[str]):
    work_url, shard = item
    pieces = read_shard(work_url, shard, (ENTITY_INSTANCE_SCHEMA, MENTION_SCHEMA,
                                          RELATIONSHIP_INSTANCE_SCHEMA))
    return renamed_pieces(pieces, renames, titles, pairs)


def _merge_renamed_task(item):
    shards, block_number, encoding = item
    entities, relationships, stats, block = merge_renamed(shards, block_number, encoding)
    return (entities, relationships, stats), block


@dataclass
class Resolved:
    """The graph after resolution, and how claims' subjects and objects are renamed."""
    entities: pa.Table
    relationships: pa.Table
    handles: list
    aliases: pa.Table  # entity_aliases
    renames: Renames


def corpus_word_forms(ctx: BuildContext) -> WordForms:
    """How the corpus's text units write their words (`WordForms`: the words no person's name
    opens, the sexes pronouns say), in tasks over the stored chunks, `CHUNK_PARTS_PER_TASK`
    parts each."""
    fs, root = fsspec.core.url_to_fs(ctx.work_url)
    parts = parquet_parts(fs, f"{root}/chunks")
    language = tuple(ctx.config.resolution.language_data)
    forms = map_items(_word_forms_task, [(ctx.work_url, parts[i:i + CHUNK_PARTS_PER_TASK],
                                          language)
                                         for i in range(0, len(parts), CHUNK_PARTS_PER_TASK)],
                      ctx.config.runtime)
    return reduce(operator.or_, forms, WordForms())


def document_titles(ctx: BuildContext, document_ids: list[str]) -> list[str]:
    """The documents' titles (their files' names), by their order in `document_ids`, as the
    readers stored them in the work area (an update's carried files' too); a document not
    found there keeps its id."""
    fs, root = fsspec.core.url_to_fs(ctx.work_url)
    title_of: dict[str, str] = {}
    for part in parquet_parts(fs, f"{root}/documents"):
        stored = read_parquet(fs, part, ["id", "title"])
        title_of.update(zip(stored.column("id").to_pylist(), stored.column("title").to_pylist()))
    return [title_of.get(d) or d for d in document_ids]


def candidate_pairs(ctx: BuildContext, entities: pa.Table, relationships: pa.Table,
                    handles: list) -> tuple[pa.Table, dict]:
    """Every pair worth a look (score >= review threshold), found and scored in tasks."""
    config: ResolutionConfig = ctx.config.resolution
    n = entities.num_rows
    per_task = config.entities_per_partition
    partitions = max(1, -(-n // per_task))
    titles = entities.column("title").to_pylist()
    language = tuple(config.language_data)
    keyed = map_items(_keys_task, [(titles[s:s + per_task], s, partitions, language)
                                   for s in range(0, n, per_task)],
                      ctx.config.runtime, keep_blocks=True)
    key_tables = [table for _, table in keyed]
    offsets, neighbours = neighbour_lists(n, *edge_endpoints(entities, relationships))
    scored = map_items(
        _score_task, [(p, len(key_tables), config.max_block_size, config.review_threshold,
                       language) for p in range(partitions)], ctx.config.runtime,
        shared=[entities.select(PROFILE_COLUMNS), offsets, neighbours, *key_tables, *handles])
    counts = Counter({"partitions": partitions, "blocking_keys": sum(k for k, _ in keyed)})
    for _, part_counts in scored:
        counts.update(part_counts)
    pairs = pa.concat_tables([t for t, _ in scored]) if scored else PAIR_SCHEMA.empty_table()
    return pairs, dict(counts)


def resolve_entities(ctx: BuildContext, entities: pa.Table, relationships: pa.Table,
                     handles: list, extraction: pa.Table) -> Resolved:
    """`extraction`: the extraction's status rows (text_unit_id, document_id, seq), which say
    in which document each mention is."""
    config: ResolutionConfig = ctx.config.resolution
    if not config.enabled or entities.num_rows < 2:
        return Resolved(_without_aliases(entities), relationships, handles,
                        ALIAS_SCHEMA.empty_table(), Renames())
    languages.use(config.language_data)  # (its tasks, in their workers, each say it too)
    with ctx.stage("resolve"):
        pairs, counts = candidate_pairs(ctx, entities, relationships, handles)
        forms = corpus_word_forms(ctx)
        titles = entities.column("title").to_pylist()
        types = entities.column("type").to_pylist()
        rules = PairRules(titles, types, config.force_merge, config.forbid_merge, forms)
        uncertain = pairs.filter(pc.less(pairs.column("score"), config.threshold))
        # (A pair no answer could merge is not asked about.)
        uncertain = uncertain.filter(pa.array([not rules.apart(a, b) for a, b in zip(
            uncertain.column("a").to_pylist(), uncertain.column("b").to_pylist())], pa.bool_()))
        confirmed, confirm_usage = set(), None
        if config.confirm_with_llm and uncertain.num_rows:
            confirmed, confirm_usage = confirm_pairs(ctx, entities, uncertain, handles)
        provenance = Provenance.from_tables(entities, extraction)
        works = Works(provenance, works_of(document_titles(ctx, provenance.document_ids)))
        resolution = resolve_clusters(titles, entities.column("frequency").to_pylist(), pairs,
                                      config.threshold, rules, confirmed, works.together)
        in_documents = resolve_mentions(titles, pairs, resolution, provenance, rules.apart,
                                        works.works, Standings(titles, forms.sexes()))
        unit_ids = extraction.column("text_unit_id").to_pylist()
        renames = renames_of(titles, unit_ids, resolution, in_documents)
        splits = split_homonyms(titles, types, provenance, unit_ids, renames) \
            if config.split_homonyms else []
        folded, splits, dropped = _fold_with_splits(
            ctx, entities, relationships, handles, renames, splits, unit_ids,
            extraction.column("text_unit_id"))
        aliases = alias_table(titles, entities.column("id").to_pylist(), resolution,
                              in_documents, splits, provenance)
        figures = {**counts, "candidate_pairs": pairs.num_rows,
                   "uncertain_pairs": uncertain.num_rows, "confirmed_by_llm": len(confirmed),
                   "aliases": len(resolution.aliases),
                   "ambiguous_names": len(resolution.ambiguous),
                   "ambiguous_examples": [titles[r] for r in resolution.ambiguous[:20]],
                   "by_method": dict(Counter(a.method for a in resolution.aliases)),
                   "resolved_in_documents": {
                       "short_names": len({m.row for m in in_documents}),
                       "full_names": len(in_documents),
                       "mentions": sum(len(m.units) for m in in_documents)},
                   "homonyms_split": {split.title: [s.new_title for s in splits
                                                    if s.title == split.title]
                                      for split in splits},
                   "homonym_splits_undone": dropped}
        if confirm_usage is not None:
            figures["llm_usage"] = confirm_usage
        if folded is not None:
            entities, relationships, handles, fold = folded
            figures.update(asdict(fold))
        else:
            entities = _without_aliases(entities)
        ctx.figures.resolution = figures
        return Resolved(entities, relationships, handles, aliases, renames)


def _without_aliases(entities: pa.Table) -> pa.Table:
    return entities.append_column("aliases", pa.array([[]] * entities.num_rows,
                                                      pa.list_(pa.string())))


def _fold_with_splits(ctx: BuildContext, entities, relationships, handles, renames: Renames,
                      splits: list[Split], unit_ids: list[str], unit_id_array: pa.ChunkedArray):
    """The fold (`_fold`, None when nothing is renamed) with the homonym splits whose every
    part is still typed a person after it (`homonyms.typed_apart`); a split that leaves a
    part otherwise is undone and the fold made again without it (UNIX, typed a person from
    one episode's cues, was split by episode). Returns the fold, the splits kept and the
    titles whose splits were undone."""
    def folded_with(kept: list[Split]):
        renames.split = {}
        for split in kept:
            renames.split.setdefault(split.title, {}).update(
                (unit_ids[u], split.new_title) for u in split.units)
        return _fold(ctx, entities, relationships, handles, renames,
                     unit_id_array) if renames else None

    folded = folded_with(splits)
    if not splits:
        return folded, splits, []
    type_of = dict(zip(folded[0].column("title").to_pylist(),
                       folded[0].column("type").to_pylist()))
    kept = typed_apart(splits, type_of)
    if len(kept) == len(splits):
        return folded, splits, []
    dropped = sorted({s.title for s in splits} - {s.title for s in kept})
    return folded_with(kept), kept, dropped


def _fold(ctx: BuildContext, entities, relationships, handles, renames: Renames,
          unit_ids: pa.ChunkedArray):
    """The aliases' mentions renamed in every merge shard (one block of handles per shard),
    the touched elements merged again into a new block (`fold.py`), their text units
    numbered as the graph's are (`unit_ids`: the extraction's status rows)."""
    titles, pairs = renamed_keys(relationships, renames)
    shards = map_items(_rename_task, [(ctx.work_url, k) for k in range(len(handles))],
                       ctx.config.runtime, shared=[renames, titles, pairs])
    ((merged_entities, merged_relationships, merge_stats), block), = map_items(
        _merge_renamed_task, [(shards, len(handles), ctx.tokenizer)], ctx.config.runtime,
        keep_blocks=True)
    entities, relationships, stats = swap_rows(
        entities, relationships, with_unit_rows(merged_entities, unit_ids),
        with_unit_rows(merged_relationships, unit_ids), titles, pairs, renames)
    stats.self_loops_dropped = merge_stats.self_loops_dropped
    return entities, relationships, handles + [block], stats


def renames_of(titles: list[str], units: list[str], resolution: Resolution,
               in_documents: list[MentionAlias]) -> Renames:
    """`units`: text unit ids by `Provenance` unit index."""
    renames = Renames({titles[a.row]: titles[a.canonical] for a in resolution.aliases})
    for alias in in_documents:
        renames.in_units.setdefault(titles[alias.row], {}).update(
            (units[u], titles[alias.canonical]) for u in alias.units)
    return renames


def alias_table(titles: list[str], ids: list[str], resolution: Resolution,
                in_documents: list[MentionAlias], splits: list[Split],
                provenance: Provenance) -> pa.Table:
    """One row per alias: its title and former id, its canonical entity, how it was matched,
    and the documents it was resolved in (none: everywhere). A split name has a row per new
    entity it gave mentions to (method `homonym_split`), and so has a name merged whole into
    it, scoped to the documents each entity has its mentions in (MR CARTER of Jane Eyre and
    CAPTAIN CARTER of Pride and Prejudice, merged into CARTER, which each book's context
    then took apart)."""
    documents = provenance.document_ids
    row_of = {title: row for row, title in enumerate(titles)}
    parts: dict[str, list[Split]] = defaultdict(list)
    for split in splits:
        parts[split.title].append(split)

    def row(alias: int, entity_id: str, title: str, score: float, method: str,
            evidence: str, scope: list[int]) -> dict:
        return {"alias": titles[alias], "alias_entity_id": ids[alias], "entity_id": entity_id,
                "entity_title": title, "score": score, "method": method,
                "evidence": evidence, "document_ids": [documents[d] for d in scope]}
    rows = []
    for a in resolution.aliases:
        canonical = titles[a.canonical]
        if canonical not in parts:
            rows.append(row(a.row, ids[a.canonical], canonical, a.score, a.method, a.evidence,
                            []))
            continue
        left = set(provenance.unit_document[provenance.units_of(np.array([a.row]))].tolist())
        for split in parts[canonical]:
            moved, left = left & set(split.documents), left - set(split.documents)
            if moved:
                rows.append(row(a.row, element_id("entity", split.new_title), split.new_title,
                                a.score, a.method, a.evidence, sorted(moved)))
        if left:
            rows.append(row(a.row, ids[a.canonical], canonical, a.score, a.method, a.evidence,
                            sorted(left)))
    rows += [row(m.row, ids[m.canonical], titles[m.canonical], m.score, m.method, m.evidence,
                 m.documents) for m in in_documents]
    rows += [row(row_of[s.title], element_id("entity", s.new_title), s.new_title, 1.0,
                 "homonym_split", s.evidence, s.documents) for s in splits]
    return pa.Table.from_pylist(rows, schema=ALIAS_SCHEMA)


def resolved_graph(ctx: BuildContext, merged: Merged, extraction: pa.Table) -> Graph:
    """The merged entities resolved (`resolve/`, when enabled: entities that are one, and
    mentions that are of another) and the graph finished: each element's description
    address, the covariates written by a worker when claims are kept, degrees.
    `extraction`: the status rows (which document each text unit is of)."""
    config = ctx.config
    resolved = resolve_entities(ctx, merged.entities, merged.relationships,
                                [block for _, block in merged.merged], extraction)
    entities, relationships, blocks = resolved.entities, resolved.relationships, resolved.handles
    touched = None
    if merged.previous_url is not None and not config.resolution.enabled:  # (renames)
        titles = pa.chunked_array([t for (_, t), _ in merged.merged], type=pa.string())
        touched = pc.is_in(entities.column("title"), value_set=titles).to_numpy()
    entities, relationships, addresses = place_blocks(entities, relationships, blocks)
    (claims, claims_block), = map_items(build_covariates, [(
        ctx.work_url, ctx.staged.url_of("") if config.claims.enabled else None,
        config.output.rows_per_part, ctx.tokenizer, resolved.renames)],
        config.runtime, keep_blocks=True)
    entities, relationships = add_degrees(entities, relationships)
    ctx.figures.merge = asdict(merged.stats)
    # Worked out once (a lookup by name per edge end) for Leiden, the report contexts and the
    # communities table.
    return Graph(entities, relationships, edge_endpoints(entities, relationships), addresses,
                 claims, claims_block, resolved.aliases, merged.unit_ids, touched)
