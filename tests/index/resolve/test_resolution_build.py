"""Entity resolution in real builds: planted aliases merge and planted homonyms do not, the
`entity_aliases` table and the folded graph agree, forced and forbidden merges are obeyed,
queries find entities by their aliases, uncertain pairs go to the LLM, the Ray and local
engines resolve alike, and a homonym in two unrelated documents splits when asked."""

import pytest

from graphrag_ray import schema
from graphrag_ray.api import GraphIndex
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.resolve.clusters import SOLE_MIN_SCORE
from graphrag_ray.storage import IndexStore
from graphrag_testkit.synthetic_corpus import generate_corpus, merge_quality

from conftest import llm_config

QUIET = {"progress": lambda _: None}
# Measured on this corpus (300k tokens, seed 0): precision 0.973, recall 0.490 (the misses
# are short forms whose few mentions share no text unit or neighbour with their full name).
# Recall was 0.514 (an older comment here said 0.70) until offline extraction read names
# that open sentences from the whole document: 3 more planted alias titles extracted, 2
# fewer merged. Raising it on planted and real aliases is issue 37's.
MIN_PRECISION, MIN_RECALL = 0.9, 0.45

HOLMES = """Sherlock Holmes met Doctor John Watson at Baker Street. Holmes told Watson about the
case. Mr. Holmes was pleased with Baker Street.
Later, Sherlock Holmes and Mrs. Hudson talked about the London fog. Holmes smoked his pipe while
Hudson cooked. Holmes and Watson walked to London.
Fanny Price lived at Mansfield Park with Edmund Bertram. Fanny loved Edmund deeply.
Fanny Dashwood lived at Norland Park with John Dashwood. Fanny argued with John Dashwood.
"""

# Two Janes, each called by her first name only, in documents that share no other name.
TWO_JANES = {
    "pride.txt": """Jane walked to Netherfield with Elizabeth Bennet.
Mr. Bingley greeted Jane warmly, and Mr. Darcy watched Elizabeth.

Jane smiled at Mr. Bingley. Caroline Bingley and Mr. Darcy spoke of Pemberley while Jane
listened.

Later Jane wrote to Elizabeth Bennet about Mr. Bingley. Mr. Darcy left Netherfield for London.

Jane hoped Mr. Bingley would return. Elizabeth Bennet told Jane that Mr. Darcy was proud.
""",
    "eyre.txt": """Jane arrived at Thornfield Hall. Mrs. Fairfax showed Jane the library, and Adele
Varens sang for her.

Jane met Mr. Rochester on the road. Mr. Rochester fell from his horse, and Jane helped him.

At Thornfield Hall, Jane taught Adele Varens. Mrs. Fairfax said Mr. Rochester was often away.

Grace Poole laughed in the attic. Jane asked Mrs. Fairfax, and Mr. Rochester said nothing to
Jane.
"""}


def _config(engine="local", *overrides):
    return load_config(None, ["resolution.enabled=true", f"runtime.engine={engine}",
                              *overrides])


def _read(url, name, columns=None):
    return IndexStore(str(url)).open().read_table(name, columns).to_pylist()


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("planted")
    corpus = generate_corpus(folder / "corpus", 300_000, seed=0, aliases=True)
    build_index(str(folder / "corpus"), str(folder / "off"),
                load_config(None, ["runtime.engine=local"]), **QUIET)
    manifest = build_index(str(folder / "corpus"), str(folder / "on"), _config(), **QUIET)
    return corpus, folder, manifest


