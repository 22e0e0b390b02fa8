"""Golden tables: every table of a small build, offline and through the test LLM server, equal
to the committed copy (`tests/data/golden/`), on both engines. Each table is one stage's
output (documents and text units: reading and chunking; entities and relationships:
extraction, merge and summaries; communities: Leiden; community reports; covariates: claims;
embeddings), so a change that moves any stage's output shows here, table by table.

A change meant to alter outputs regenerates them, to be reviewed as a diff like any code:

    GRAPHRAG_UPDATE_GOLDEN=1 python -m pytest -q tests/index/test_golden_tables.py -k local
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphrag_ray import schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server

from conftest import llm_config

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
UPDATE = os.environ.get("GRAPHRAG_UPDATE_GOLDEN") == "1"
TABLES = [schema.DOCUMENTS, schema.TEXT_UNITS, schema.ENTITIES, schema.RELATIONSHIPS,
          schema.COMMUNITIES, schema.COMMUNITY_REPORTS, schema.ENTITY_DESCRIPTION_EMBEDDINGS,
          schema.TEXT_UNIT_EMBEDDINGS, schema.REPORT_EMBEDDINGS]
# The build date and the input file's time; everything else is a function of the input's
# text, the config and the replies.
UNSTABLE_COLUMNS = {"period", "creation_date"}


def comparable(table: pa.Table) -> pa.Table:
    """The table without its date columns. An embeddings table is a lookup by id, written as
    the texts become final: in id order, each vector as a digest of its values rounded to six
    decimals (a golden of the vectors themselves would weigh megabytes)."""
    table = table.drop_columns([c for c in table.column_names if c in UNSTABLE_COLUMNS])
    if "vector" in table.column_names:
        digests = [hashlib.sha256(np.round(np.asarray(v, np.float64), 6).tobytes()).hexdigest()
                   for v in table.column("vector").to_pylist()]
        table = table.set_column(table.column_names.index("vector"), "vector",
                                 pa.array(digests, pa.string())).sort_by("id")
    return table


def check_against_golden(index: Path, name: str, extra_tables: list[str] = ()) -> None:
    store = IndexStore(str(index)).open()
    folder = GOLDEN / name
    for table_name in [*TABLES, *extra_tables]:
        table = comparable(store.read_table(table_name))
        path = folder / f"{table_name}.parquet"
        if UPDATE:
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path, compression="zstd")
            continue
        expected = pq.read_table(path)
        assert table.column_names == expected.column_names, table_name
        assert table.num_rows == expected.num_rows, table_name
        for column in table.column_names:
            got, want = table.column(column).to_pylist(), expected.column(column).to_pylist()
            mismatch = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), None)
            assert mismatch is None, (f"{table_name}.{column} row {mismatch}: "
                                      f"{got[mismatch]!r} != {want[mismatch]!r}")


@pytest.fixture(scope="module")
def excerpt(tmp_path_factory) -> Path:
    """The first 50,000 characters of the book from STAVE ONE."""
    from conftest import CAROL_DIR

    text = (CAROL_DIR / "book.txt").read_text(encoding="utf-8")
    start = text.find("STAVE ONE")
    folder = tmp_path_factory.mktemp("golden-input")
    (folder / "carol.txt").write_text(text[start:start + 50_000], encoding="utf-8")
    return folder


def _engine_param(engine: str):
    return pytest.param(engine, marks=pytest.mark.slow) if engine == "ray" else engine


@pytest.mark.parametrize("engine", [_engine_param("local"), _engine_param("ray")])
def test_offline_build_equals_its_golden_tables(engine, excerpt, tmp_path, request):
    if engine == "ray":
        request.getfixturevalue("ray_session")
    config = load_config(None, [f"runtime.engine={engine}"])
    build_index(str(excerpt), str(tmp_path / "index"), config, progress=lambda _: None)
    check_against_golden(tmp_path / "index", "offline")


@pytest.mark.parametrize("engine", [_engine_param("local"), _engine_param("ray")])
def test_llm_build_equals_its_golden_tables_and_a_rerun_calls_nothing(engine, excerpt, tmp_path,
                                                                       request):
    if engine == "ray":
        request.getfixturevalue("ray_session")
    with run_test_server() as server:
        config = llm_config(server, "claims.enabled=true", f"runtime.engine={engine}",
                            f"embeddings.api_base={server.url}",
                            "embeddings.model=test-embedding")
        build_index(str(excerpt), str(tmp_path / "index"), config, progress=lambda _: None)
        check_against_golden(tmp_path / "index", "llm", [schema.COVARIATES])
        served = server.stats()["requests"]
        manifest = build_index(str(excerpt), str(tmp_path / "index"), config,
                               progress=lambda _: None)
        assert server.stats()["requests"] == served
        assert manifest.llm_usage.total.calls == 0
