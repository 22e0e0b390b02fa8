"""Adopting a Microsoft GraphRAG output: the shared Carol project (3.3.0) keeps its rows and
ids, its vectors, its settings where they map, and answers every query method; a 2.x-shaped
output (written here) adopts too. Skips without `../shared`."""

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphrag_ray import schema
from graphrag_ray.api import GraphIndex
from graphrag_ray.config import config_from_manifest
from graphrag_ray.index.adopt.settings import map_settings
from graphrag_ray.index.adopt.stage import adopt_index
from graphrag_ray.index.adopt.tables import GENERATION, adopted_tables
from graphrag_ray.query.methods import QUERY_METHODS
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server

CAROL = Path(__file__).resolve().parents[3].parent / "shared" / "msgraphrag" / "carol"
QUIET = {"progress": lambda _: None}
needs_carol = pytest.mark.skipif(not (CAROL / "output").is_dir(),
                                 reason="the Microsoft GraphRAG project is not in ../shared")


@pytest.fixture(scope="module")
def adopted(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("adopted") / "index")
    adopt_index(str(CAROL), out, **QUIET)
    return out


@needs_carol
def test_the_adopted_tables_keep_microsofts_rows_and_ids(adopted):
    version = IndexStore(adopted).open()
    for name in (schema.DOCUMENTS, schema.TEXT_UNITS, schema.ENTITIES, schema.RELATIONSHIPS,
                 schema.COMMUNITIES, schema.COMMUNITY_REPORTS):
        theirs = pq.read_table(CAROL / "output" / f"{name}.parquet")
        ours = version.read_table(name)
        assert ours.column("id").to_pylist() == theirs.column("id").to_pylist(), name
        assert ours.column_names == getattr(schema, {
            "documents": "DOCUMENT_COLUMNS", "text_units": "TEXT_UNIT_COLUMNS",
            "entities": "ENTITY_COLUMNS", "relationships": "RELATIONSHIP_COLUMNS",
            "communities": "COMMUNITY_COLUMNS",
            "community_reports": "COMMUNITY_REPORT_COLUMNS"}[name])
    entities = version.read_table(schema.ENTITIES)
    theirs = pq.read_table(CAROL / "output" / "entities.parquet")
    assert entities.column("description").to_pylist() == theirs.column("description").to_pylist()
    assert any(entities.column("x").to_pylist())  # laid out: 3.x writes no positions
    reports = version.read_table(schema.COMMUNITY_REPORTS)
    assert set(reports.column("generation").to_pylist()) == {GENERATION}
    assert reports.column("full_content").to_pylist() == pq.read_table(
        CAROL / "output" / "community_reports.parquet").column("full_content").to_pylist()


@needs_carol
def test_its_vectors_and_settings_come_with_it(adopted):
    pytest.importorskip("lance")
    manifest = IndexStore(adopted).read_manifest()
    assert manifest.embeddings.method == "adopted" and manifest.embeddings.dimensions == 3072
    assert manifest.tables[schema.ENTITY_DESCRIPTION_EMBEDDINGS] == 233
    assert manifest.pipeline.stages == ["read_tables", "layout", "write_tables",
                                        "lexical_index", "lance_vectors", "carry_extractions"]
    config = config_from_manifest(manifest)
    assert (config.chunks.size, config.chunks.overlap, config.extraction.max_gleanings) == \
        (1200, 100, 1)
    assert config.llm.model == "gpt-4.1" and config.embeddings.model == "text-embedding-3-large"
    assert config.reports.max_input_tokens == 8000
    not_mapped = dict(manifest.adopted_from["not_mapped"])
    assert "keys are never stored" in not_mapped[
        "completion_models.default_completion_model.api_key"]
    assert "api_key" not in str(manifest.config["llm"])


@needs_carol
@pytest.mark.slow  # six query methods' calls through the test server
def test_every_query_method_answers_from_the_adopted_index(adopted):
    with run_test_server() as server:
        config = config_from_manifest(IndexStore(adopted).read_manifest(), [
            f"llm.api_base={server.url}", "llm.model=test-model",
            f"embeddings.api_base={server.url}", "embeddings.dimensions=3072",
            "runtime.engine=local"])
        index = GraphIndex.open(adopted, config=config)
        for method in QUERY_METHODS:
            result = index.search(method, "Who is Scrooge and how does he change?")
            assert result.answer.strip(), method
        assert server.stats()["by_kind"].get("embeddings", 0) > 0  # the question, embedded
        local = index.search("local", "Who is Scrooge?")
    ids = set(pq.read_table(CAROL / "output" / "entities.parquet").column("id").to_pylist())
    assert local.sources.entities and set(local.sources.entities) <= ids


