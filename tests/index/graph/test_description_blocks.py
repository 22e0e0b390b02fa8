import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray.index.graph.description_blocks import (
    place_blocks, read_descriptions, split_descriptions)
from graphrag_ray.index.graph.merge import combine_shards, merge_elements, merge_shard
from graphrag_ray.index.elements import partition_instances


def _read(addresses, keys, lists=False):
    handles, where = addresses.gather(keys, lists)
    return read_descriptions(handles, where,  # the local engine's handles are the tables
                             "descriptions" if lists else "description")


@pytest.mark.parametrize("n_shards", [1, 4])
def test_blocks_hold_the_text_the_unsharded_merge_holds(carol_instances, n_shards):
    entity_instances, relationship_instances = carol_instances
    entities, relationships, _ = merge_elements(entity_instances, relationship_instances)
    merged, blocks = [], []
    for number, pieces in enumerate(partition_instances(entity_instances, relationship_instances,
                                                        n_shards)):
        shard_entities, shard_relationships, stats = merge_shard(pieces)
        shard_entities, shard_relationships, block = split_descriptions(
            shard_entities, shard_relationships, number, "cl100k_base")
        merged.append((shard_entities, shard_relationships, stats))
        blocks.append(block)
    structure_entities, structure_relationships, _ = combine_shards(merged)
    structure_entities, structure_relationships, addresses = place_blocks(
        structure_entities, structure_relationships, blocks)

    # The driver's tables: everything but the text, rows in the unsharded order.
    counted = ["description_count", "inner_tokens", "description_digest"]
    assert structure_entities.drop_columns(counted).equals(entities.drop_columns(["descriptions"]))
    assert structure_relationships.drop_columns(counted).equals(
        relationships.drop_columns(["descriptions"]))
    lists = entities.column("descriptions").to_pylist() + \
        relationships.column("descriptions").to_pylist()
    keys = np.arange(len(lists))
    assert _read(addresses, keys, lists=True) == lists
    assert (structure_entities.column("description_count").to_pylist()
            + structure_relationships.column("description_count").to_pylist()) == \
        [len(d) for d in lists]
    # One description is final; several wait for a summary.
    assert _read(addresses, keys) == [d[0] if len(d) == 1 else "" for d in lists]
    assert any(len(d) > 1 for d in lists) and any(len(d) == 1 for d in lists)

    # A summary block takes over its keys' descriptions, not their lists.
    several = [int(k) for k in keys if len(lists[k]) > 1][:3]
    addresses.add_summaries(pa.table({"description": [f"summary {k}" for k in several]}),
                            several)
    assert _read(addresses, several) == [f"summary {k}" for k in several]
    assert _read(addresses, several, lists=True) == [lists[k] for k in several]
