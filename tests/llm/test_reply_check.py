"""A stage whose first replies are unusable stops before it pays for the rest, on both
engines, saying why and publishing nothing; an LLM build never publishes an index of no
entities."""

import pytest

from graphrag_ray.config import load_config
from graphrag_ray.errors import GraphRagError
from graphrag_ray.index.build import build_index
from graphrag_ray.llm.reply_check import ReplyCheck, UnusableReplies
from graphrag_testkit.llm_server import run_test_server

from conftest import CAROL_DIR


def test_the_first_replies_decide_and_later_ones_do_not():
    check = ReplyCheck(calls=4, share=0.75)
    assert [check.note("extract", usable, "OK.", "the prompt")
            for usable in (False, True, False)] == [None] * 3
    verdict = check.note("extract", False, "OK.", "the prompt")
    assert "3 of its first 4 replies were unusable" in verdict and "'OK.'" in verdict
    assert check.verdict("extract") == verdict and check.verdict("summarize") is None
    usable_start = ReplyCheck(calls=2, share=1.0)
    usable_start.note("extract", True, "", "")
    usable_start.note("extract", False, "", "")
    assert all(usable_start.note("extract", False, "", "") is None for _ in range(10))
    assert ReplyCheck(calls=0, share=1.0).note("extract", False, "", "") is None


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["local", "ray"])
def test_a_build_whose_replies_are_unusable_stops_early_and_publishes_nothing(tmp_path,
                                                                                engine):
    out = tmp_path / "index"
    with run_test_server(rate_malformed=1.0) as server:
        config = load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                                    f"runtime.engine={engine}", "runtime.num_cpus=2"])
        with pytest.raises(UnusableReplies, match=r"stage extract stopped: 20 of its first "
                                                  r"20 replies were unusable.*extract_graph"):
            build_index(str(CAROL_DIR), str(out), config, progress=lambda _: None)
        calls = server.stats()["by_kind"]["extract_graph"]
    assert calls < 60  # of 86 chunks: the first 20, and those in flight when they settled
    assert list((out / "versions").iterdir()) == []


@pytest.mark.slow
def test_an_llm_build_that_finds_no_entity_publishes_nothing(tmp_path):
    out = tmp_path / "index"
    with run_test_server(rate_malformed=1.0) as server:
        config = load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                                    "runtime.engine=local", "llm.check_replies=0",
                                    "extraction.max_gleanings=0"])
        with pytest.raises(GraphRagError, match="the LLM extracted no entity from the 86 "
                                                "chunks.*nothing was published"):
            build_index(str(CAROL_DIR), str(out), config, progress=lambda _: None)
    assert list((out / "versions").iterdir()) == []