def test_a_2x_output_adopts_too(tmp_path):
    """2.x wrote `document_ids` lists on text units, `metadata` on documents, UMAP positions
    on entities, and reports without `full_content_json`."""
    output = tmp_path / "output"
    output.mkdir()
    tables = {
        "documents": pa.table({"id": ["d1"], "human_readable_id": [0], "title": ["a.txt"],
                               "text": ["Alice met Bob."], "text_unit_ids": [["t1"]],
                               "metadata": [None]}),
        "text_units": pa.table({"id": ["t1"], "human_readable_id": [0],
                                "text": ["Alice met Bob."], "n_tokens": [4],
                                "document_ids": [["d1"]], "entity_ids": [["e1", "e2"]],
                                "relationship_ids": [["r1"]], "covariate_ids": [[]]}),
        "entities": pa.table({"id": ["e1", "e2"], "human_readable_id": [0, 1],
                              "title": ["ALICE", "BOB"], "type": ["PERSON", "PERSON"],
                              "description": ["Alice meets Bob.", "Bob is met."],
                              "text_unit_ids": [["t1"], ["t1"]], "frequency": [1, 1],
                              "degree": [1, 1], "x": [0.5, -0.5], "y": [0.1, 0.2]}),
        "relationships": pa.table({"id": ["r1"], "human_readable_id": [0], "source": ["ALICE"],
                                   "target": ["BOB"], "description": ["They meet."],
                                   "weight": [1.0], "combined_degree": [2],
                                   "text_unit_ids": [["t1"]]}),
        "communities": pa.table({"id": ["c0"], "human_readable_id": [0], "community": [0],
                                 "level": [0], "parent": [-1], "children": [[]],
                                 "title": ["Community 0"], "entity_ids": [["e1", "e2"]],
                                 "relationship_ids": [["r1"]], "text_unit_ids": [["t1"]],
                                 "period": ["2025-01-01"]}),
        "community_reports": pa.table({
            "id": ["k0"], "human_readable_id": [0], "community": [0], "level": [0],
            "parent": [-1], "children": [[]], "title": ["Alice and Bob"],
            "summary": ["They meet."], "full_content": ["# Alice and Bob\n\nThey meet."],
            "rank": [3.0], "rating_explanation": ["small"],
            "findings": [[{"explanation": "Alice met Bob.", "summary": "A meeting"}]],
            "period": ["2025-01-01"], "size": [2]})}
    for name, table in tables.items():
        pq.write_table(table, output / f"{name}.parquet")
    (tmp_path / "settings.yaml").write_text(
        "models:\n  default_chat_model:\n    type: azure_openai_chat\n    model: gpt-4o\n"
        "    deployment_name: my-gpt4o\n    api_base: https://me.openai.azure.com\n"
        "    api_version: 2024-10-21\n    tokens_per_minute: 50000\n"
        "  default_embedding_model:\n    type: openai_embedding\n"
        "    model: text-embedding-ada-002\n"
        "chunks:\n  size: 300\n  overlap: 50\n")
    manifest = adopt_index(str(output), str(tmp_path / "index"),
                           ["runtime.engine=local"], **QUIET)
    assert manifest.adopted_from["format"] == "2.x"
    assert manifest.embeddings.method == "hashing"  # no store to read: embedded offline
    assert manifest.tables[schema.TEXT_UNIT_EMBEDDINGS] == 1
    version = IndexStore(str(tmp_path / "index")).open()
    units = version.read_table(schema.TEXT_UNITS)
    assert units.column("document_id").to_pylist() == ["d1"]
    entities = version.read_table(schema.ENTITIES)
    assert entities.column("x").to_pylist() == [0.5, -0.5]  # its positions kept
    report = version.read_table(schema.COMMUNITY_REPORTS).to_pylist()[0]
    assert report["findings"] == [{"summary": "A meeting", "explanation": "Alice met Bob."}]
    assert '"title": "Alice and Bob"' in report["full_content_json"]
    assert version.read_table(schema.COMMUNITIES).column("size").to_pylist() == [2]
    config = config_from_manifest(manifest)
    assert (config.llm.model, config.llm.api_version, config.llm.tokens_per_minute) == (
        "my-gpt4o", "2024-10-21", 50000)
    assert (config.chunks.size, config.embeddings.model) == (300, "text-embedding-ada-002")
    assert GraphIndex.open(str(tmp_path / "index"), config=config).search(
        "text", "Who met Bob?").answer


