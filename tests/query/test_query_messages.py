"""Query mistakes and misses are messages: a question too long, a level the index lacks, a
question naming nothing in the index, a method that got no usable reply."""

import pytest

from graphrag_ray.api import GraphIndex
from graphrag_ray.cli import main


@pytest.mark.parametrize("method", ["global", "local", "drift", "basic", "text"])
def test_a_question_over_the_limit_is_refused_with_a_message(small_index, capsys, method):
    code = main(["query", "--index", str(small_index), "--method", method, "Why? " * 4000])
    err = capsys.readouterr().err
    assert code == 2 and "20,000 characters; the limit is 4,000" in err
    assert "query.max_question_chars" in err and len(err) < 300


def test_the_limit_is_a_setting(small_index, capsys):
    code = main(["query", "--index", str(small_index), "--set", "query.max_question_chars=10",
                 "Who is Scrooge?"])
    assert code == 2 and "15 characters; the limit is 10" in capsys.readouterr().err


def test_a_level_the_index_lacks_lists_its_levels(small_index, capsys):
    levels = GraphIndex.open(str(small_index)).levels
    code = main(["query", "--index", str(small_index), "--method", "global", "--level", "9",
                 "Who is Scrooge?"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"no level 9: its levels are {', '.join(map(str, levels))}" in err
    # The default level, deeper than a small index has, still answers from the deepest.
    assert main(["query", "--index", str(small_index), "--method", "global",
                 "Who is Scrooge?"]) == 0


def test_local_says_when_the_question_names_no_entity(small_index, capsys):
    """`local` about Captain Nemo answered about CAPTAIN MARSHALL, with no word of it."""
    index = GraphIndex.open(str(small_index))
    missing = index.search("local", "Who is Captain Nemo?")
    assert missing.notes and "no entity in the index is named" in missing.notes[0]
    assert missing.answer.startswith("Note: no entity in the index is named")
    assert not index.search("local", "Who is Scrooge?").notes
    assert main(["query", "--index", str(small_index), "--method", "local",
                 "Who is Captain Nemo?"]) == 0
    assert "note: no entity in the index is named in the question" in capsys.readouterr().err


def test_a_method_with_no_usable_reply_exits_non_zero(small_index, llm_server, capsys):
    """Every reply empty (the test server's malformed switch): the CLI printed an empty
    answer and exited 0, so a script took it for an answer."""
    llm_server.switches.rate_malformed = 1.0
    code = main(["query", "--index", str(small_index), "--method", "local",
                 "--set", "local_search.method=llm", "--set", f"llm.api_base={llm_server.url}",
                 "--set", "llm.model=test-model", "--set", "llm.max_retries=1",
                 "--set", "cache.enabled=false",
                 "Who is Scrooge?"])
    err = capsys.readouterr().err
    assert code == 1 and "--method local got no usable reply" in err, err
