"""Candidate pairs by blocking, sharded: every entity's blocking keys are hash-partitioned
(`key_rows`, one task per slice of the entities), then each partition's blocks are paired and
scored on their own (`score_partition`, one task per partition). Only pairs that score at
least the review threshold leave a task, so no one holds all candidate pairs.

A block larger than `max_block_size` is not paired all against all (a common surname, a
frequent word): only its one-word names ("SMITH" in `t:SMITH`) are paired with the rest,
which is where a short form meets its full names, and a block even larger than that is
skipped and counted.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.index.elements import shard_of
from graphrag_ray.index.resolve.names import blocking_keys, is_short_form_key
from graphrag_ray.index.resolve.scoring import Profiles, score_pair

KEY_SCHEMA = pa.schema([("partition", pa.int32()), ("key", pa.string()), ("row", pa.int32())])
PAIR_SCHEMA = pa.schema([("a", pa.int32()), ("b", pa.int32()), ("score", pa.float64()),
                         ("kind", pa.string()), ("evidence", pa.string())])
# A block with more short forms than this in a large block is skipped (it says nothing).
MAX_SHORT_FORM_PAIRS = 200_000


def key_rows(titles: list[str], first_row: int, partitions: int) -> pa.Table:
    """(partition, key, row) for every blocking key of every title (rows from `first_row`)."""
    keys, rows = [], []
    for offset, title in enumerate(titles):
        for key in sorted(blocking_keys(title)):
            keys.append(key)
            rows.append(first_row + offset)
    key_array = pa.array(keys, pa.string())
    return pa.table({"partition": pa.array(shard_of(key_array, partitions), pa.int32()),
                     "key": key_array, "row": pa.array(rows, pa.int32())}, schema=KEY_SCHEMA)


def blocks_of(key_tables: list[pa.Table], partition: int) -> dict[str, list[int]]:
    members: dict[str, list[int]] = defaultdict(list)
    for table in key_tables:
        mine = table.filter(pc.equal(table.column("partition"), partition))
        for key, row in zip(mine.column("key").to_pylist(), mine.column("row").to_pylist()):
            members[key].append(row)
    return members


def pairs_of_blocks(blocks: dict[str, list[int]], titles: list[str], max_block_size: int,
                    counts: dict[str, int]) -> set[tuple[int, int]]:
    """Each unordered pair once, (smaller row, larger row); `counts` gets the blocks paired,
    reduced to their short forms, and skipped."""
    pairs: set[tuple[int, int]] = set()
    for key, rows in blocks.items():
        rows = sorted(set(rows))
        if len(rows) < 2:
            continue
        if len(rows) <= max_block_size:
            counts["blocks_paired"] += 1
            pairs.update((a, b) for i, a in enumerate(rows) for b in rows[i + 1:])
            continue
        short = [r for r in rows if is_short_form_key(titles[r], key)]
        if not short or len(short) * len(rows) > MAX_SHORT_FORM_PAIRS:
            counts["blocks_skipped"] += 1
            continue
        counts["blocks_short_forms_only"] += 1
        pairs.update((min(s, r), max(s, r)) for s in short for r in rows if r != s)
    return pairs


def score_partition(partition: int, key_tables: list[pa.Table], profiles: Profiles,
                    max_block_size: int, review_threshold: float) -> tuple[pa.Table, dict]:
    """The partition's candidate pairs that score at least `review_threshold`, and counts."""
    counts = defaultdict(int)
    pairs = pairs_of_blocks(blocks_of(key_tables, partition), profiles.titles, max_block_size,
                            counts)
    counts["pairs_scored"] = len(pairs)
    kept = []
    for a, b in sorted(pairs):
        scored = score_pair(profiles, a, b)
        if scored is not None and scored.score >= review_threshold:
            kept.append((a, b, scored.score, scored.kind, scored.evidence))
    columns = list(zip(*kept)) if kept else [[]] * len(PAIR_SCHEMA)
    return pa.table({f.name: pa.array(list(c), f.type) for f, c in zip(PAIR_SCHEMA, columns)},
                    schema=PAIR_SCHEMA), dict(counts)


def neighbour_lists(n_entities: int, sources: np.ndarray, targets: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The graph's adjacency in CSR form (offsets, neighbours), both directions."""
    ends = np.concatenate([sources, targets])
    others = np.concatenate([targets, sources])
    order = np.argsort(ends, kind="stable")
    offsets = np.zeros(n_entities + 1, dtype=np.int64)
    np.add.at(offsets, ends + 1, 1)
    return np.cumsum(offsets), others[order].astype(np.int64)
