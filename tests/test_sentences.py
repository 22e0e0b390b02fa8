"""Abbreviations end no sentence, in every part that cuts text into sentences."""

from graphrag_ray.index.extract.nlp_extractor import extract_nlp, split_sentences as clauses
from graphrag_ray.index.reports.report_worker import _first_sentence
from graphrag_ray.query.local_search import extractive_answer
from graphrag_ray.sentences import split_sentences

TEXT = ("Mr. Darcy met Dr. Watson near St. Paul in the U.S. last spring. J. R. R. Tolkien wrote, "
        "e.g. letters. Mme. Curie et M. Dupont parlent. Sr. García y la Sra. López llegaron.")


def test_abbreviations_and_initials_end_no_sentence():
    assert split_sentences(TEXT) == [
        "Mr. Darcy met Dr. Watson near St. Paul in the U.S. last spring.",
        "J. R. R. Tolkien wrote, e.g. letters.", "Mme. Curie et M. Dupont parlent.",
        "Sr. García y la Sra. López llegaron."]
    assert clauses(TEXT)[0].endswith("last spring.")
    assert split_sentences("It was over. Then we left.") == ["It was over.", "Then we left."]


def test_no_passage_ends_in_an_abbreviation():
    """Basic search showed passages ending in `"Mr.`; summaries and descriptions stopped
    there, and reports' first sentences too."""
    answer = extractive_answer("Where did Darcy meet Watson?", [], [TEXT])
    assert "Mr. Darcy met Dr. Watson near St. Paul" in answer
    assert not any(line.rstrip().endswith(("Mr.", "Dr.", "St.")) for line in answer.splitlines())
    assert _first_sentence(TEXT).endswith("last spring.")
    descriptions = {e["title"]: e["description"] for e in extract_nlp(TEXT).entities}
    assert descriptions["DARCY"].startswith("Mr. Darcy met Dr. Watson near St. Paul")
