"""PostgreSQL with pgvector as the vector store (`storage/pgvector_store.py`), on a real
server the tests start and stop (`graphrag_testkit.postgres_server`): a build writes the
embeddings tables into it and every vector-reading method answers from it as brute force
does (the same ranking within ties), and the graph's tables go to it for SQL (the `postgres` graph store); an update with a deletion upserts and deletes by id while the previous version still
searches its own rows; pruning forgets what no kept version searches; an unreachable server
and a password in the URL are one line."""

from pathlib import Path

import pytest

from graphrag_testkit import postgres_server

pytestmark = [
    pytest.mark.slow,  # a PostgreSQL server in subprocesses
    pytest.mark.skipif(postgres_server.installed() is None,
                       reason="the postgres extra (pgserver's PostgreSQL with pgvector)"),
]

psycopg = pytest.importorskip("psycopg")

from graphrag_ray import GraphIndex  # noqa: E402
from graphrag_ray.config import load_config  # noqa: E402
from graphrag_ray.errors import ConfigError, GraphRagError  # noqa: E402
from graphrag_ray.index.build import build_index  # noqa: E402
from graphrag_ray.index.update import update_index  # noqa: E402
from graphrag_ray.storage import IndexStore  # noqa: E402

TABLES = {"embeddings_entity_description", "embeddings_text_unit_text",
          "embeddings_community_full_content"}
QUESTIONS = ["Who is Scrooge?", "What did Marley's ghost say?", "Where does Bob Cratchit live?"]


@pytest.fixture(scope="module")
def postgres():
    with postgres_server.postgres_server() as url:
        yield url


def _config(url: str | None, *more: str):
    store = ["vector_index.store=pgvector", f"vector_index.pgvector.url={url}",
             "vector_index.ann_min_rows=1"] if url else []
    return load_config(None, ["runtime.engine=local", "embeddings.method=hashing", *store,
                              *more])


def _answers(index, version=None, methods=("local", "basic", "drift")) -> dict:
    opened = GraphIndex.open(str(index), version=version)
    return {(method, q): (r.answer, r.sources.text_units, r.sources.entities)
            for method in methods for q in QUESTIONS for r in [opened.search(method, q)]}


def _rankings(index, k: int = 10) -> dict:
    """Per table and question, the nearest ids grouped by score (ties in any order), the
    group the k-th falls in left out (a tie there may be cut either way)."""
    opened = GraphIndex.open(str(index))
    found = {}
    for table in sorted(TABLES):
        for question in QUESTIONS:
            nearest = opened.vectors(table).nearest(opened.embed([question])[0], k)
            last = round(nearest[-1][1], 5)
            groups: dict[float, set] = {}
            for row_id, score in nearest:
                groups.setdefault(round(score, 5), set()).add(row_id)
            found[(table, question)] = {s: ids for s, ids in groups.items() if s != last}
    return found


def _live_ids(url: str, entry: dict) -> set[str]:
    with psycopg.connect(url) as connection:
        return {row[0] for row in connection.execute(
            f"SELECT id FROM {entry['table']} WHERE added <= %s AND (removed IS NULL OR "
            "removed > %s)", [entry["version"], entry["version"]])}


def test_a_build_answers_from_postgres_as_brute_force_does(postgres, carol_excerpt, tmp_path):
    stored = build_index(str(carol_excerpt), str(tmp_path / "pg"), _config(
        postgres, "vector_index.pgvector.hnsw_min_rows=1", "output.graph_stores=[postgres]"),
        progress=lambda _: None)
    exact = build_index(str(carol_excerpt), str(tmp_path / "exact"), _config(None),
                        progress=lambda _: None)
    assert set(stored.vector_stores) == TABLES and not exact.vector_stores
    for table, entry in stored.vector_stores.items():
        assert entry["store"] == "pgvector" and entry["index"] == "hnsw"
        ids = IndexStore(str(tmp_path / "pg")).open().read_table(table, ["id"])
        assert _live_ids(postgres, entry) == set(ids.column("id").to_pylist())
    # The same vectors, the same ranking within ties (the order inside a tie is by id in
    # PostgreSQL, by row in memory), and so the same local and basic answers.
    assert _rankings(tmp_path / "pg") == _rankings(tmp_path / "exact")
    assert _answers(tmp_path / "pg", methods=("local", "basic")) == _answers(
        tmp_path / "exact", methods=("local", "basic"))
    # The graph too, for SQL (the postgres graph store).
    version = IndexStore(str(tmp_path / "pg")).open()
    with psycopg.connect(postgres) as connection:
        for table in ("entities", "relationships", "communities", "community_reports"):
            count = connection.execute(f"SELECT count(*) FROM graphrag_{table} WHERE "
                                       "index_version = %s", [stored.version]).fetchone()[0]
            assert count == version.read_table(table, ["id"]).num_rows, table
        scrooge = connection.execute("SELECT degree, text_unit_ids FROM graphrag_entities "
                                     "WHERE title = 'SCROOGE'").fetchone()
    assert scrooge[0] > 0 and scrooge[1]


