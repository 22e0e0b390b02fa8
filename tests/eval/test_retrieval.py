"""`graphrag-ray eval retrieval`: the field's question layouts, the recall measures, and on a
slice of the shared HotpotQA sample (when present) local search finding more supporting
passages than BM25."""

import json

import pytest

from graphrag_ray.cli import main
from graphrag_ray.eval.benchmarks import exact_match, read_questions, token_f1
from graphrag_ray.eval.retrieval import Passages, bm25_baseline

from conftest import SHARED

HOTPOT = SHARED / "benchmarks" / "hotpotqa-100"


def test_the_three_layouts_read_into_one_shape(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "corpus.jsonl").write_text(
        json.dumps({"id": "p1", "title": "Leland", "text": "A town."}) + "\n")
    (tmp_path / "shared" / "questions.json").write_text(json.dumps([
        {"id": "q", "question": "Where?", "answer": "Leland", "supporting_passages": ["p1"]}]))
    (tmp_path / "hotpot.json").write_text(json.dumps([
        {"_id": "h", "question": "Who?", "answer": "King", "type": "bridge",
         "supporting_facts": [["Maximum Overdrive", 0], ["Leland", 1], ["Leland", 2]],
         "context": [["Leland", ["A town. ", "The film was shot there."]],
                     ["Maximum Overdrive", ["A film by Stephen King."]]]}]))
    (tmp_path / "musique.jsonl").write_text(json.dumps(
        {"id": "m", "question": "What?", "answer": "Falls", "answer_aliases": ["the Falls"],
         "paragraphs": [{"idx": 0, "title": "A", "paragraph_text": "x", "is_supporting": True},
                        {"idx": 1, "title": "B", "paragraph_text": "y",
                         "is_supporting": False}]}) + "\n")
    shared, = read_questions(tmp_path / "shared" / "questions.json")
    assert shared.supporting[0].id == "p1" and shared.supporting[0].text == "A town."
    hotpot, = read_questions(tmp_path / "hotpot.json")
    assert [g.title for g in hotpot.supporting] == ["Maximum Overdrive", "Leland"]
    assert hotpot.supporting[1].text == "A town. The film was shot there."
    musique, = read_questions(tmp_path / "musique.jsonl")
    assert [g.title for g in musique.supporting] == ["A"] and musique.answers[1] == "the Falls"


def test_answers_are_scored_as_squad_scores_them():
    assert exact_match("The Eiffel Tower.", ["eiffel tower"]) == 1.0
    assert token_f1("the tall Eiffel tower", ["Eiffel Tower"]) == pytest.approx(0.8)
    assert token_f1("nothing", ["Eiffel Tower"]) == 0.0


def test_gold_passages_are_matched_by_id_then_title_and_text_then_title():
    from graphrag_ray.eval.benchmarks import Gold

    documents = [{"id": "d0", "title": "Leland", "text": "A  town.", "metadata": None},
                 {"id": "d1", "title": "Leland", "text": "Another.",
                  "metadata": json.dumps({"id": "p9"})}]
    passages = Passages(documents, [{"id": "u", "document_ids": ["d1"]}])
    assert passages.gold_rows([Gold("x", None, "p9")]) == {1}
    assert passages.gold_rows([Gold("Leland", "A town.")]) == {0}
    assert passages.gold_rows([Gold("Leland")]) == {0}
    assert passages.of_units(["u", "missing", "u"]) == [1]
    search = bm25_baseline(["Leland is a town", "Scrooge and Marley"])
    assert search("Who is Marley?")[0] == 1


@pytest.mark.slow
@pytest.mark.skipif(not HOTPOT.is_dir(), reason="the shared HotpotQA sample is not here")
def test_local_search_finds_more_supporting_passages_than_bm25(tmp_path, capsys):
    """The whole corpus (994 passages), the first 50 questions."""
    index = tmp_path / "index"
    (tmp_path / "input").mkdir()
    (tmp_path / "input" / "corpus.jsonl").write_bytes((HOTPOT / "corpus.jsonl").read_bytes())
    assert main(["index", "--input", str(tmp_path / "input"), "--output", str(index),
                 "--set", "input.id_column=id"]) == 0
    capsys.readouterr()
    out = tmp_path / "figures.json"
    assert main(["eval", "retrieval", "--index", str(index), "--questions",
                 str(HOTPOT / "questions.json"), "--methods", "basic,local", "--limit", "50",
                 "--baselines", "bm25", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "bm25 (baseline)" in table and "recall@5" in table
    figures = json.loads(out.read_text())["methods"]
    assert figures["local"]["recall@5"] >= figures["bm25 (baseline)"]["recall@5"] + 0.10
    assert figures["local"]["recall@5"] >= figures["basic"]["recall@5"]
