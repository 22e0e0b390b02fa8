"""The update planner (`index/update_plan`): what a build keeps of the version it updates,
level by level. A build is the plan of nothing kept; an update's plan carries the unchanged
files, keeps extractions only under the same extraction settings, and starts Leiden from the
previous partition."""

from pathlib import Path

import numpy as np

from graphrag_ray import schema
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update_plan import UpdatePlan
from graphrag_ray.input.loader import list_input_files, relative_path
from graphrag_ray.prompts_loader import load_prompts
from graphrag_ray.storage import IndexStore

TEXTS = {
    "a.txt": "Ada Lovelace wrote the first program for the Analytical Engine of Charles "
             "Babbage in London. Babbage designed the engine; Lovelace described it.",
    "b.txt": "Grace Hopper built the first compiler at Remington Rand. Hopper later led "
             "the COBOL work with the Navy in Washington.",
    "c.txt": "Alan Turing worked at Bletchley Park on the Enigma cipher. Turing later "
             "wrote of machine intelligence in Manchester.",
}


def _config(*overrides: str):
    return load_config(None, ["runtime.engine=local", "cache.enabled=false",
                              "embeddings.method=hashing", *overrides])


def _corpus(folder: Path, texts: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _plan(index: str, corpus: Path, config) -> UpdatePlan:
    previous = IndexStore(index).open()
    return UpdatePlan.of(previous, previous.read_manifest(), config, load_prompts(config),
                         list_input_files(str(corpus), config.input))


def test_a_build_is_the_plan_that_keeps_nothing():
    plan = UpdatePlan.fresh()
    assert not plan.is_update and plan.tables is None and plan.vector_stores is None
    assert plan.files_to_read(["a.txt", "b.txt"], [3, 4]) == [3, 4]
    assert plan.carried_reading(["a.txt"], np.array([0]), "") is None
    assert plan.kept_extractions_url is None
    assert plan.partition() == (None, None)
    assert plan.carried_vectors(None, None, None, False, None) == ({}, {})


def test_an_update_carries_the_unchanged_files_and_reads_the_rest(tmp_path):
    corpus = _corpus(tmp_path / "corpus", TEXTS)
    index = str(tmp_path / "index")
    config = _config()
    build_index(str(corpus), index, config, progress=lambda _: None)
    (corpus / "b.txt").write_text(TEXTS["b.txt"] + " Hopper retired in 1986.", "utf-8")
    (corpus / "c.txt").unlink()
    _corpus(corpus, {"d.txt": "Edsger Dijkstra wrote of shortest paths in Eindhoven."})

    plan = _plan(index, corpus, config)
    assert plan.is_update and plan.changes_anything and plan.same_settings
    assert {k: v for k, v in plan.diff.items()} == {
        "added": ["d.txt"], "changed": ["b.txt"], "deleted": ["c.txt"], "unchanged": ["a.txt"]}
    assert plan.files_to_read(["a.txt", "b.txt", "d.txt"], [5, 6, 7]) == [6, 7]
    # The files keep their numbers; a new one is numbered in listing order after them.
    before = dict(zip(*(IndexStore(index).open().read_table("_reading/files")
                        .column(c).to_pylist() for c in ("path", "file_index"))))
    numbers = plan.file_numbers(["a.txt", "b.txt", "d.txt"])
    assert numbers[:2].tolist() == [before["a.txt"], before["b.txt"]]
    assert numbers[2] > numbers[1]
    _, root, files, _, _ = plan.listing
    carried = plan.carried_reading(files, plan.file_numbers(
        [relative_path(p, root) for p in files]), root)
    assert carried.carried() == 1
    # Leiden starts from the previous communities, over the previous entities' ids.
    communities, kept_entities = plan.partition()
    previous = IndexStore(index).open()
    assert communities.num_rows == previous.read_table(schema.COMMUNITIES).num_rows
    assert kept_entities is None  # (our own partition: refined, not kept)


def test_other_settings_carry_no_reading_and_keep_extractions_only_of_the_same(tmp_path):
    corpus = _corpus(tmp_path / "corpus", TEXTS)
    index = str(tmp_path / "index")
    build_index(str(corpus), index, _config(), progress=lambda _: None)
    same = _plan(index, corpus, _config())
    assert not same.changes_anything
    # Other chunks: nothing carried by file, but a chunk whose text was extracted keeps it.
    chunks = _plan(index, corpus, _config("chunks.size=120", "chunks.overlap=10"))
    assert chunks.changes_anything and not chunks.same_settings
    assert chunks.files_to_read(["a.txt", "b.txt", "c.txt"], [1, 1, 1]) == [1, 1, 1]
    assert chunks.carried_reading(["a.txt"], np.array([0]), "") is None
    assert chunks.kept_extractions_url == IndexStore(index).open().url_of("_extractions")
    # Another model's extraction is its own.
    model = _plan(index, corpus, _config("llm.temperature=0.5"))
    assert not model.same_extraction and model.kept_extractions_url is None
