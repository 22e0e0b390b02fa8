"""A build with its extraction prompts rewritten (other wording, other delimiters, none of
the default prompts' markers) still builds against the test server: each request declares
its kind, its delimiters, its entity types and where its text is, and the server answers
from that, not from our English."""

from graphrag_ray import schema
from graphrag_ray.index.build import build_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server

from conftest import llm_config

# Our own words, in French: nothing the server could find by the default prompts' wording.
EXTRACT = """Construis un graphe de connaissances à partir du passage ci-dessous.
Types retenus : {entity_types}.
Une entité s'écrit ("entity"{tuple_delimiter}NOM{tuple_delimiter}GENRE{tuple_delimiter}RÉSUMÉ),
un lien ("relationship"{tuple_delimiter}A{tuple_delimiter}B{tuple_delimiter}POURQUOI{tuple_delimiter}FORCE).
Sépare-les par {record_delimiter} et finis par {completion_delimiter}.

Passage :
{input_text}
"""
CONTINUE = ("Il en manque : ajoute les entités et liens oubliés, séparés par "
            "{record_delimiter}, puis {completion_delimiter}.")
PASSAGE = ("Ada Brandt left the Orrin Institute in Lyon to found Keel Labs. Keel Labs hired "
           "Tomas Reyes, who had studied with Ada Brandt in Lyon. Tomas Reyes and Ada Brandt "
           "built the first turbine in Brest for Keel Labs. Nora Quist of the Orrin Institute "
           "visited Brest to see it.\n\n")


def test_rewritten_extraction_prompts_with_other_delimiters_still_build(tmp_path):
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "extract_graph.txt").write_text(EXTRACT, encoding="utf-8")
    (prompts / "glean_continue.txt").write_text(CONTINUE, encoding="utf-8")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "keel.txt").write_text(PASSAGE * 3, encoding="utf-8")
    out = tmp_path / "index"
    with run_test_server() as server:
        config = llm_config(server, "runtime.engine=local", f"prompts.dir={prompts}",
                            "extraction.tuple_delimiter=|~|", "extraction.record_delimiter=;;",
                            "extraction.completion_delimiter=<<FIN>>",
                            "extraction.entity_types=[person,organization,place]")
        manifest = build_index(str(corpus), str(out), config, progress=lambda _: None)
        stats = server.stats()
    assert stats["undeclared_kinds"] == {}
    assert stats["by_kind"]["extract_graph"] == manifest.extraction.chunks
    assert stats["by_kind"]["glean_continue"] == manifest.extraction.chunks
    assert manifest.extraction.malformed_records == 0
    entities = IndexStore(str(out)).open().read_table(schema.ENTITIES, ["title", "type"])
    found = dict(zip(entities.column("title").to_pylist(), entities.column("type").to_pylist()))
    # The first pass gives half the names and the gleaning the rest, in the types asked for.
    assert {"ADA BRANDT", "KEEL LABS", "TOMAS REYES", "NORA QUIST"} <= set(found)
    assert set(found.values()) <= {"PERSON", "ORGANIZATION", "PLACE"}
    assert manifest.tables[schema.RELATIONSHIPS] > 0
