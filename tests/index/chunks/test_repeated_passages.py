"""Passages repeated across documents (a licence in every file, a disclaimer in every call, a
file name opening every part of a transcript): found, kept in the index once, never
extracted, never in an answer; with an LLM, the extraction calls no longer carry them."""

import random
from pathlib import Path

from graphrag_ray import schema
from graphrag_ray.api import GraphIndex
from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.index.chunks.repeated_passages import (
    RepeatedPassages, document_passages, opening_words, split_repeated)
from graphrag_ray.storage import IndexStore

from conftest import llm_config

LICENCE = ("This eBook is for the use of anyone anywhere in the United States and most other "
           "parts of the world at no cost and with almost no restrictions whatsoever. You may "
           "copy it, give it away or re-use it under the terms of the Project Gutenberg "
           "License included with this eBook or online at www.gutenberg.org, {year}.")
STORIES = [
    "Alice Liddell met the White Rabbit near Oxford. Alice Liddell followed the White Rabbit.",
    "Captain Ahab hunted Moby Dick across the Pacific. Captain Ahab swore revenge on Moby Dick.",
    "Elizabeth Bennet argued with Mr Darcy at Netherfield. Elizabeth Bennet visited Pemberley.",
    "Sherlock Holmes and John Watson lived at Baker Street. Sherlock Holmes solved the case.",
    "Jean Valjean escaped from Toulon. Inspector Javert followed Jean Valjean to Paris.",
]
QUIET = {"progress": lambda _: None}


def test_a_passage_in_enough_documents_is_repeated_whatever_its_year():
    documents = [f"{story}\n\n{LICENCE.format(year=2020 + i)}" for i, story in enumerate(STORIES)]
    repeated = RepeatedPassages.find([(i, document_passages(d, 100)) for i, d in
                                      enumerate(documents)], min_documents=3)
    assert len(repeated.documents_with) == 1 and list(repeated.documents_with.values()) == [5]
    split = split_repeated(documents[0], repeated, 0, 100)
    assert split.text == STORIES[0] and split.homed == [LICENCE.format(year=2020)]
    assert split.cut_chars > 200 and not repeated.content  # boilerplate, not content
    split = split_repeated(documents[3], repeated, 3, 100)
    assert split.text == STORIES[3] and split.homed == []  # only its first document keeps it
    assert not RepeatedPassages.find([(i, document_passages(d, 100)) for i, d in
                                      enumerate(documents[:2])], min_documents=3).first


def corpus(folder: Path, stories=STORIES) -> Path:
    folder.mkdir()
    for i, story in enumerate(stories):
        (folder / f"book{i}.txt").write_text(f"{story}\n\n{LICENCE.format(year=2020 + i)}\n",
                                             encoding="utf-8")
    return folder


def test_a_licence_in_every_file_is_indexed_once_and_never_reported(tmp_path):
    manifest = build_index(str(corpus(tmp_path / "in")), str(tmp_path / "index"),
                           load_config(None, ["runtime.engine=local"]), **QUIET)
    assert manifest.repeated_passages["passages"] == 1
    assert manifest.repeated_passages["occurrences"] == 5
    assert manifest.extraction.failed_chunks == 0
    assert manifest.extraction.boilerplate_chunks == 1
    version = IndexStore(str(tmp_path / "index")).open()
    units = version.read_table(schema.TEXT_UNITS).to_pylist()
    holding = [u for u in units if "Project Gutenberg" in u["text"]]
    assert len(holding) == 1 and holding[0]["extraction_status"] == "repeated_passage"
    assert holding[0]["entity_ids"] == []
    titles = version.read_table(schema.ENTITIES, ["title"]).column("title").to_pylist()
    assert not [t for t in titles if "GUTENBERG" in t or "UNITED STATES" in t]
    assert "SHERLOCK HOLMES" in titles
    # Every document still has its whole text.
    assert all("Project Gutenberg" in d["text"]
               for d in version.read_table(schema.DOCUMENTS).to_pylist())
    reports = version.read_table(schema.COMMUNITY_REPORTS, ["full_content"]).to_pylist()
    assert not [r for r in reports if "Gutenberg" in r["full_content"]]
    index = GraphIndex.open(str(tmp_path / "index"))
    for method in ("basic", "text", "global", "local"):
        answer = index.search(method, "What licence terms apply to this eBook?").answer
        assert "Gutenberg" not in answer, (method, answer)


def test_llm_extraction_no_longer_pays_for_the_repeated_passage(tmp_path, llm_server):
    stories = [f"{story} They met again in chapter {i}." for i, story in enumerate(STORIES * 3)]
    source = corpus(tmp_path / "in", stories)
    prompt_tokens = {}
    for enabled in (False, True):
        llm_server.reset()
        manifest = build_index(str(source), str(tmp_path / f"index-{enabled}"), llm_config(
            llm_server, "runtime.engine=local", f"repeated_passages.enabled={enabled}",
            f"cache.url={tmp_path}/cache-{enabled}"), **QUIET)
        prompt_tokens[enabled] = manifest.llm_usage.stages["extract"].prompt_tokens
    # 15 calls' worth of licence (~60 tokens each, and their gleanings) not sent.
    assert prompt_tokens[True] < prompt_tokens[False] - 15 * 60


