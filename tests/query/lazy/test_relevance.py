"""What a relevance test reads (a passage of the unit, not the unit) and how its reply is
read."""

import pytest

from graphrag_ray.query.lazy.relevance import lexical_claims, parse_relevance, passage
from graphrag_ray.tokens import count_tokens

UNIT = ("The harbour was quiet that winter. Ilse Marrow founded the Lighthouse Society in 1871. "
        "Nobody remembers the weather. The society still meets every spring at the lighthouse. "
        "Fishing boats came and went.")


def test_a_passage_is_the_units_sentences_nearest_the_question_in_their_order():
    shown = passage(UNIT, "Who founded the Lighthouse Society?", 30, "cl100k_base")
    assert shown == ("Ilse Marrow founded the Lighthouse Society in 1871. The society still "
                     "meets every spring at the lighthouse.")
    assert count_tokens(shown, "cl100k_base") <= 30
    # With room for one sentence, the one sharing the most words.
    assert passage(UNIT, "Who founded the Lighthouse Society?", 14, "cl100k_base") == \
        "Ilse Marrow founded the Lighthouse Society in 1871."
    # Nothing shared (the unit was ranked by its embedding): its opening.
    assert passage(UNIT, "Tell me about orchards", 8, "cl100k_base").startswith(
        "The harbour was quiet")


def test_a_reply_names_the_relevant_passages_and_their_claims():
    reply = ('```json\n{"relevant": [{"id": 3, "claims": ["Ilse Marrow founded it.", " "]},'
             ' {"id": "7", "claims": "It meets in spring."}, {"id": 99, "claims": ["unshown"]},'
             ' {"id": "x"}, "junk"]}\n```')
    assert parse_relevance(reply, [3, 7, 8]) == {3: ["Ilse Marrow founded it."],
                                                 7: ["It meets in spring."]}
    assert parse_relevance('{"relevant": []}', [1]) == {}
    with pytest.raises(ValueError):
        parse_relevance('{"passages": []}', [1])


def test_offline_relevance_needs_more_than_half_the_questions_words():
    question = "Who founded the Lighthouse Society of Varnholm?"
    assert lexical_claims(question, "The Lighthouse Society met.", 3) is None  # 2 of 4
    claims = lexical_claims(question, UNIT, 2)
    assert claims == ["Ilse Marrow founded the Lighthouse Society in 1871.",
                      "The society still meets every spring at the lighthouse."]
    assert lexical_claims("Who?", UNIT, 2) is None  # nothing asked