@pytest.mark.slow  # two builds of a 300k-token corpus
def test_planted_aliases_merge_and_homonyms_do_not(planted):
    corpus, folder, manifest = planted
    titles = [e["title"] for e in _read(folder / "off", schema.ENTITIES, ["title"])]
    aliases = _read(folder / "on", schema.ENTITY_ALIASES)
    quality = merge_quality([(a["alias"], a["entity_title"]) for a in aliases], titles,
                            corpus.truth)
    assert quality["precision"] >= MIN_PRECISION, quality
    assert quality["recall"] >= MIN_RECALL, quality
    # Two people who share a first name and are called by it: the first name joins neither
    # whole; where a document names one of them, its mentions there are that one's. (Both
    # must be in the text: where the generator never wrote one of them, HULU is only HULU
    # CETHEM's, called so after his full name in the same document.)
    first_names = {name: meanings for name, meanings in corpus.truth.items()
                   if len(meanings) == 2 and all(len(m.split()) == 2 for m in meanings)
                   and all(m.upper() in titles for m in meanings)}
    assert set(first_names) & set(titles)
    assert set(manifest.resolution["ambiguous_examples"]) & set(first_names)
    for alias in aliases:
        if alias["alias"] in first_names:
            assert alias["document_ids"] and alias["entity_title"] in {
                m.upper() for m in first_names[alias["alias"]]}, alias
    on_titles = {e["title"] for e in _read(folder / "on", schema.ENTITIES, ["title"])}
    gone = {a["alias"] for a in aliases} - on_titles
    off_entities = IndexStore(str(folder / "off")).read_manifest().tables[schema.ENTITIES]
    assert manifest.tables[schema.ENTITIES] == off_entities - len(gone)


@pytest.mark.slow  # the same two builds (the module's fixture)
def test_the_aliases_table_and_the_folded_graph_agree(planted):
    _, folder, manifest = planted
    aliases = _read(folder / "on", schema.ENTITY_ALIASES)
    entities = {e["title"]: e for e in _read(folder / "on", schema.ENTITIES)}
    assert aliases and list(aliases[0]) == schema.ENTITY_ALIAS_COLUMNS
    assert manifest.tables[schema.ENTITY_ALIASES] == len(aliases)
    whole = [a for a in aliases if not a["document_ids"]]
    for alias in aliases:
        canonical = entities[alias["entity_title"]]
        assert canonical["id"] == alias["entity_id"]
        assert alias["alias"] in canonical["aliases"]
        assert alias["evidence"]
    for alias in whole:
        assert alias["alias"] not in entities
        kind = alias["method"].removeprefix("sole:")
        assert kind in {"short_form", "typo", "acronym", "initials", "same_name"}
        # (A short name's only full name merges from SOLE_MIN_SCORE: `clusters.py`.)
        assert alias["score"] >= (SOLE_MIN_SCORE if alias["method"] != kind else 0.75)
    # Every description and text unit of an alias merged whole now belongs to its canonical
    # entity; a short name resolved per document shares its text units out.
    off = {e["title"]: e for e in _read(folder / "off", schema.ENTITIES)}
    for alias in whole:
        canonical = entities[alias["entity_title"]]
        assert set(off[alias["alias"]]["descriptions"]) <= set(canonical["descriptions"])
        assert set(off[alias["alias"]]["text_unit_ids"]) <= set(canonical["text_unit_ids"])
        assert canonical["frequency"] == len(canonical["text_unit_ids"])
    for name in {a["alias"] for a in aliases if a["document_ids"]}:
        given = set().union(*(entities[a["entity_title"]]["text_unit_ids"] for a in aliases
                              if a["alias"] == name))
        kept = set(entities[name]["text_unit_ids"]) if name in entities else set()
        assert set(off[name]["text_unit_ids"]) <= given | kept
    relationships = _read(folder / "on", schema.RELATIONSHIPS)
    pairs = [(r["source"], r["target"]) for r in relationships]
    assert len(pairs) == len(set(pairs)) and all(s < t for s, t in pairs)
    assert {name for pair in pairs for name in pair} <= set(entities)
    assert max(r["weight"] for r in relationships) == 1.0
    for entity in entities.values():
        assert entity["degree"] == sum(entity["title"] in pair for pair in pairs)


