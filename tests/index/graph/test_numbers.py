"""Entities and relationships keep their `human_readable_id` across versions: a report an
update keeps cites its entities and relationships by those numbers, so they must name the same
rows in the new version (new elements are numbered after the previous largest)."""

import re
from pathlib import Path

import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.graph.numbers import kept_numbers
from graphrag_ray.index.update import update_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.synthetic_corpus import generate_corpus

_CITED = re.compile(r"(Entities|Relationships) \(([\d, ]+)\)")


def test_kept_numbers_keep_the_previous_ones_and_number_new_ids_after_the_largest():
    before = pa.table({"id": ["a", "b", "c"], "human_readable_id": [0, 7, 3]})
    numbers = kept_numbers(pa.chunked_array([pa.array(["n1", "c", "a", "n2"])]), before)
    assert numbers.to_pylist() == [8, 3, 0, 9]
    assert kept_numbers(pa.array(["x", "y"]), None).to_pylist() == [0, 1]


def _citations(url: str, version: str) -> dict[str, list[tuple[str, str]]]:
    """Each report's text -> what its citations name (entity titles, relationship ends)."""
    opened = IndexStore(url).open(version)
    names = {"Entities": {r["human_readable_id"]: r["title"] for r in opened.read_table(
                 schema.ENTITIES, ["human_readable_id", "title"]).to_pylist()},
             "Relationships": {r["human_readable_id"]: f"{r['source']}->{r['target']}"
                               for r in opened.read_table(schema.RELATIONSHIPS, [
                                   "human_readable_id", "source", "target"]).to_pylist()}}
    cited = {}
    for report in opened.read_table(schema.COMMUNITY_REPORTS, ["full_content"]).to_pylist():
        text = report["full_content"]
        cited[text] = [(kind, names[kind].get(int(n))) for kind, numbers in _CITED.findall(text)
                       for n in numbers.split(",") if n.strip()]
    return cited


def test_a_kept_reports_citations_name_the_same_elements_after_an_update(tmp_path):
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 24_000, seed=3, tokens_per_document=1_500)
    index = str(tmp_path / "index")
    config = load_config(None, ["runtime.engine=local"])
    first = build_index(str(corpus), index, config, progress=lambda _: None)
    # Names that sort before every other: positional numbers would all move.
    Path(corpus / "aa-new.txt").write_text(
        "Aaron Abbott founded Aardvark Analytics. Aaron Abbott met Abel Acker in Aberdeen. "
        "Abel Acker joined Aardvark Analytics as its first engineer.")
    second = update_index(index, str(corpus), config, progress=lambda _: None)
    assert second.update["reports_kept"] > 0
    before, after = _citations(index, first.version), _citations(index, second.version)
    kept = [text for text in after if text in before and before[text]]
    assert kept
    assert all(after[text] == before[text] for text in kept)
    assert all(name is not None for text in kept for _, name in after[text])
