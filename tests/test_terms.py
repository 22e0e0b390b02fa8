"""The words the offline methods compare, in every script: accents folded, Indic vowel signs
kept inside their words, Chinese and Japanese as character pairs."""

from graphrag_ray.llm.embeddings import hashing_embed
from graphrag_ray.terms import content_terms


def test_words_of_every_script():
    assert content_terms("Le Président visite Montréal") == ["president", "visite", "montreal"]
    assert content_terms("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]  # not cut at a vowel sign
    assert content_terms("ولد نجيب محفوظ في القاهرة")[:3] == ["ولد", "نجيب", "محفوظ"]
    assert content_terms("林黛玉在大观园") == ["林黛", "黛玉", "玉在", "在大", "大观", "观园"]
    assert content_terms("What are the main themes? Scrooge's A.I.") == ["theme", "scrooge"]


def test_offline_embeddings_match_a_chinese_question_to_its_passage():
    passages = ["林黛玉住在大观园的潇湘馆。", "王夫人住在荣国府。"]
    vectors = hashing_embed(passages + ["林黛玉住在哪里？"], 256)
    similarity = vectors[:2] @ vectors[2]
    assert similarity[0] > similarity[1] > -1 and similarity[0] > 0.3
