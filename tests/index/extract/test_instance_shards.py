"""Instance pieces on storage (`extract/instance_shards`): a shard read back is in `seq`
order however its pieces were written, and a folder of many pieces is gathered into
bounded ones that read back the same."""

import pyarrow as pa

from graphrag_ray.index.extract import instance_shards
from graphrag_ray.index.extract.instance_shards import (
    GATHERED, gather_shard, read_shard, write_pieces)
from graphrag_ray.index.extract.stage import (
    CLAIM_INSTANCE_SCHEMA, ENTITY_INSTANCE_SCHEMA, MENTION_SCHEMA,
    RELATIONSHIP_INSTANCE_SCHEMA)

SCHEMAS = (ENTITY_INSTANCE_SCHEMA, MENTION_SCHEMA, RELATIONSHIP_INSTANCE_SCHEMA)


def _batch(seqs: list[int]) -> tuple[pa.Table, pa.Table, pa.Table]:
    """One extraction batch's instances for shard 0: an entity and a mention per chunk (two
    entities in chunk 7), no relationships."""
    titles = [f"E{seq}-{i}" for seq in seqs for i in range(1 + (seq == 7))]
    units = [f"unit-{seq}" for seq in seqs for _ in range(1 + (seq == 7))]
    order = [seq for seq in seqs for _ in range(1 + (seq == 7))]
    entities = pa.table({"title": titles, "type": ["PERSON"] * len(titles),
                         "description": [f"about {t}" for t in titles],
                         "text_unit_id": units, "seq": pa.array(order, pa.int64())},
                        schema=ENTITY_INSTANCE_SCHEMA)
    mentions = pa.table({"title": titles, "text_unit_id": units,
                         "seq": pa.array(order, pa.int64())}, schema=MENTION_SCHEMA)
    return entities, mentions, RELATIONSHIP_INSTANCE_SCHEMA.empty_table()


def test_a_folder_past_the_limit_is_gathered_into_bounded_pieces_that_read_back_the_same(
        tmp_path, monkeypatch):
    work = f"file://{tmp_path}/work"
    for name, seqs in (("a", [9, 3]), ("b", [7, 1]), ("c", [5, 8, 2])):
        write_pieces(work, [_batch(seqs)], CLAIM_INSTANCE_SCHEMA.empty_table(),
                     f"batch-{name}.parquet")
    pieces = read_shard(work, 0, SCHEMAS)
    assert pieces[0].column("seq").to_pylist() == [1, 2, 3, 5, 7, 7, 8, 9]
    monkeypatch.setattr(instance_shards, "GATHER_PAST_PIECES", 2)
    monkeypatch.setattr(instance_shards, "GATHERED_PIECE_ROWS", 3)
    stale = tmp_path / "work" / GATHERED / "entities" / "shard-00000"
    stale.mkdir(parents=True)
    (stale / "carried-0000000000000000099-00000.parquet").write_bytes(b"a retried task's")
    gather_shard(work, 0, pieces)
    gathered = tmp_path / "work" / GATHERED
    names = sorted(p.name for p in (gathered / "entities" / "shard-00000").iterdir())
    # Chunk 7's two entities span two pieces: their names differ by number.
    assert names == ["carried-0000000000000000001-00000.parquet",
                     "carried-0000000000000000005-00001.parquet",
                     "carried-0000000000000000008-00002.parquet"]
    assert not (gathered / "relationships").exists()  # (no pieces: nothing to gather)
    # Read back from the gathered folders alone: the same instances, in the same order.
    again = tmp_path / "again" / "instances"
    again.mkdir(parents=True)
    for kind in ("entities", "mentions"):
        (gathered / kind).rename(again / kind)
    for before, after in zip(pieces, read_shard(f"file://{tmp_path}/again", 0, SCHEMAS)):
        assert after.equals(before)


def test_a_folder_within_the_limit_is_left_as_it_is(tmp_path):
    work = f"file://{tmp_path}/work"
    write_pieces(work, [_batch([4, 2])], CLAIM_INSTANCE_SCHEMA.empty_table(), "batch-a.parquet")
    gather_shard(work, 0, read_shard(work, 0, SCHEMAS))
    assert not (tmp_path / "work" / GATHERED).exists()