@pytest.fixture(scope="module")
def holmes(tmp_path_factory):
    folder = tmp_path_factory.mktemp("holmes")
    (folder / "input").mkdir()
    (folder / "input" / "holmes.txt").write_text(HOLMES, encoding="utf-8")
    return folder


def test_forced_and_forbidden_merges_are_obeyed(holmes):
    config = _config()
    config.resolution.force_merge = [["Baker Street", "London"]]
    config.resolution.forbid_merge = [["holmes", "Sherlock Holmes"]]
    build_index(str(holmes / "input"), str(holmes / "rules"), config, **QUIET)
    merged = {a["alias"]: (a["entity_title"], a["method"])
              for a in _read(holmes / "rules", schema.ENTITY_ALIASES)}
    assert merged["LONDON"] == ("BAKER STREET", "forced")
    assert "HOLMES" not in merged
    assert merged["WATSON"][0] == "DOCTOR JOHN WATSON"
    assert "FANNY" not in merged  # FANNY PRICE or FANNY DASHWOOD: it cannot say


def test_a_question_naming_an_alias_finds_the_canonical_entity(holmes):
    build_index(str(holmes / "input"), str(holmes / "index"), _config(), **QUIET)
    result = GraphIndex.open(str(holmes / "index")).search("local", "Who did Watson meet?")
    assert "DOCTOR JOHN WATSON" in result.details["matched_entities"]


def test_uncertain_pairs_are_confirmed_by_the_llm(holmes, llm_server, tmp_path):
    # Everything is uncertain (nothing reaches 0.99): each pair is put to the LLM, whose
    # test stand-in says yes when one name's words are all in the other's. Extracted
    # offline: the test server's entity types are drawn at random, and types that disagree
    # rule pairs out before any question.
    config = llm_config(llm_server, "runtime.engine=local", "resolution.enabled=true",
                        "extraction.method=nlp",
                        "resolution.confirm_with_llm=true", "resolution.threshold=0.99",
                        f"cache.url={tmp_path}/cache")
    manifest = build_index(str(holmes / "input"), str(tmp_path / "index"), config, **QUIET)
    figures = manifest.resolution
    assert figures["llm_usage"]["calls"] == llm_server.stats()["by_kind"]["resolve_pairs"]
    assert figures["confirmed_by_llm"] > 0
    methods = {a["method"] for a in _read(tmp_path / "index", schema.ENTITY_ALIASES)}
    assert methods and all(m.startswith("llm:") for m in methods)


@pytest.mark.slow
def test_ray_and_local_engines_resolve_alike(ray_session, llm_server, tmp_path):
    # Several key slices, partitions and merge shards; uncertain pairs confirmed by the LLM
    # from Ray tasks (each engine with a cache of its own, so both ask).
    generate_corpus(tmp_path / "corpus", 100_000, seed=1, aliases=True)
    tables = {}
    for engine in ("local", "ray"):
        build_index(str(tmp_path / "corpus"), str(tmp_path / engine), _config(
            engine, "merge.shards=3", "resolution.entities_per_partition=150",
            "resolution.confirm_with_llm=true", f"llm.api_base={llm_server.url}",
            "llm.model=test-model", f"cache.url={tmp_path}/{engine}-cache"), **QUIET)
        tables[engine] = (_read(tmp_path / engine, schema.ENTITY_ALIASES),
                          sorted((e["title"], tuple(e["aliases"]), e["description"])
                                 for e in _read(tmp_path / engine, schema.ENTITIES)))
    aliases = tables["local"][0]
    assert aliases and any(a["method"].startswith("llm:") for a in aliases)
    assert tables["ray"] == tables["local"]


