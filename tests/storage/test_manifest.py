"""The typed manifest reads every manifest a graphrag-ray wrote: older ones (fields they lack
take their defaults), ones with sections it does not know (kept), and refuses one of a later
version with a message."""

import json

import pytest

from graphrag_ray.errors import IndexFormatError
from graphrag_ray.storage import IndexStore, Manifest
from graphrag_ray.storage.manifest import MANIFEST_VERSION


def test_a_manifest_from_before_the_version_field_reads_with_defaults():
    old = {"format_version": 1, "version": "v1", "tables": {"entities": 3},
           "extraction": {"chunks": 4, "chunk_tokens": 900, "failed_chunks": 0,
                          "boilerplate_chunks": 0, "boilerplate_tokens": 0,
                          "malformed_records": 0},
           "llm_usage": {"model": "m", "stages": {"extract": {"calls": 4, "prompt_tokens": 10,
                                                              "completion_tokens": 5,
                                                              "cost_usd": None}},
                         "total": {"calls": 4}}}
    manifest = Manifest.read(old, "here")
    assert manifest.manifest_version == 0
    assert manifest.extraction.kept_out_tokens == 0  # measured only since
    assert manifest.llm_usage.stages["extract"].calls == 4
    assert manifest.pipeline.stages == [] and manifest.repeated_passages is None


def test_a_section_it_does_not_know_survives_a_round_trip(tmp_path):
    store = IndexStore(str(tmp_path / "index"))
    manifest = Manifest.read({"manifest_version": MANIFEST_VERSION,
                              "adopted_from": {"tool": "elsewhere"}}, "here")
    staged = store.stage()
    published = store.publish(staged, manifest)
    assert published.version == staged.version
    read = store.read_manifest()
    assert read.adopted_from == {"tool": "elsewhere"} and read.version == staged.version


@pytest.mark.parametrize("key", ["manifest_version", "format_version"])
def test_a_manifest_of_a_later_version_is_refused_with_a_message(tmp_path, key):
    store = IndexStore(str(tmp_path / "index"))
    staged = store.stage()
    store.publish(staged, Manifest())
    path = tmp_path / "index" / "versions" / staged.version / "manifest.json"
    data = json.loads(path.read_text())
    data[key] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(IndexFormatError, match=f"newer graphrag-ray.*{key} 99"):
        store.read_manifest()


def test_the_file_keeps_its_shape(tmp_path):
    """Tools that read manifest.json as JSON (the benchmarks, a user's scripts) see the same
    keys as before the model: no nulls for sections a build did not run."""
    store = IndexStore(str(tmp_path / "index"))
    staged = store.stage()
    store.publish(staged, Manifest(tables={"entities": 1}, llm_usage={"total": {"calls": 2}}))
    data = json.loads((tmp_path / "index" / "versions" / staged.version / "manifest.json")
                      .read_text())
    assert data["tables"] == {"entities": 1} and "repeated_passages" not in data
    assert data["llm_usage"]["total"]["cost_usd"] is None  # no price known: said, not dropped
    assert data["manifest_version"] == MANIFEST_VERSION
