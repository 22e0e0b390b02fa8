from graphrag_ray.config import LLMConfig
from graphrag_ray.llm.cache import ResponseCache, cache_key
from graphrag_ray.llm.client import ChatClient
from graphrag_testkit.llm_server import run_test_server

MESSAGES = [{"role": "user", "content": "hello"}]
PARAMS = {"max_tokens": 10, "temperature": 0.0}


def test_key_covers_model_messages_params_and_template():
    base = cache_key("m", MESSAGES, PARAMS, "v1")
    assert base == cache_key("m", [dict(MESSAGES[0])], dict(PARAMS), "v1")
    assert base != cache_key("m2", MESSAGES, PARAMS, "v1")
    assert base != cache_key("m", [{"role": "user", "content": "hello!"}], PARAMS, "v1")
    assert base != cache_key("m", MESSAGES, {**PARAMS, "temperature": 0.5}, "v1")
    assert base != cache_key("m", MESSAGES, PARAMS, "v2")


def test_cache_round_trip_on_local_and_memory_filesystems(tmp_path):
    for url in (str(tmp_path / "cache"), "memory://cache-test"):
        cache = ResponseCache(url)
        assert cache.get("ab" * 32) is None
        cache.put("ab" * 32, {"content": "x"})
        assert ResponseCache(url).get("ab" * 32) == {"content": "x"}


def test_a_cached_call_is_not_repeated_and_the_key_ignores_the_api_key(tmp_path):
    with run_test_server() as server:
        cache = ResponseCache(str(tmp_path / "cache"))
        first = ChatClient(LLMConfig(api_base=server.url, api_key="key-one"), cache=cache)
        second = ChatClient(LLMConfig(api_base=server.url, api_key="key-two"), cache=cache)
        assert first.complete(MESSAGES, max_tokens=10) == second.complete(MESSAGES, max_tokens=10)
        assert server.stats()["requests"] == 1
        assert second.usage.cache_hits == 1 and second.usage.calls == 0
        stored = list((tmp_path / "cache").rglob("*.json"))
        assert stored and all("key-one" not in p.read_text() and "key-two" not in p.read_text()
                              for p in stored)
        other_model = ChatClient(LLMConfig(api_base=server.url, model="other"), cache=cache)
        other_model.complete(MESSAGES, max_tokens=10)
        assert server.stats()["requests"] == 2