def test_a_homonym_in_two_unrelated_documents_splits_when_asked(tmp_path):
    (tmp_path / "input").mkdir()
    for name, text in TWO_JANES.items():
        (tmp_path / "input" / name).write_text(text, encoding="utf-8")
    small_chunks = ["chunks.size=40", "chunks.overlap=0"]  # a few text units per document
    build_index(str(tmp_path / "input"), str(tmp_path / "off"), _config("local", *small_chunks),
                **QUIET)
    assert "JANE (2)" not in {e["title"] for e in _read(tmp_path / "off", schema.ENTITIES)}

    build_index(str(tmp_path / "input"), str(tmp_path / "on"), _config(
        "local", *small_chunks, "resolution.split_homonyms=true"), **QUIET)
    entities = {e["title"]: e for e in _read(tmp_path / "on", schema.ENTITIES)}
    documents = {d["id"]: d["title"] for d in _read(tmp_path / "on", schema.DOCUMENTS)}
    units = {u["id"]: documents[u["document_id"]]
             for u in _read(tmp_path / "on", schema.TEXT_UNITS, ["id", "document_id"])}
    assert {units[u] for u in entities["JANE"]["text_unit_ids"]} == {"eyre.txt"}
    assert {units[u] for u in entities["JANE (2)"]["text_unit_ids"]} == {"pride.txt"}
    assert "Bingley" in entities["JANE (2)"]["description"]
    assert "Bingley" not in entities["JANE"]["description"]
    assert entities["JANE (2)"]["aliases"] == ["JANE"]
    split, = [a for a in _read(tmp_path / "on", schema.ENTITY_ALIASES)
              if a["method"] == "homonym_split"]
    assert (split["alias"], split["entity_title"]) == ("JANE", "JANE (2)")
    assert split["entity_id"] == entities["JANE (2)"]["id"]
    assert [documents[d] for d in split["document_ids"]] == ["pride.txt"]
    neighbours = {title: {r["source"] if r["target"] == title else r["target"]
                          for r in _read(tmp_path / "on", schema.RELATIONSHIPS)
                          if title in (r["source"], r["target"])}
                  for title in ("JANE", "JANE (2)")}
    assert "ROCHESTER" in neighbours["JANE"] and "BINGLEY" not in neighbours["JANE"]
    assert "BINGLEY" in neighbours["JANE (2)"] and "ROCHESTER" not in neighbours["JANE (2)"]


ONE_EPISODE_IN_PARTS = {
    "episode-part1.txt": "KEVIN SCOTT: Today my guest is Satya Nadella. Satya Nadella runs "
                         "Microsoft, and he has a lot to say about the cloud.\nSATYA NADELLA: "
                         "Thanks, Kevin. It is good to be here and to talk about the cloud.\n",
    "episode-part2.txt": "KEVIN SCOTT: So Satya told me that the cloud changed everything for "
                         "the company.\nKEVIN SCOTT: And then Satya said he would do it all "
                         "again.\n"}


def test_a_short_name_a_part_of_an_episode_leaves_open_is_resolved_by_the_episode(tmp_path):
    """Part 2 says only SATYA; part 1, of the same episode by the files' names, names SATYA
    NADELLA: the short name there is his (`in_work`), and the entity SATYA is gone."""
    (tmp_path / "input").mkdir()
    for name, text in ONE_EPISODE_IN_PARTS.items():
        (tmp_path / "input" / name).write_text(text, encoding="utf-8")
    build_index(str(tmp_path / "input"), str(tmp_path / "on"), _config("local"), **QUIET)
    documents = {d["id"]: d["title"] for d in _read(tmp_path / "on", schema.DOCUMENTS)}
    satya, = [a for a in _read(tmp_path / "on", schema.ENTITY_ALIASES) if a["alias"] == "SATYA"]
    assert (satya["entity_title"], satya["method"]) == ("SATYA NADELLA", "in_work:short_form")
    assert [documents[d] for d in satya["document_ids"]] == ["episode-part2.txt"]
    titles = {e["title"] for e in _read(tmp_path / "on", schema.ENTITIES)}
    assert "SATYA NADELLA" in titles and "SATYA" not in titles
