"""Which summaries a version keeps for the next update (`_element_digests`: summarized
elements whose summary did not fall back, with their row tokens) and when an update takes
them: the same settings only; a summary that fell back is asked again."""

import numpy as np
import pyarrow as pa
import pytest

from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.graph.description_blocks import split_descriptions
from graphrag_ray.index.graph.merge import add_degrees, merge_elements
from graphrag_ray.index.context_rows import inner_cells_tokens, number_tokens
from graphrag_ray.index.reports.kept_summaries import ELEMENT_DIGESTS, element_digests
from graphrag_ray.index.update import update_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server
from graphrag_testkit.synthetic_corpus import generate_corpus

from conftest import llm_config


def _structure():
    """SCROOGE with two descriptions, MARLEY with one; one relationship with two."""
    entities = pa.table({"title": ["SCROOGE", "SCROOGE", "MARLEY"],
                         "type": ["PERSON"] * 3,
                         "description": ["A miser.", "A reformed man.", "His partner."],
                         "text_unit_id": ["u1", "u2", "u1"]})
    relationships = pa.table({"source": ["SCROOGE", "MARLEY"], "target": ["MARLEY", "SCROOGE"],
                              "description": ["Partners.", "Haunts him."],
                              "strength": [1.0, 1.0], "text_unit_id": ["u1", "u2"]})
    merged = merge_elements(entities, relationships)
    entities, relationships, _ = split_descriptions(merged[0], merged[1], 0, "cl100k_base")
    return add_degrees(entities, relationships)


def test_digests_keep_summarized_elements_with_their_summary_rows_tokens():
    entities, relationships = _structure()
    titles = entities.column("title").to_pylist()
    scrooge, edge = titles.index("SCROOGE"), entities.num_rows  # the relationship's key
    summary = "A miser who became generous."
    record = {"title": "SCROOGE", "type": "PERSON", "description": summary}
    inner = inner_cells_tokens(record, "cl100k_base")
    degree = entities.column("degree").to_numpy()[scrooge]
    row_tokens = np.zeros(entities.num_rows + relationships.num_rows, np.int64)
    row_tokens[scrooge] = inner + number_tokens(np.array([degree]), "cl100k_base")[0] + 1
    table = element_digests(entities, relationships, row_tokens, {edge}, "cl100k_base")
    # MARLEY (one description) was not summarized; the relationship's summary fell back.
    assert table.column("id").to_pylist() == [entities.column("id")[scrooge].as_py()]
    assert table.column("digest").to_pylist() == [
        entities.column("description_digest")[scrooge].as_py()]
    assert table.column("inner_tokens").to_pylist() == [inner]


def test_an_update_with_other_settings_summarizes_everything_again(tmp_path):
    corpus, index = tmp_path / "corpus", str(tmp_path / "index")
    generate_corpus(corpus, 8_000, seed=5, tokens_per_document=1_000)
    config = load_config(None, ["runtime.engine=local"])
    built = build_index(str(corpus), index, config, progress=lambda _: None)
    (corpus / "zz-new.txt").write_text(sorted(corpus.glob("*.txt"))[0].read_text()[:1500])
    other = load_config(None, ["runtime.engine=local", "summarize.max_length=60"])
    updated = update_index(index, str(corpus), other, progress=lambda _: None)
    assert built.summaries["summarized"] > 0
    assert updated.summaries["kept"] == 0
    assert updated.summaries["summarized"] >= built.summaries["summarized"]


@pytest.mark.slow
def test_a_summary_that_fell_back_is_asked_again_by_the_next_update(carol_excerpt, tmp_path):
    index = str(tmp_path / "index")
    overrides = ("runtime.engine=local", "extraction.max_gleanings=0", "llm.max_retries=0",
                 "summarize.llm_min_descriptions=2")
    with run_test_server(rate_5xx=0.3, seed=11) as flaky:
        first = build_index(str(carol_excerpt), index, llm_config(flaky, *overrides),
                            progress=lambda _: None)
    fell_back = first.summaries["extractive_fallbacks"]
    assert fell_back > 0
    kept = IndexStore(index).open().read_table(ELEMENT_DIGESTS)
    assert kept.num_rows == first.summaries["summarized"] - fell_back
    (carol_excerpt / "more.txt").write_text("Jonas Pellew founded Quarry Lane Works in "
                                            "Camden Town.")
    with run_test_server() as healthy:
        second = update_index(index, str(carol_excerpt), llm_config(healthy, *overrides),
                              progress=lambda _: None)
        asked = healthy.stats()["by_kind"].get("summarize", 0)
    assert second.summaries["kept"] > 0
    assert second.summaries["extractive_fallbacks"] == 0
    # The fallbacks were asked again (their lists did not change), and none kept was.
    assert asked >= fell_back
    assert second.llm_usage.stages["summarize"].cache_hits + asked == \
        second.summaries["summarized"] - second.summaries["joined_without_llm"]
    assert IndexStore(index).open().read_table(ELEMENT_DIGESTS).num_rows == \
        second.summaries["summarized"] + second.summaries["kept"]


def test_a_kept_description_is_read_from_the_row_the_table_serves(tmp_path):
    """A previous table whose linked part leaves an entity's old row out (its current row is
    in a later part): the kept description is the current row's, read once."""
    import fsspec

    from graphrag_ray.index.reports.kept_summaries import _kept_descriptions
    from graphrag_ray.storage.parquet_io import write_parquet

    fs = fsspec.filesystem("file")
    old, new = str(tmp_path / "part-00000.parquet"), str(tmp_path / "part-00001.parquet")
    write_parquet(fs, old, pa.table({"id": ["e1", "e2"], "description": ["stale", "two"]}))
    write_parquet(fs, new, pa.table({"id": ["e1"], "description": ["current"]}))
    keys, block = _kept_descriptions([old, new], pa.array(["e1", "e2"]), np.array([10, 20]),
                                     {"part-00000.parquet": pa.array(["e1"])})
    assert dict(zip(keys.tolist(), block.column("description").to_pylist())) == {
        10: "current", 20: "two"} and len(keys) == 2