def test_edited_copies_are_the_same_passage():
    edited = [LICENCE, LICENCE.replace("no cost", "no charge"),
              LICENCE.replace("Project Gutenberg", "Project Gutenberg-tm"),
              LICENCE + " Please check the laws of your country before using this eBook."]
    documents = [(i, document_passages(f"{story}\n\n{text}", 100))
                 for i, (story, text) in enumerate(zip(STORIES, edited))]
    repeated = RepeatedPassages.find(documents, min_documents=3)
    assert list(repeated.documents_with.values()) == [4] and len(repeated.first) == 4
    assert set(repeated.first.values()) == {0}
    unrelated = [(i, document_passages(story * 3, 100)) for i, story in enumerate(STORIES)]
    assert not RepeatedPassages.find(unrelated, min_documents=2).first


def test_a_single_gutenberg_book_keeps_its_header_and_licence_out(tmp_path):
    (tmp_path / "in").mkdir()
    body = " ".join(STORIES)
    (tmp_path / "in" / "book.txt").write_text(
        "The Project Gutenberg eBook of Tales, by Various\n\n" + LICENCE.format(year=2024)
        + "\n\n*** START OF THE PROJECT GUTENBERG EBOOK TALES ***\n\n" + body
        + "\n\n*** END OF THE PROJECT GUTENBERG EBOOK TALES ***\n\nSection 1. General Terms "
          "of Use and Redistributing Project Gutenberg-tm electronic works.\n",
        encoding="utf-8")
    manifest = build_index(str(tmp_path / "in"), str(tmp_path / "index"),
                           load_config(None, ["runtime.engine=local"]), **QUIET)
    assert manifest.extraction.boilerplate_chunks == 2
    version = IndexStore(str(tmp_path / "index")).open()
    statuses = [(u["extraction_status"], "Gutenberg" in u["text"])
                for u in version.read_table(schema.TEXT_UNITS).to_pylist()]
    assert sorted(statuses) == [("ok", False), ("repeated_passage", True),
                                ("repeated_passage", True)]
    titles = version.read_table(schema.ENTITIES, ["title"]).column("title").to_pylist()
    assert "SHERLOCK HOLMES" in titles and not [t for t in titles if "GUTENBERG" in t]


def test_a_file_name_opening_every_part_of_a_transcript_is_cut_once():
    """Parts of one transcript each open with its file name (the podcast corpus's format);
    the name is cut from every part and kept once; another transcript's parts keep theirs
    apart, and two documents opening alike are not enough."""
    parts = [f"EP-13_ Behind_the_Tech_with_Sam-Altman.txt ../{text}" for text in (
        "SAM ALTMAN: The two strategies to succeed.", "KEVIN SCOTT: He is a super cat.",
        "SAM ALTMAN: Way before the iPhone.")]
    parts += ["EP-14_ Behind_the_Tech_with_Lisa-Su.txt  LISA SU: Chips first.",
              "EP-14_ Behind_the_Tech_with_Lisa-Su.txt  KEVIN SCOTT: Low power."]
    openings = [opening_words(text) for text in parts]
    repeated = RepeatedPassages.find([(i, document_passages(t, 100)) for i, t in
                                      enumerate(parts)], 3, 0.01, openings)
    split = split_repeated(parts[0], repeated, 0, 100)
    assert split.text == "SAM ALTMAN: The two strategies to succeed."
    assert split.homed == ["EP-13_ Behind_the_Tech_with_Sam-Altman.txt"] and split.cut_chars > 30
    split = split_repeated(parts[2], repeated, 2, 100)
    assert split.text == "SAM ALTMAN: Way before the iPhone." and split.homed == []
    assert split_repeated(parts[3], repeated, 3, 100).text == parts[3]  # only two open so


def test_a_document_copied_a_few_times_in_a_large_corpus_is_extracted_once():
    """Content repeats need `min_documents`, not `min_share` of the corpus: three copies of a
    transcript among 400 documents (under 1%) were each extracted; a licence in as few
    documents is still not boilerplate (never extracted: it must recur across the
    corpus)."""
    transcript = "\n\n".join(f"{story} They talked for an hour about it and more. " * 2
                             for story in STORIES)
    words = random.Random(0)
    vocabulary = [f"word{chr(97 + a)}{chr(97 + b)}" for a in range(26) for b in range(26)]
    unique = [" ".join(words.choices(vocabulary, k=30)) + "." for _ in range(397)]
    copies = [f"Archive copy {n}.\n\n{transcript}" for n in range(3)]
    licensed = [f"{text}\n\n{LICENCE.format(year=2020)}" for text in unique[:3]]
    documents = licensed + unique[3:] + copies
    found = RepeatedPassages.find([(i, document_passages(d, 100)) for i, d in
                                   enumerate(documents)], min_documents=3, min_share=0.01)
    assert len(found.documents_with) == len(STORIES)  # each passage of the transcript
    assert set(found.content.values()) == set(found.documents_with)  # content, all of it
    assert set(found.first.values()) == {len(documents) - 3}  # kept by the first copy
