"""Requests shaped to what the endpoint takes: from the model's family, then from its 400s."""

import pytest

from graphrag_ray.config import load_config
from graphrag_ray.llm.client import ChatClient
from graphrag_ray.llm.rate_limiter import LocalRateLimiter
from graphrag_ray.llm.request_shape import initial_shape, is_reasoning_model, model_encoding
from graphrag_testkit.llm_server import run_test_server

MESSAGES = [{"role": "user", "content": "---Role---\nSummarize: Ada met Bob in Lyon."}]


@pytest.mark.parametrize("model, reasoning", [
    ("o1", True), ("o3-mini", True), ("o4-mini-2025-04-16", True), ("gpt-5", True),
    ("gpt-5-nano", True), ("gpt-5.1", True), ("azure/o3", True), ("gpt-4o-mini", False),
    ("gpt-4.1", False), ("ollama/qwen3:8b", False), ("omni-model", False)])
def test_reasoning_families_are_told_by_name(model, reasoning):
    assert is_reasoning_model(model) is reasoning


def test_logit_bias_only_for_models_whose_token_ids_we_know():
    assert model_encoding("gpt-4-turbo") == "cl100k_base"
    assert model_encoding("gpt-3.5-turbo") == "cl100k_base"
    assert model_encoding("gpt-4o-mini") == model_encoding("gpt-4.1") == "o200k_base"
    assert model_encoding("llama-3.1-8b-instruct") is None
    shape = initial_shape(load_config(None, ["llm.model=qwen2.5-7b-instruct"]).llm)
    assert not shape.logit_bias and shape.limit_parameter == "max_tokens" and shape.temperature
    reasoning = initial_shape(load_config(None, ["llm.model=o3-mini"]).llm)
    assert reasoning.limit_parameter == "max_completion_tokens"
    assert not reasoning.temperature and not reasoning.logit_bias
    assert reasoning.reasoning_allowance == 4096
    forced = initial_shape(load_config(None, [
        "llm.model=o3-mini", "llm.max_tokens_parameter=max_tokens", "llm.send_temperature=true",
        "llm.reasoning_allowance_tokens=0"]).llm)
    assert forced.limit_parameter == "max_tokens" and forced.temperature
    assert forced.reasoning_allowance == 0


def test_a_reasoning_model_behind_any_name_is_learnt_from_its_rejections():
    """An Azure deployment called 'extraction' serving an o-series model: the first request
    goes as for a chat model, and each 400 (OpenAI's words) changes one parameter; after
    them, no request carries max_tokens or temperature. What was learnt goes to the job's
    budget, so a client in another worker starts from it."""
    with run_test_server(personality="reasoning") as server:
        config = load_config(None, [f"llm.api_base={server.url}", "llm.model=extraction",
                                    "llm.max_retries=0"]).llm
        limiter = LocalRateLimiter(config)
        chat = ChatClient(config, limiter=limiter)
        assert chat.complete(MESSAGES, max_tokens=200)
        assert chat.complete(MESSAGES + [{"role": "user", "content": "More."}], max_tokens=200)
        sent = server.stats()["chat_parameters"]
    assert [status for status, _ in sent] == [400, 400, 200, 200]
    assert sent[0][1] == ("max_tokens", "temperature")
    assert all(params == ("max_completion_tokens",) for _, params in sent[2:])
    assert limiter.stats()["learned_request_shape"].startswith(
        "max_completion_tokens, no temperature")


def test_reasoning_tokens_do_not_eat_the_answer():
    """o-series usage counts hidden reasoning in completion_tokens and the limit covers it:
    the allowance keeps a short limit from returning an empty reply."""
    with run_test_server(personality="reasoning") as server:
        config = load_config(None, [f"llm.api_base={server.url}", "llm.model=o3-mini"]).llm
        reply = ChatClient(config).complete(MESSAGES, max_tokens=5)
        without = load_config(None, [f"llm.api_base={server.url}", "llm.model=o3-mini",
                                     "llm.reasoning_allowance_tokens=0"]).llm
        cut = ChatClient(without).complete(MESSAGES, max_tokens=5)
        assert server.stats()["by_status"] == {"200": 2}
    assert reply and cut == ""