def test_an_update_upserts_and_deletes_and_the_old_version_still_answers(
        postgres, carol_excerpt, tmp_path):
    (carol_excerpt / "marley.txt").write_text(
        "Jacob Marley was dead to begin with. His ghost wore a chain of cash-boxes, keys and "
        "padlocks, and told Ebenezer Scrooge of three Spirits to come.", encoding="utf-8")
    index = tmp_path / "index"
    first = build_index(str(carol_excerpt), str(index), _config(postgres),
                        progress=lambda _: None)
    before = _answers(index)
    (carol_excerpt / "marley.txt").unlink()
    (carol_excerpt / "fezziwig.txt").write_text(
        "Old Fezziwig gave a ball at his warehouse, and young Scrooge danced with Dick "
        "Wilkins and the three Miss Fezziwigs.", encoding="utf-8")
    second = update_index(str(index), str(carol_excerpt), _config(postgres),
                          progress=lambda _: None)
    units = "embeddings_text_unit_text"
    old, new = first.vector_stores[units], second.vector_stores[units]
    assert new["table"] == old["table"] and new["version"] > old["version"]
    stored = IndexStore(str(index))
    assert _live_ids(postgres, new) == set(
        stored.open().read_table(units, ["id"]).column("id").to_pylist())
    gone = _live_ids(postgres, old) - _live_ids(postgres, new)
    assert gone and _live_ids(postgres, new) - _live_ids(postgres, old)
    # Both versions side by side: the first still answers as it did.
    assert _answers(index, first.version) == before
    stored.prune(keep=1)
    with psycopg.connect(postgres) as connection:
        left = {row[0] for row in connection.execute(f"SELECT id FROM {new['table']}")}
    assert not gone & left and _live_ids(postgres, new) == left


def test_an_unreachable_server_and_a_password_in_the_url_are_one_line(carol_excerpt,
                                                                       tmp_path):
    port = postgres_server._free_port()
    with pytest.raises(GraphRagError, match=r"^cannot use PostgreSQL at postgresql://"
                                            rf"127\.0\.0\.1:{port}/db: ") as raised:
        build_index(str(carol_excerpt), str(tmp_path / "index"),
                    _config(f"postgresql://someone@127.0.0.1:{port}/db"),
                    progress=lambda _: None)
    assert "\n" not in str(raised.value) and "someone" not in str(raised.value)
    with pytest.raises(ConfigError, match="PGPASSWORD"):
        _config("postgresql://someone:secret@127.0.0.1:5432/db")


MS_CAROL = Path(__file__).resolve().parents[2].parent / "shared" / "msgraphrag" / "carol"


@pytest.mark.skipif(not MS_CAROL.exists(), reason="needs ../shared/msgraphrag/carol")
def test_an_adopted_index_writes_its_vectors_into_postgres(postgres, tmp_path):
    from graphrag_ray.index.adopt.stage import adopt_index

    settings = ["vector_index.store=pgvector", f"vector_index.pgvector.url={postgres}",
                "vector_index.ann_min_rows=1", "runtime.engine=local"]
    manifest = adopt_index(str(MS_CAROL), str(tmp_path / "index"), settings,
                           progress=lambda _: None)
    assert manifest.vector_stores and all(
        entry["store"] == "pgvector" for entry in manifest.vector_stores.values())
    for table, entry in manifest.vector_stores.items():
        ids = IndexStore(str(tmp_path / "index")).open().read_table(table, ["id"])
        assert _live_ids(postgres, entry) == set(ids.column("id").to_pylist())
