"""prompt-tune as a user runs it: through the test server (which answers in the language a
request declares), then a build with the folder it wrote; and offline."""

import json
from pathlib import Path

import pytest
import yaml

from graphrag_ray import schema
from graphrag_ray.api import GraphIndex
from graphrag_ray.cli import main
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.prompts_loader import builtin_prompt, load_prompts, prompt_version
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server

DATA = Path(__file__).resolve().parents[1] / "data"


def _corpus(tmp_path: Path, language: str) -> Path:
    if language != "en":
        return DATA / "other_languages" / language
    text = (DATA / "christmas_carol" / "book.txt").read_text(encoding="utf-8")
    start = text.find("STAVE ONE")
    folder = tmp_path / "carol"
    folder.mkdir()
    (folder / "carol.txt").write_text(text[start:start + 9000], encoding="utf-8")
    return folder


@pytest.mark.parametrize("language, name, community, answer, types", [
    ("en", "English", "A community of", ("Summary of the analysts", "Answer to:"),
     {"PERSON", "ORGANIZATION", "PLACE", "EVENT", "PRODUCT"}),
    ("fr", "French", "Une communauté de", ("Synthèse des points", "Réponse à :"),
     {"PERSONNE", "ORGANISATION", "LIEU", "ÉVÉNEMENT", "PRODUIT"}),
    ("zh", "Chinese", "个实体", ("分析要点汇总", "回答："), {"人物", "组织", "地点", "事件", "产品"}),
])
def test_tuned_prompts_build_an_index_written_in_the_corpus_language(
        tmp_path, capsys, language, name, community, answer, types):
    corpus = _corpus(tmp_path, language)
    with run_test_server() as server:
        base = tmp_path / "settings.yaml"
        base.write_text(yaml.safe_dump({
            "extraction": {"method": "llm"}, "runtime": {"engine": "local"},
            "llm": {"api_base": server.url, "model": "test-model", "declare_requests": True,
                    "api_key": "${TUNE_TEST_KEY:-sk-not-written}"}}), encoding="utf-8")
        tuned = tmp_path / "tuned"
        assert main(["prompt-tune", "--input", str(corpus), "--output", str(tuned),
                     "--config", str(base), "--chunks", "4"]) == 0
        printed = capsys.readouterr().out
        config = load_config(tuned / "settings.yaml")
        manifest = build_index(str(corpus), str(tmp_path / "index"), config,
                               progress=lambda _: None)
        # A question to the index: the answer is written in its language too.
        index = GraphIndex.open(str(tmp_path / "index"), config)
        answers = [index.search(method, "Who is mentioned most?").answer
                   for method in ("global", "local")]
        index.close()
        stats = server.stats()
    assert f"language {name}" in printed and "worked example(s)" in printed
    written = (tuned / "settings.yaml").read_text(encoding="utf-8")
    # The settings as written: the key stays a reference, the tuning is added.
    assert "${TUNE_TEST_KEY:-sk-not-written}" in written
    assert config.prompts.language == name
    assert {t.upper() for t in config.extraction.entity_types} == types
    tuning = json.loads((tuned / "tuning.json").read_text(encoding="utf-8"))
    assert tuning["method"] == "llm" and tuning["chunks_sampled"] <= 4
    assert tuning["examples"], "the model's records of a sampled passage are the example"
    text = "".join("".join(p.read_text(encoding="utf-8").split()) for p in corpus.iterdir())
    assert all("".join(example["text"].split()) in text for example in tuning["examples"])
    # Every request said what it is, and the tuning's three questions were asked once each.
    assert stats["undeclared_kinds"] == {}
    for kind in ("tune_domain", "tune_persona", "tune_entity_types"):
        assert stats["by_kind"][kind] == 1
    # The build used the tuned prompts, and its reports are in the corpus's language.
    prompts = load_prompts(config)
    assert manifest.prompt_versions["extract_graph"] == prompt_version(prompts["extract_graph"])
    assert prompt_version(prompts["extract_graph"]) != prompt_version(
        builtin_prompt("extract_graph"))
    assert "Worked examples" in prompts["extract_graph"] and name in prompts["extract_graph"]
    version = IndexStore(str(tmp_path / "index")).open()
    reports = version.read_table(schema.COMMUNITY_REPORTS, ["summary"]).column(
        "summary").to_pylist()
    llm_reports = [r for r in reports if community in r]
    assert llm_reports, reports[:3]
    entity_types = set(version.read_table(schema.ENTITIES, ["type"]).column("type").to_pylist())
    assert entity_types <= types
    assert [a.startswith(phrase) for a, phrase in zip(answers, answer)] == [True, True], answers


def test_offline_tuning_takes_types_language_and_examples_from_the_corpus(tmp_path, capsys):
    corpus = DATA / "other_languages" / "fr"
    tuned = tmp_path / "tuned"
    assert main(["prompt-tune", "--input", str(corpus), "--output", str(tuned),
                 "--sample", "top", "--chunks", "3", "--set", "chunks.size=400"]) == 0
    assert "tuned (offline)" in capsys.readouterr().out
    settings = yaml.safe_load((tuned / "settings.yaml").read_text(encoding="utf-8"))
    assert settings["prompts"] == {"dir": "prompts", "language": "French"}
    assert settings["chunks"] == {"size": 400}  # the --set is kept
    types = settings["extraction"]["entity_types"]
    assert types and set(types) <= {"person", "organization", "geo", "event"}
    tuning = json.loads((tuned / "tuning.json").read_text(encoding="utf-8"))
    text = " ".join(p.read_text(encoding="utf-8") for p in sorted(corpus.iterdir()))
    assert tuning["method"] == "offline" and tuning["examples"]
    for example in tuning["examples"]:
        assert example["relationships"]
        assert all(e["title"].lower() in " ".join(text.split()).lower()
                   for e in example["entities"])
    extraction = (tuned / "prompts" / "extract_graph.txt").read_text(encoding="utf-8")
    assert "Worked examples" in extraction and "{language}" in extraction
    assert "{tuple_delimiter}" in extraction and "{input_text}" in extraction
    # A later LLM build reads them: the language filled in, the record format intact.
    config = load_config(tuned / "settings.yaml")
    loaded = load_prompts(config)["extract_graph"]
    assert "in French." in loaded and "{language}" not in loaded


