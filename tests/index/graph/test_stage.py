"""The merge stage's kept shards (`graph/stage`): an update merges what it touched into the
shards the previous version kept, whichever way they list their text units."""

from pathlib import Path

import fsspec
import pytest

from graphrag_ray import schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.carry_over import READING
from graphrag_ray.index.graph import stage
from graphrag_ray.index.graph.unit_rows import UNIT_ROWS, with_unit_ids
from graphrag_ray.index.update import update_index
from graphrag_ray.storage import IndexStore
from graphrag_ray.storage.parquet_io import read_parquet, write_parquet
from graphrag_testkit.synthetic_corpus import generate_corpus

pytestmark = pytest.mark.slow

QUIET = {"progress": lambda _: None}


def _config():
    return load_config(None, ["runtime.engine=local"])


def _graph(url: str) -> tuple[dict, dict]:
    version = IndexStore(url).open()
    entities = version.read_table(schema.ENTITIES, ["title", "description", "text_unit_ids"])
    relationships = version.read_table(schema.RELATIONSHIPS,
                                       ["source", "target", "weight", "text_unit_ids"])
    return ({e.pop("title"): {k: sorted(v) if isinstance(v, list) else v
                              for k, v in e.items()} for e in entities.to_pylist()},
            {(r["source"], r["target"]): (r["weight"], sorted(r["text_unit_ids"]))
             for r in relationships.to_pylist()})


def _kept_shards_as_ids(index: str) -> int:
    """The version's kept merged shards rewritten as versions before rows wrote them (each
    element's text unit ids, and no state); how many files."""
    version = IndexStore(index).open()
    unit_ids = version.read_table(f"{READING}/status", ["text_unit_id"]).column(
        "text_unit_id").combine_chunks()
    fs, root = fsspec.core.url_to_fs(version.url_of(f"{READING}/{stage.MERGED}"))
    rewritten = 0
    for path in fs.ls(root, detail=False):
        if "/block-" in path:
            continue
        if f"-{stage.STATE}-" in path:
            fs.rm(path)
            continue
        table = read_parquet(fs, path)
        assert UNIT_ROWS in table.column_names
        write_parquet(fs, path, with_unit_ids(table, unit_ids), read_whole=True)
        rewritten += 1
    return rewritten


@pytest.mark.parametrize("kept_as_ids", [False, True], ids=["rows", "ids"])
def test_an_update_merged_into_the_kept_shards_equals_a_full_build(tmp_path: Path,
                                                                   kept_as_ids: bool):
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 12_000, seed=5, tokens_per_document=1_500)
    index = str(tmp_path / "index")
    build_index(str(corpus), index, _config(), **QUIET)
    if kept_as_ids:
        assert _kept_shards_as_ids(index) >= 2
    files = sorted(corpus.glob("*.txt"))
    files[2].unlink()  # a deleted file drops units under elements kept elsewhere
    (corpus / "zz-new.txt").write_text(files[0].read_text(encoding="utf-8")[:3_000] +
                                       "\nMarta Quill joined Quarry Lane Works.",
                                       encoding="utf-8")
    updated = update_index(index, str(corpus), _config(), **QUIET)
    assert updated.update["documents"]["deleted"] == 1
    full = str(tmp_path / "full")
    build_index(str(corpus), full, _config(), **QUIET)
    assert _graph(index) == _graph(full)
    # Files only added: the shards that gained instances merge them into the kept rows
    # (`added_merge`), from the state the last update kept.
    for number, source in ((1, files[3]), (2, files[5])):
        (corpus / f"m{number}-added.txt").write_text(
            source.read_text(encoding="utf-8")[:4_000] + f"\nTessa Varn {number} met "
            "Marta Quill at Quarry Lane Works.", encoding="utf-8")
    updated = update_index(index, str(corpus), _config(), **QUIET)
    assert updated.update["documents"]["added"] == 2 and not updated.update[
        "documents"]["deleted"]
    again = str(tmp_path / "again")
    build_index(str(corpus), again, _config(), **QUIET)
    assert _graph(index) == _graph(again)
    assert updated.merge == IndexStore(again).open().read_manifest().merge
