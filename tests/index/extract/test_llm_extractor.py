"""Gleaning against the test server: its first pass returns half the names, a continuation the
rest, and its yes/no answer is Y for `glean_yes_rounds` checks (the paper's check, on here;
off by default)."""

import pytest

from graphrag_ray.config import load_config
from graphrag_ray.index.extract.llm_extractor import GraphExtractor, parse_yes_no
from graphrag_ray.llm.client import ChatClient
from graphrag_ray.llm.rate_limiter import LocalRateLimiter
from graphrag_ray.prompts_loader import load_prompts
from graphrag_testkit.llm_server import run_test_server

TEXT = ("Ada Brandt left the Orrin Institute in Lyon. She founded Keel Labs with Tomas Reyes. "
        "Keel Labs sells turbines to Porto Energy. Lyon welcomed Porto Energy.")


def _extract(max_gleanings, yes_rounds, model="gpt-4o-mini", **switches):
    with run_test_server(glean_yes_rounds=yes_rounds, **switches) as server:
        config = load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                                    f"llm.model={model}", "extraction.glean_check=true",
                                    f"extraction.max_gleanings={max_gleanings}"])
        chat = ChatClient(config.llm)
        records = GraphExtractor(config, load_prompts(config)).extract(TEXT, chat)
        return records, server.stats()


def test_no_gleaning_makes_one_call():
    records, stats = _extract(max_gleanings=0, yes_rounds=1)
    assert stats["requests"] == 1 and records.entities


@pytest.mark.parametrize("max_gleanings,yes_rounds,expected_kinds", [
    (3, 1, {"extract_graph": 1, "glean_check": 2, "glean_continue": 1}),  # stops on N
    (1, 5, {"extract_graph": 1, "glean_check": 1, "glean_continue": 1}),  # stops at max
    (3, 5, {"extract_graph": 1, "glean_check": 2, "glean_continue": 2}),  # stops: nothing new
])
def test_gleaning_stop_conditions(max_gleanings, yes_rounds, expected_kinds):
    records, stats = _extract(max_gleanings, yes_rounds)
    assert stats["by_kind"] == expected_kinds


def test_gleaning_adds_what_the_first_pass_missed():
    without, _ = _extract(max_gleanings=0, yes_rounds=1)
    with_gleaning, _ = _extract(max_gleanings=1, yes_rounds=1)
    first = {e["title"] for e in without.entities}
    both = {e["title"] for e in with_gleaning.entities}
    assert first < both and "PORTO ENERGY" in both - first


def test_an_endpoint_rejecting_logit_bias_in_any_words_is_asked_without_it_from_then_on():
    """A model whose tokenizer we know (gpt-4-turbo: cl100k_base) gets the one-token check;
    the server's 400 does not say which parameter it minds. One rejection, then the check is
    a short reply, parsed, for this chunk and the next."""
    with run_test_server(glean_yes_rounds=1, reject_logit_bias=True) as server:
        config = load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                                    "llm.model=gpt-4-turbo", "extraction.max_gleanings=1",
                                    "extraction.glean_check=true"])
        extractor = GraphExtractor(config, load_prompts(config))
        assert extractor.logit_bias
        extractor.extract(TEXT, ChatClient(config.llm))
        extractor.extract(TEXT + " Lyon thanked Ada Brandt.", ChatClient(config.llm))
        stats = server.stats()
    assert stats["by_status"].get("400") == 1
    assert stats["by_kind"]["glean_continue"] == 2
    assert [sent for status, sent in stats["chat_parameters"] if "logit_bias" in sent] == [
        ("max_tokens", "temperature", "logit_bias")]


def test_a_model_whose_tokenizer_is_unknown_gets_no_logit_bias():
    """A local server's model (or an Azure deployment's own name): cl100k ids would bias two
    arbitrary tokens of its vocabulary."""
    records, stats = _extract(max_gleanings=1, yes_rounds=1, model="qwen2.5-7b-instruct")
    assert not any("logit_bias" in sent for _, sent in stats["chat_parameters"])
    assert stats["by_kind"]["glean_continue"] == 1 and records.entities


def test_each_call_tells_the_budget_what_its_chunk_still_waits_for():
    """The rate budget's line puts the longest chains first (`rate_limiter._rank`): a
    chunk's first call says the most output its conversation can take, the gleaning check
    and round after it the length of the reply before them."""
    seen = []

    class Recording(LocalRateLimiter):
        def acquire(self, prompt_tokens, max_output, tag="", stage="", urgency=0):
            seen.append((max_output, urgency))
            return super().acquire(prompt_tokens, max_output, tag, stage, urgency)

    with run_test_server(glean_yes_rounds=1) as server:
        config = load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                                    "llm.model=gpt-4o-mini", "extraction.glean_check=true",
                                    "extraction.max_gleanings=2"])
        chat = ChatClient(config.llm, limiter=Recording(config.llm), stage="extract")
        GraphExtractor(config, load_prompts(config)).extract(TEXT, chat)
    longest = config.extraction.max_output_tokens
    (_, first), (check_output, check), (_, glean), (_, second_check) = seen
    assert first == longest * 3 and check_output == 1
    assert 0 < check == glean < longest  # the first reply's tokens: a few records
    assert second_check != glean  # the gleaning round's own reply, shorter here


def test_parse_yes_no():
    assert parse_yes_no("Y") and parse_yes_no(" yes.") and not parse_yes_no("N")
    assert not parse_yes_no("")


def test_without_the_check_every_round_is_asked_for():
    with run_test_server(glean_yes_rounds=0) as server:
        config = load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                                    "extraction.max_gleanings=2", "extraction.glean_check=false"])
        chat = ChatClient(config.llm)
        GraphExtractor(config, load_prompts(config)).extract(TEXT, chat)
        # The server would have said N; without asking, both rounds are requested (the second
        # finds nothing new and ends the gleaning).
        assert server.stats()["by_kind"] == {"extract_graph": 1, "glean_continue": 2}


def test_gleaning_turns_reuse_the_conversation_so_a_prompt_cache_serves_it():
    long_text = " ".join([TEXT] * 30)  # over the provider's 1,024-token caching threshold
    with run_test_server(glean_yes_rounds=1) as server:
        config = load_config(None, ["extraction.method=llm", f"llm.api_base={server.url}",
                                    "extraction.max_gleanings=1", "extraction.glean_check=true"])
        chat = ChatClient(config.llm)
        GraphExtractor(config, load_prompts(config)).extract(long_text, chat)
        billed, = server.stats()["usage_by_model"].values()
    assert chat.usage.calls == 3
    assert chat.usage.cached_tokens == billed["cached_tokens"] > 0
