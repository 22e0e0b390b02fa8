"""The LLM layer against the project's test server, through the real openai client."""

import socket
import time

import pytest

from graphrag_ray.config import LLMConfig
from graphrag_ray.llm.client import (
    ChatClient, FatalLLMError, LLMCallError, check_endpoint, parse_json_object)
from graphrag_ray.errors import LLMError
from graphrag_testkit.llm_server import run_test_server

MESSAGES = [{"role": "user", "content": "hello"}]


def _config(server, **kwargs):
    return LLMConfig(api_base=server.url, model="test-model", **kwargs)


def test_retry_after_is_honoured_on_429():
    with run_test_server(fail_first=2, fail_status=429, retry_after_s=0.3) as server:
        started = time.perf_counter()
        reply = ChatClient(_config(server, max_retries=3)).complete(MESSAGES, max_tokens=10)
        elapsed = time.perf_counter() - started
        log = server.request_log()
    assert reply == "OK"
    assert [status for _, _, status, _ in log] == [429, 429, 200]
    gaps = [b[0] - a[0] for a, b in zip(log, log[1:])]
    assert all(gap >= 0.28 for gap in gaps) and elapsed >= 0.58


def test_5xx_is_retried_then_succeeds():
    with run_test_server(fail_first=1, fail_status=503) as server:
        client = ChatClient(_config(server, max_retries=2))
        assert client.complete(MESSAGES, max_tokens=10) == "OK"
        assert client.usage.calls == 1
        assert server.stats()["by_status"] == {"503": 1, "200": 1}


def test_exhausted_retries_raise_a_call_error_with_the_status():
    with run_test_server(fail_first=10, fail_status=503) as server:
        client = ChatClient(_config(server, max_retries=1))
        with pytest.raises(LLMCallError, match="HTTP 503"):
            client.complete(MESSAGES, max_tokens=10)
        assert client.usage.failed_calls == 1


def test_timeouts_are_reported():
    with run_test_server(rate_timeout=1.0, timeout_sleep_s=1.5) as server:
        client = ChatClient(_config(server, max_retries=0, request_timeout=0.3))
        with pytest.raises(LLMCallError, match="timed out"):
            client.complete(MESSAGES, max_tokens=10)


def test_bad_api_key_is_fatal_and_never_echoed():
    with run_test_server(api_key="right-key") as server:
        config = _config(server, api_key="wrong-key-123")
        with pytest.raises(FatalLLMError, match="rejected the API key") as info:
            ChatClient(config).complete(MESSAGES, max_tokens=10)
        assert "wrong-key-123" not in str(info.value)
        with pytest.raises(FatalLLMError, match="rejected the API key"):
            check_endpoint(config)
        assert ChatClient(_config(server, api_key="right-key")).complete(MESSAGES, max_tokens=5)


def test_unreachable_endpoint_is_a_clear_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = LLMConfig(api_base=f"http://127.0.0.1:{port}/v1", max_retries=0)
    with pytest.raises(LLMError, match=f"cannot reach LLM endpoint http://127.0.0.1:{port}/v1"):
        check_endpoint(config)


