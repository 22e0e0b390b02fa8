import pyarrow as pa

from graphrag_ray.config import RuntimeConfig
from graphrag_ray.distributed import map_table, resolve_engine, split_table


class Doubler:
    def __init__(self, factor: int):
        self.factor = factor

    def __call__(self, batch: pa.Table) -> pa.Table:
        return pa.table({"key": batch.column("key"),
                         "value": [v * self.factor for v in batch.column("key").to_pylist()]})


SCHEMA = pa.schema([("key", pa.int64()), ("value", pa.int64())])


def test_resolve_engine(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert resolve_engine(RuntimeConfig(engine="local"), 10_000) == "local"
    assert resolve_engine(RuntimeConfig(engine="ray"), 1) == "ray"
    assert resolve_engine(RuntimeConfig(ray_address="ray://head:10001"), 1) == "ray"
    monkeypatch.setenv("RAY_ADDRESS", "auto")
    assert resolve_engine(RuntimeConfig(), 1) == "ray"


def test_split_table():
    blocks = split_table(pa.table({"key": list(range(10))}), 4)
    assert [b.num_rows for b in blocks] == [4, 4, 2]


def test_ray_and_local_give_the_same_rows(ray_session):
    table = pa.table({"key": pa.array(range(50), pa.int64())})
    local = map_table(table, Doubler, {"factor": 3}, RuntimeConfig(engine="local", batch_size=7),
                      output_schema=SCHEMA)
    on_ray = map_table(table, Doubler, {"factor": 3},
                       RuntimeConfig(engine="ray", batch_size=7, num_workers=2),
                       output_schema=SCHEMA)
    assert on_ray.sort_by("key").equals(local.sort_by("key"))
    assert local.column("value").to_pylist() == [3 * k for k in range(50)]