@pytest.mark.parametrize("personality", ["think", "fenced", "think,fenced"])
def test_replies_lose_reasoning_blocks_and_fences(personality):
    with run_test_server() as plain, run_test_server(personality=personality) as quirky:
        expected = ChatClient(load_config(None, [f"llm.api_base={plain.url}"]).llm).complete(
            MESSAGES, max_tokens=200)
        config = load_config(None, [f"llm.api_base={quirky.url}"]).llm
        assert ChatClient(config).complete(MESSAGES, max_tokens=200) == expected
        if "fenced" not in personality:  # a streamed answer is markdown for a reader: kept
            assert "".join(ChatClient(config).stream(MESSAGES, max_tokens=200)) == expected


def test_a_200_with_an_error_body_is_retried_and_no_usage_is_not_an_error():
    with run_test_server(personality="error_200,no_usage") as server:
        config = load_config(None, [f"llm.api_base={server.url}",
                                    "llm.retry_base_delay_s=0.01"]).llm
        chat = ChatClient(config, limiter=LocalRateLimiter(config))
        assert chat.complete(MESSAGES, max_tokens=200)
        assert chat.usage.retries == 1 and chat.usage.calls == 1
        assert "".join(chat.stream(MESSAGES + [{"role": "user", "content": "again"}],
                                   max_tokens=200))


def test_what_one_ray_worker_learns_every_other_sends_from_its_first_request(ray_session):
    """An o-series model behind an unknown name, a cluster-wide budget: the first actor's
    requests are rejected twice and teach the shape; the actors after it (other processes)
    get it with their first lease and are never rejected."""
    import time

    from graphrag_ray.distributed.shared_budget import cluster_rate_limiter

    ray = ray_session

    @ray.remote(num_cpus=0.1)
    class Caller:
        def __init__(self, config, limiter):
            self.client = ChatClient(config, limiter=limiter)

        def run(self, tag):
            return self.client.complete([{"role": "user", "content": f"Summarize {tag}."}],
                                        max_tokens=20)

    with run_test_server(personality="reasoning") as server:
        config = load_config(None, [f"llm.api_base={server.url}", "llm.model=deployment-x",
                                    "llm.max_retries=0"]).llm
        limiter = cluster_rate_limiter(config, f"test-shape-{time.time()}")
        callers = []
        try:
            first = Caller.remote(config, limiter)
            callers.append(first)
            assert ray.get(first.run.remote("first"))
            after_first = len(server.stats()["chat_parameters"])
            others = [Caller.remote(config, limiter) for _ in range(2)]
            callers += others
            assert all(ray.get([c.run.remote(f"other {i}") for i, c in enumerate(others)]))
            sent = server.stats()["chat_parameters"]
        finally:
            for caller in callers:  # ours: gone with the test, not left to the session
                ray.kill(caller)
            limiter.close()
    assert [status for status, _ in sent[:after_first]] == [400, 400, 200]
    assert sent[after_first:] == [(200, ("max_completion_tokens",))] * 2


def test_a_rejection_is_learnt_before_the_requests_waiting_on_it_go():
    """The first request with unconfirmed parameters leads and the others wait for its
    answer; a rejection's lesson is learnt before they are let go, so none of them sends the
    rejected parameters again, however late the leader's caller gets to it (CI once saw a
    third 400 for two lessons)."""
    import threading
    import time

    from graphrag_ray.llm import request_shape

    config = load_config(None, ["llm.api_base=http://shape-test.invalid/v1",
                                "llm.model=race-test"]).llm
    shape = {"parameters": ("max_tokens",)}
    sent_with: list[tuple] = []
    follower_ready = threading.Event()

    def prepare(is_leader: bool):
        parameters = shape["parameters"]
        if not is_leader:
            follower_ready.set()

        def send():
            sent_with.append(parameters)
            if parameters == ("max_tokens",):
                follower_ready.wait(5)
                time.sleep(0.05)  # the follower is waiting on the leader's answer by now
                raise RuntimeError("400: max_tokens is not supported")
            return "ok"
        return dict.fromkeys(parameters), send

    def learn_from(exc):
        shape["parameters"] = ("max_completion_tokens",)

    def leader():
        try:
            request_shape.send_shaped(config, lambda: prepare(True), learn_from)
        except RuntimeError:
            time.sleep(0.2)  # the caller's own handling of the rejection comes late

    first = threading.Thread(target=leader)
    first.start()
    deadline = time.monotonic() + 10
    while not sent_with and time.monotonic() < deadline:
        time.sleep(0.005)
    assert request_shape.send_shaped(config, lambda: prepare(False), learn_from) == "ok"
    first.join()
    assert sent_with == [("max_tokens",), ("max_completion_tokens",)]