def test_settings_that_do_not_map_say_why():
    mapped = map_settings({"vector_store": {"type": "lancedb"},
                           "completion_models": {"m": {"model": "x", "api_key": "sk-secret"}},
                           "extract_graph": {"prompt": "prompts/extract_graph.txt"}})
    reasons = dict(mapped.unmapped)
    assert "read once" in reasons["vector_store"]
    assert "never stored" in reasons["completion_models.m.api_key"]
    assert "copy it into a folder as extract_graph.txt" in reasons["extract_graph.prompt"]
    assert "entity_types, input_text" in reasons["extract_graph.prompt"]  # what ours fill
    assert "sk-secret" not in str(mapped.data)


def test_an_output_without_its_tables_is_a_clear_error(tmp_path):
    from graphrag_ray.errors import InputError

    with pytest.raises(InputError, match="no Microsoft GraphRAG output here"):
        adopt_index(str(tmp_path), str(tmp_path / "index"), **QUIET)
    assert adopted_tables  # the mapping is importable without the fixture


@needs_carol
def test_adopted_without_its_input_an_update_says_what_it_would_cost_instead(tmp_path):
    from graphrag_ray.errors import GraphRagError
    from graphrag_ray.index.update import update_index

    output = tmp_path / "their_output"  # its output alone: no settings, no input folder
    shutil.copytree(CAROL / "output", output)
    index = str(tmp_path / "index")
    adopt_index(str(output), index, **QUIET)
    assert IndexStore(index).read_manifest().extraction_fingerprint is None
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "book.txt").write_bytes((CAROL / "input" / "book.txt").read_bytes())
    with pytest.raises(GraphRagError, match="adopt it again with `adopt --input FOLDER`"):
        update_index(index, str(corpus), **QUIET)
    assert len(IndexStore(index).versions()) == 1  # nothing published


@needs_carol
def test_its_extractions_are_carried_over_for_updates(adopted):
    manifest = IndexStore(adopted).read_manifest()
    carried = manifest.adopted_from["extractions"]
    # Carol's 42 units: 39 in the text we chunk, 3 in its Gutenberg header and licence.
    assert (carried["text_units_placed"], carried["text_units_kept_out"],
            carried["text_units_not_found"]) == (39, 3, 0)
    assert carried["chunks_kept"] == carried["chunks"] and carried["chunks_to_extract"] == 0
    assert manifest.extraction_fingerprint and manifest.pipeline.stages[-1] == \
        "carry_extractions"


@needs_carol
@pytest.mark.slow  # an update's calls through the test server
def test_an_update_of_an_adopted_index_pays_only_for_the_new_text(adopted, tmp_path):
    from graphrag_ray.index.update import update_index

    index = str(tmp_path / "index")
    shutil.copytree(adopted, index)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "book.txt").write_bytes((CAROL / "input" / "book.txt").read_bytes())
    with run_test_server() as server:
        # Its own model and embeddings, at the test server: the extraction settings are
        # the adopted ones, so its extractions hold.
        config = config_from_manifest(IndexStore(index).read_manifest(), [
            f"llm.api_base={server.url}", f"embeddings.api_base={server.url}",
            "runtime.engine=local"])
        assert update_index(index, str(corpus), config, **QUIET)["no_change"]
        (corpus / "story.txt").write_text(
            "Tiny Tim met the Ghost of Christmas Present in London. Bob Cratchit carried "
            "Tiny Tim home through the snow of Camden Town. " * 20)
        manifest = update_index(index, str(corpus), config, **QUIET)
        kinds = server.stats()["by_kind"]
        # The next update, of our own version (the partition still the adopted one's): one
        # document deleted and one added, only the added one extracted.
        (corpus / "story.txt").unlink()
        (corpus / "visit.txt").write_text("Scrooge walked with Fred to Camden Town, where "
                                          "they met Belle by the market. " * 15)
        again = update_index(index, str(corpus), config, **QUIET)
    assert again.update["documents"] == {"added": 1, "changed": 0, "deleted": 1,
                                         "unchanged": 1}
    assert again.communities_kept_from == "Microsoft GraphRAG"
    assert again.llm_usage.stages["extract"].calls == 2
    assert again.update["reports_kept"] >= manifest.update["reports_kept"] - 4
    assert again.llm_usage.stages["reports"].calls <= 12
    assert manifest.update["chunks"]["reused"] == 39
    assert manifest.llm_usage.stages["extract"].calls == 2  # the story's chunk and gleaning
    assert kinds.get("glean_continue") == 1
    # Its report prompts quote Microsoft's descriptions, which hold `("entity"`: each said
    # what it was, so none was answered as an extraction (8 of 36 were, by their wording).
    assert kinds["extract_graph"] == 1 and "community_report" in kinds
    version = IndexStore(index).open(manifest.version)
    entities = dict(zip(version.read_table(schema.ENTITIES, ["title", "description"]).column(
        "title").to_pylist(), version.read_table(schema.ENTITIES, ["description"]).column(
        "description").to_pylist()))
    theirs = pq.read_table(CAROL / "output" / "entities.parquet").to_pylist()
    # An element only the old text names keeps Microsoft's description, uncalled for.
    untouched = [e for e in theirs if e["title"] in entities
                 and "TIM" not in e["title"] and "CRATCHIT" not in e["title"]]
    assert len(untouched) > 150
    assert sum(entities[e["title"]] == e["description"] for e in untouched) > \
        0.9 * len(untouched)
    assert "TINY TIM" in entities and "story.txt" in version.read_table(
        schema.DOCUMENTS, ["title"]).column("title").to_pylist()
    # Its communities are kept (the new entities placed in them) and so are the reports of
    # those the new text did not touch: their text is Microsoft's, uncalled for.
    assert manifest.communities_kept_from == "Microsoft GraphRAG"
    reports = {r["community"]: r for r in version.read_table(
        schema.COMMUNITY_REPORTS, ["community", "full_content", "generation"]).to_pylist()}
    kept = manifest.update["reports_kept"]
    assert kept >= 2 * len(reports) // 3
    assert manifest.llm_usage.stages["reports"].calls <= len(reports) - kept
    theirs = {r["community"]: r["full_content"] for r in pq.read_table(
        CAROL / "output" / "community_reports.parquet").to_pylist()}
    unchanged = [c for c, r in reports.items() if r["generation"] == GENERATION]
    assert len(unchanged) >= 15 and all(reports[c]["full_content"] == theirs[c]
                                        for c in unchanged if c in theirs)
    per_level = manifest.update["communities"]["per_level"]
    assert per_level["0"]["kept"] >= 8  # of its 10; one gains the story's names