def test_a_refused_connection_fails_at_once_with_the_default_retries():
    """An endpoint that is down: 36-41 s of retries before the message. Nothing listens, so
    the first refusal is final, for the build's check and for a query's first call."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = LLMConfig(api_base=f"http://127.0.0.1:{port}/v1")  # default max_retries
    for call in (lambda: check_endpoint(config),
                 lambda: ChatClient(config).complete(MESSAGES, max_tokens=5)):
        started = time.monotonic()
        with pytest.raises(LLMError, match="cannot reach LLM endpoint"):
            call()
        assert time.monotonic() - started < 2


def test_a_refused_connection_after_answers_is_retried():
    """Once the endpoint has answered, a refusal is a restart in progress: retried."""
    with run_test_server() as server:
        client = ChatClient(_config(server, max_retries=2, retry_base_delay_s=0.01))
        assert client.complete(MESSAGES, max_tokens=5)
    with pytest.raises(LLMError, match="cannot reach LLM endpoint"):
        client.complete([{"role": "user", "content": "another question"}], max_tokens=5)
    assert client.usage.retries == 2


def test_missing_api_base_is_a_clear_error():
    with pytest.raises(LLMError, match="llm.api_base is not set"):
        ChatClient(LLMConfig())


def test_parse_json_object_tolerates_fences_and_prose():
    assert parse_json_object('Here:\n```json\n{"a": {"b": 1}}\n```') == {"a": {"b": 1}}
    with pytest.raises(ValueError):
        parse_json_object("no json here")
    with pytest.raises(ValueError):
        parse_json_object("{broken")


def test_context_length_fails_the_item_at_once():
    with run_test_server(context_window=10) as server:
        client = ChatClient(_config(server, max_retries=5))
        with pytest.raises(LLMCallError, match="context window"):
            client.complete([{"role": "user", "content": "word " * 200}], max_tokens=5)
        assert server.stats()["requests"] == 1  # no retries


def test_retry_after_headers_are_parsed():
    from graphrag_ray.llm.client import backoff_delay, parse_duration

    assert parse_duration("20ms") == pytest.approx(0.02)
    assert parse_duration("6m0s") == pytest.approx(360)
    assert parse_duration("1.5") == pytest.approx(1.5)
    assert parse_duration("soon") is None
    assert 2.0 <= backoff_delay(5, 2.0, base=1.0) <= 2.2
    assert 0 <= backoff_delay(3, None, base=1.0) <= 8


def test_a_malformed_reply_is_requested_again_not_served_again_from_the_cache(tmp_path):
    """Half the replies are garbled (empty). With the cache on, each attempt has a key of its
    own: the retries reach the endpoint, and a rerun replays every attempt from the cache."""
    from graphrag_ray.llm.cache import ResponseCache
    from graphrag_ray.llm.client import MalformedReply

    def parse(reply: str) -> str:
        if reply != "OK":
            raise ValueError(f"not OK: {reply!r}")
        return reply

    prompts = [[{"role": "user", "content": f"hello {i}"}] for i in range(12)]

    def ask_all(server) -> tuple[list, ChatClient]:
        client = ChatClient(_config(server, max_parse_retries=3),
                            cache=ResponseCache(str(tmp_path / "cache")))
        outcomes = []
        for messages in prompts:
            try:
                outcomes.append(client.complete_parsed(messages, parse, max_tokens=10))
            except MalformedReply:
                outcomes.append(None)
        return outcomes, client

    with run_test_server(rate_malformed=0.5) as server:
        first, client = ask_all(server)
        requests = server.stats()["requests"]
        assert requests > len(prompts)  # some prompts needed retries, and got them
        assert first.count("OK") >= len(prompts) - 1  # 4 attempts at 1/2 each
        again, rerun = ask_all(server)
        assert server.stats()["requests"] == requests  # the rerun is all cache
        assert again == first and rerun.usage.cache_hits == requests


def test_a_call_is_settled_only_once_its_reply_is_cached(tmp_path):
    """A process killed after the budget settled a call but before its reply reached the
    cache sends it again on resume (4 such repeats after a user's SIGKILL): the reply is
    cached first, for completions, streams and embeddings alike."""
    from graphrag_ray.config import EmbeddingsConfig
    from graphrag_ray.llm.cache import ResponseCache
    from graphrag_ray.llm.embeddings import EmbeddingClient
    from graphrag_ray.llm.rate_limiter import LocalRateLimiter

    cache = ResponseCache(str(tmp_path / "cache"))
    cached_at_release = []

    class Watched(LocalRateLimiter):
        def release(self, lease, settlement):
            cached_at_release.append(len(list((tmp_path / "cache").rglob("*.json"))))
            super().release(lease, settlement)

    with run_test_server() as server:
        chat = ChatClient(_config(server, requests_per_minute=600), cache=cache,
                          limiter=Watched(_config(server, requests_per_minute=600)))
        chat.complete(MESSAGES, max_tokens=5)
        "".join(chat.stream([{"role": "user", "content": "stream this"}], max_tokens=5))
        config = EmbeddingsConfig(api_base=server.url, model="test-embedding",
                                  requests_per_minute=600)
        EmbeddingClient(config, limiter=Watched(config), cache=cache).embed(["a", "b"])
    assert cached_at_release == [1, 2, 4]


def test_requests_say_their_kind_only_when_the_setting_asks():
    """A provider's API defines no X-Graphrag-* headers: none go out by default; with
    `llm.declare_requests` (the test server) each request names its kind."""
    with run_test_server() as server:
        ChatClient(_config(server)).complete(MESSAGES, max_tokens=5, kind="community_report")
        assert server.stats()["undeclared_kinds"] != {}
        before = server.stats()["undeclared_kinds"]
        ChatClient(_config(server, declare_requests=True)).complete(
            MESSAGES, max_tokens=5, kind="community_report", cache_tag="declared")
        stats = server.stats()
    assert stats["undeclared_kinds"] == before and stats["by_kind"]["community_report"] == 1
