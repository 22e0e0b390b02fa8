from graphrag_ray.tokens import count_tokens, take_within_budget


def test_packing_stops_at_the_first_miss_or_skips_it():
    texts = ["one two", "three " * 50, "four"]
    costs = [count_tokens(t) + 1 for t in texts]
    budget = costs[0] + costs[2]  # room for the first and the last, not the long middle one
    assert take_within_budget(texts, budget) == ([0], costs[0])
    assert take_within_budget(texts, budget, skip_misses=True) == ([0, 2], budget)
    assert take_within_budget(texts, budget, used=budget) == ([], budget)


def test_o200k_base_loads_from_the_shipped_file_without_a_download(tmp_path):
    """In a fresh process whose tiktoken cache is empty (and with no route to OpenAI's file
    host here or in CI): the encoding of gpt-4o and later models, the Y/N ids the gleaning
    check biases, and tiktoken's documented ids for 'hello world'."""
    import os
    import subprocess
    import sys

    script = ("from graphrag_ray.tokens import get_encoding\n"
              "e = get_encoding('o200k_base')\n"
              "print(e.encode_ordinary('hello world'), e.encode_ordinary('Y'),"
              " e.encode_ordinary('N'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[0] == "[24912, 2375] [56] [45]"
    assert list(tmp_path.iterdir()) == []  # nothing was cached there either


def test_an_encoding_that_would_be_downloaded_is_a_config_error_at_once():
    import pytest

    from graphrag_ray.errors import ConfigError
    from graphrag_ray.tokens import get_encoding

    with pytest.raises(ConfigError, match="p50k_base.*not available offline"):
        get_encoding("p50k_base")