@needs_carol
@pytest.mark.slow  # embeds the whole corpus through the test server
def test_without_its_vectors_the_dry_run_prices_embedding_again_and_adopt_does_it(tmp_path):
    import shutil

    from graphrag_ray.index.adopt.stage import format_adoption_plan, plan_adoption

    project = tmp_path / "project"
    shutil.copytree(CAROL / "output", project / "output",
                    ignore=shutil.ignore_patterns("lancedb"))
    shutil.copy(CAROL / "settings.yaml", project / "settings.yaml")
    with run_test_server() as server:
        endpoint = [f"embeddings.api_base={server.url}", "runtime.engine=local"]
        plan = plan_adoption(str(project), endpoint)
        assert server.stats()["requests"] == 0  # a dry run calls nothing
        assert plan["embed"]["texts"] == 233 + 30 + 42 and plan["embed"]["calls"] > 0
        assert plan["embed"]["cost_usd"] > 0  # text-embedding-3-large has a price
        assert "embedded again (it has no LanceDB store)" in format_adoption_plan(plan)
        manifest = adopt_index(str(project), str(tmp_path / "index"), endpoint, **QUIET)
        embedded = server.stats()["by_kind"]["embeddings"]
    embed = manifest.llm_usage.stages["embed"]
    assert embed.calls == embedded <= plan["embed"]["calls"]
    # The provider counts its own way (here 1.3% more than the plan's cl100k count).
    assert abs(embed.prompt_tokens - plan["embed"]["prompt_tokens"]) <= \
        0.05 * plan["embed"]["prompt_tokens"]
    assert manifest.embeddings.method == "api"
    assert manifest.tables[schema.ENTITY_DESCRIPTION_EMBEDDINGS] == 233


def test_an_endpoint_given_as_a_variable_is_interpolated_or_left_out_with_the_reason(
        monkeypatch):
    from graphrag_ray.index.adopt.stage import MicrosoftProject, adopted_config

    monkeypatch.setenv("ADOPT_TEST_BASE", "http://models.example/v1")
    monkeypatch.delenv("ADOPT_TEST_UNSET", raising=False)
    project = MicrosoftProject(Path("."), {
        "completion_models": {"m": {"model": "x", "api_base": "${ADOPT_TEST_UNSET}"}},
        "embedding_models": {"e": {"model": "y", "api_base": "${ADOPT_TEST_BASE}"}}}, None)
    config, mapped = adopted_config(project, None)
    assert config.embeddings.api_base == "http://models.example/v1"
    assert config.llm.api_base is None
    assert "ADOPT_TEST_UNSET is not set" in dict(mapped.unmapped)[
        "llm.api_base = ${ADOPT_TEST_UNSET}"]