def test_an_input_without_text_is_a_message(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "blank.txt").write_text("   \n", encoding="utf-8")
    assert main(["prompt-tune", "--input", str(empty), "--output", str(tmp_path / "t")]) == 2
    assert "error:" in capsys.readouterr().err


def test_a_rerun_pays_for_no_call_again(tmp_path):
    """The tuning's replies are kept beside its output: run again, it asks nothing and
    decides the same."""
    corpus = DATA / "other_languages" / "fr"
    with run_test_server() as server:
        args = ["prompt-tune", "--input", str(corpus), "--output", str(tmp_path / "tuned"),
                "--chunks", "3", "--set", "extraction.method=llm",
                "--set", f"llm.api_base={server.url}", "--set", "llm.model=test-model"]
        assert main(args) == 0
        first = server.stats()["requests"]
        decided = json.loads((tmp_path / "tuned" / "tuning.json").read_text(encoding="utf-8"))
        assert main(args) == 0
        assert server.stats()["requests"] == first and first >= 5
    again = json.loads((tmp_path / "tuned" / "tuning.json").read_text(encoding="utf-8"))
    assert again == decided


def test_the_tunings_questions_can_be_the_users_own(tmp_path):
    """A `prompts.dir` holding its own `tune_domain.txt` is asked as written, the corpus's
    language filled in."""
    own = tmp_path / "own-prompts"
    own.mkdir()
    (own / "tune_domain.txt").write_text(
        "OWN WORDING. Name this collection in {corpus_language}.\n\n{input_text}\n",
        encoding="utf-8")
    with run_test_server(keep_requests=True) as server:
        assert main(["prompt-tune", "--input", str(DATA / "other_languages" / "fr"),
                     "--output", str(tmp_path / "tuned"), "--chunks", "2",
                     "--set", "extraction.method=llm", "--set", f"llm.api_base={server.url}",
                     "--set", "llm.model=test-model", "--set", f"prompts.dir={own}",
                     "--set", "llm.declare_requests=true"]) == 0
        asked = [r["messages"][0]["content"] for r in server.chat_requests()
                 if r["kind"] == "tune_domain"]
    assert len(asked) == 1 and asked[0].startswith("OWN WORDING. Name this collection in French.")


def test_a_model_that_answers_nothing_usable_is_said_not_hidden(tmp_path, capsys):
    """Every reply malformed (empty for the tuning's questions, garbage records for the
    examples): each is asked again, then the fallback is used and said."""
    with run_test_server(rate_malformed=1.0) as server:
        assert main(["prompt-tune", "--input", str(DATA / "other_languages" / "fr"),
                     "--output", str(tmp_path / "tuned"), "--chunks", "2",
                     "--set", "extraction.method=llm", "--set", f"llm.api_base={server.url}",
                     "--set", "llm.model=test-model", "--set", "llm.max_parse_retries=1"]) == 0
    printed = capsys.readouterr().out
    tuning = json.loads((tmp_path / "tuned" / "tuning.json").read_text(encoding="utf-8"))
    assert tuning["domain"] == "general texts" and tuning["examples"] == []
    assert tuning["entity_types"] == ["organization", "person", "geo", "event"]
    for said in ("the model gave no domain", "the model gave no persona",
                 "the model gave no list of entity types", "the built-in worked example is kept"):
        assert said in printed and any(said in note for note in tuning["notes"])


def test_a_model_that_acknowledges_instead_of_answering_keeps_the_built_ins(tmp_path, capsys):
    """It says "OK." to everything: each question is asked twice (the second more strictly),
    then the built-in text is kept and said; no "OK." in a tuned prompt; ten calls at most."""
    with run_test_server(personality="ack") as server:
        assert main(["prompt-tune", "--input", str(DATA / "other_languages" / "fr"),
                     "--output", str(tmp_path / "tuned"), "--chunks", "2",
                     "--set", "extraction.method=llm", "--set", f"llm.api_base={server.url}",
                     "--set", "llm.model=test-model"]) == 0
        calls = server.stats()["requests"]
    printed = capsys.readouterr().out
    tuning = json.loads((tmp_path / "tuned" / "tuning.json").read_text(encoding="utf-8"))
    assert tuning["domain"] == "general texts"
    assert tuning["persona"].startswith("You are an expert reader of general texts")
    assert tuning["entity_types"] == ["organization", "person", "geo", "event"]
    for said in ("no domain in two asks", "no persona in two asks",
                 "no list of entity types in two asks", "an acknowledgement"):
        assert said in printed
    prompts = [p.read_text(encoding="utf-8") for p in (tmp_path / "tuned").rglob("*.txt")]
    assert prompts and not any(text.lstrip().startswith("OK") or "are OK." in text
                               for text in prompts)
    assert calls <= 10
