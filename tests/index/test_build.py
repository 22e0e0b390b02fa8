"""The build's choices before it reads anything (`index/build`)."""

from pathlib import Path

from graphrag_ray.config import load_config
from graphrag_ray.distributed import engine
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_testkit.synthetic_corpus import generate_corpus

QUIET = {"progress": lambda _: None}


def test_an_update_picks_its_engine_for_the_files_it_reads_not_the_corpus(tmp_path: Path,
                                                                          monkeypatch):
    """An update that carries the unchanged files over extracts only the others: with an
    in-process limit between those chunks and the corpus's, it stays in-process (counting
    the corpus, it would start Ray)."""
    # As in a fresh process (other tests of this session may have started Ray here).
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(engine, "ray_initialized", lambda: False)
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 20_000, seed=3, tokens_per_document=1_000)
    index = str(tmp_path / "index")
    built = build_index(str(corpus), index, load_config(None, ["runtime.engine=local"]), **QUIET)
    assert built.extraction.chunks > 20
    (corpus / "zz-new.txt").write_text("Marta Quill joined Quarry Lane Works in Oslo.",
                                       encoding="utf-8")
    updated = update_index(index, str(corpus), load_config(None, [
        "runtime.local_max_chunks=10"]), **QUIET)
    assert updated.update["documents"]["added"] == 1
    assert updated.config["runtime"]["engine"] == "local"
