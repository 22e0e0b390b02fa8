"""The query service as its users meet it: the `openai` client (sync, async, streaming) and
plain HTTP against a served index, in one process (uvicorn), offline and through the
project's test LLM server."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
import time
import urllib.request

import openai
import pytest
from served_index import no_serve_keys, publish_again, serving  # noqa: F401

from graphrag_ray.config import ServeConfig
from graphrag_ray.serve.runner import ServeSpec, local_service
from graphrag_testkit.llm_server import run_test_server

LLM = ("global_search.method=llm", "local_search.method=llm", "basic_search.method=llm",
       "llm.model=test-model", "llm.max_retries=1")


def served(index, *overrides, **settings):
    return serving(local_service(ServeSpec(str(index), overrides=tuple(overrides),
                                           settings=ServeConfig(**settings))))


def http(url, path, body=None, headers=None, method=None):
    data = None if body is None else (body if isinstance(body, bytes) else
                                      json.dumps(body).encode())
    request = urllib.request.Request(url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json",
                                              **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_every_method_answers_through_the_openai_client(small_index):
    with served(small_index) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        models = [m.id for m in client.models.list()]
        assert models == ["graphrag-global", "graphrag-local", "graphrag-drift",
                          "graphrag-basic", "graphrag-text", "graphrag-lazy"]
        for model in models:
            reply = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "Who is Scrooge?"}])
            assert reply.choices[0].message.content.strip(), model
            assert reply.choices[0].finish_reason == "stop"
            assert reply.model == model
            assert reply.system_fingerprint.startswith("graphrag-ray:")
            assert reply.usage.total_tokens == 0  # offline: no LLM token spent
            extra = reply.model_extra["graphrag"]
            assert extra["method"] == model.removeprefix("graphrag-")
            assert extra["version"] == reply.system_fingerprint.split(":", 1)[1]
        # A method's own option, in the body beside the standard fields.
        reply = client.chat.completions.create(
            model="graphrag-global", messages=[{"role": "user", "content": "Themes?"}],
            extra_body={"level": 0})
        assert reply.choices[0].message.content
        with pytest.raises(openai.BadRequestError, match="applies to global only"):
            client.chat.completions.create(
                model="graphrag-local", messages=[{"role": "user", "content": "Who?"}],
                extra_body={"level": 0})
        with pytest.raises(openai.NotFoundError, match="does not exist"):
            client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "Who?"}])


def test_streaming_history_and_usage_through_the_test_llm(small_index):
    with run_test_server(keep_requests=True) as llm_server, \
            served(small_index, f"llm.api_base={llm_server.url}", *LLM) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        history = [{"role": "user", "content": "Who is Scrooge?"},
                   {"role": "assistant", "content": "A miser."}]
        plain = client.chat.completions.create(
            model="graphrag-local", messages=history + [
                {"role": "user", "content": "And what of Marley?"}])
        assert plain.usage.prompt_tokens > 0 and plain.usage.completion_tokens > 0
        assert plain.usage.total_tokens == (plain.usage.prompt_tokens
                                            + plain.usage.completion_tokens)
        # The history reached the method's prompt: the request the server saw holds it.
        seen = [r for r in llm_server.chat_requests()
                if "And what of Marley?" in json.dumps(r["messages"])]
        assert seen and any("A miser." in json.dumps(r) for r in seen)

        pieces, usage, finish = [], None, None
        for chunk in client.chat.completions.create(
                model="graphrag-global", stream=True, stream_options={"include_usage": True},
                messages=[{"role": "user", "content": "What are the main themes?"}]):
            if chunk.usage is not None:
                usage = chunk.usage
            for choice in chunk.choices:
                pieces.append(choice.delta.content or "")
                finish = choice.finish_reason or finish
        assert len([p for p in pieces if p]) > 1  # written as it came, not at once
        assert "".join(pieces).strip() and finish == "stop"
        assert usage is not None and usage.completion_tokens > 0


def test_the_async_client_and_concurrent_requests(small_index):
    with served(small_index) as url:
        client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)

        async def ask(i):
            reply = await client.chat.completions.create(
                model="graphrag-basic", messages=[{"role": "user", "content": f"Marley {i}?"}])
            return reply.choices[0].message.content

        async def main():
            answers = await asyncio.gather(*(ask(i) for i in range(12)))
            streamed = []
            async for chunk in await client.chat.completions.create(
                    model="graphrag-local", stream=True,
                    messages=[{"role": "user", "content": "Who is Fezziwig?"}]):
                streamed += [c.delta.content or "" for c in chunk.choices]
            await client.close()
            return answers, "".join(streamed)

        answers, streamed = asyncio.run(main())
        assert len(answers) == 12 and all(a.strip() for a in answers)
        assert streamed.strip()  # an offline answer arrives as one piece, then [DONE]


def test_query_endpoint_resolves_citations_and_index_facts(small_index):
    with served(small_index) as url:
        status, headers, body = http(url, "/v1/query", {
            "question": "Who is Scrooge?", "method": "local", "max_citations": 3})
        assert status == 200, body
        answer = json.loads(body)
        assert answer["answer"] and answer["version"] == headers["x-graphrag-version"]
        entities = answer["citations"]["entities"]
        assert entities["total"] == len(answer["sources"]["entities"]) > 0
        assert 0 < len(entities["rows"]) <= 3
        assert {"id", "title", "type", "description"} <= set(entities["rows"][0])
        units = answer["citations"]["text_units"]["rows"]
        assert units and units[0]["text"]
        assert answer["citations"]["documents"]["rows"][0]["title"]

        status, _, body = http(url, "/v1/query", {"question": "Themes?", "method": "global",
                                                  "response_type": "one paragraph"})
        assert status == 200
        assert json.loads(body)["citations"]["reports"]["rows"][0]["title"]

        status, _, body = http(url, "/v1/index")
        facts = json.loads(body)
        assert status == 200 and facts["tables"]["entities"] > 0 and facts["levels"]
        assert "api_key" not in json.dumps(facts)
        status, _, body = http(url, "/healthz")
        assert status == 200 and json.loads(body)["version"] == facts["version"]


def test_api_keys(small_index, monkeypatch):
    monkeypatch.setenv("GRAPHRAG_SERVE_API_KEYS", "first-key, second-key")
    with served(small_index) as url:
        question = [{"role": "user", "content": "Who is Scrooge?"}]
        with pytest.raises(openai.AuthenticationError, match="valid API key"):
            openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0
                          ).chat.completions.create(model="graphrag-local", messages=question)
        for key in ("first-key", "second-key"):
            reply = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0
                                  ).chat.completions.create(model="graphrag-local",
                                                            messages=question)
            assert reply.choices[0].message.content
        status, _, body = http(url, "/v1/index")
        assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key"
        assert http(url, "/healthz")[0] == 200  # a probe needs no key


def test_limits_body_question_concurrency_and_timeout(small_index, llm_server):
    with served(small_index, max_body_bytes=2000) as url:
        status, _, body = http(url, "/v1/chat/completions", b"x" * 5000)
        assert status == 413 and "serve.max_body_bytes" in json.loads(body)["error"]["message"]
    with served(small_index, "query.max_question_chars=50") as url:
        status, _, body = http(url, "/v1/chat/completions", {
            "model": "graphrag-local", "messages": [{"role": "user", "content": "why " * 30}]})
        assert status == 413 and json.loads(body)["error"]["code"] == "question_too_long"
        status, _, body = http(url, "/v1/chat/completions", b"{not json")
        assert status == 400 and "not JSON" in json.loads(body)["error"]["message"]

    # A slow LLM: one request at a time, a deadline shorter than an answer.
    llm_server.switches.latency_ms = 4000
    with served(small_index, f"llm.api_base={llm_server.url}", *LLM,
                max_concurrent_requests=1, request_timeout_s=0.5) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        outcomes = []

        def ask():
            try:
                client.chat.completions.create(
                    model="graphrag-basic", messages=[{"role": "user", "content": "Marley?"}])
                outcomes.append(200)
            except openai.APIStatusError as error:
                outcomes.append((error.status_code, error.response.headers.get("retry-after")))

        retrying = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=2)
        with pytest.raises(openai.APIStatusError) as timed_out:
            retrying.chat.completions.create(
                model="graphrag-basic", messages=[{"role": "user", "content": "Marley?"}])
        assert timed_out.value.status_code == 504
        # Told not to retry (its search goes on): the service saw that request once.
        status, _, body = http(url, "/metrics")
        assert 'endpoint="/v1/chat/completions",method="basic",status="504"} 1' in body.decode()
        assert 'status="429"' not in body.decode()
        ask()  # the timed-out search still holds the only slot
        assert outcomes == [(429, "1")]


def test_metrics_count_requests_by_method_and_status(small_index):
    from prometheus_client.parser import text_string_to_metric_families

    with served(small_index) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        for _ in range(3):
            client.chat.completions.create(model="graphrag-local",
                                           messages=[{"role": "user", "content": "Who?"}])
        list(client.chat.completions.create(model="graphrag-basic", stream=True,
                                            messages=[{"role": "user", "content": "Who?"}]))
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="nope",
                                           messages=[{"role": "user", "content": "Who?"}])
        status, _, body = http(url, "/metrics")
        assert status == 200
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        counts = {(s.labels["endpoint"], s.labels["method"], s.labels["status"]): s.value
                  for s in families["graphrag_serve_requests"].samples}
        assert counts[("/v1/chat/completions", "local", "200")] == 3
        assert counts[("/v1/chat/completions", "basic", "200")] == 1
        assert counts[("/v1/chat/completions", "", "404")] == 1
        histogram = families["graphrag_serve_request_seconds"]
        assert any(s.name.endswith("_count") and s.value == 3 for s in histogram.samples)


@pytest.mark.slow  # builds a new version
def test_a_published_version_is_switched_to_while_requests_run(small_index, tmp_path):
    """A build publishes a new version to the URL being served; the service loads it beside
    the old one and switches; requests asked meanwhile all succeed, each from one version."""
    index = tmp_path / "index"
    shutil.copytree(small_index, index)
    with served(index, poll_s=0.2) as url:
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0)
        first = client.chat.completions.create(
            model="graphrag-local", messages=[{"role": "user", "content": "Who?"}])
        versions, failures, stop = set(), [], threading.Event()

        def keep_asking():
            while not stop.is_set():
                try:
                    reply = client.chat.completions.create(
                        model="graphrag-local", messages=[{"role": "user", "content": "Who?"}])
                    versions.add(reply.system_fingerprint)
                except Exception as exc:  # noqa: BLE001 - counted: the goal is none
                    failures.append(repr(exc))

        askers = [threading.Thread(target=keep_asking) for _ in range(4)]
        for asker in askers:
            asker.start()
        published = publish_again(index, 20_000, tmp_path / "input")
        deadline = time.monotonic() + 30
        while f"graphrag-ray:{published}" not in versions and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        for asker in askers:
            asker.join()
        assert failures == []
        assert versions == {first.system_fingerprint, f"graphrag-ray:{published}"}
        status, _, body = http(url, "/v1/index")
        facts = json.loads(body)
        assert facts["version"] == published and facts["version_switches"] == 1


@pytest.mark.slow  # builds a new version
def test_a_pinned_version_stays(small_index, tmp_path):
    """`--version V`: the service answers from V even after a newer one is published."""
    from graphrag_ray.storage import IndexStore

    index = tmp_path / "index"
    shutil.copytree(small_index, index)
    pinned = IndexStore(str(index)).published_version()
    publish_again(index, 20_000, tmp_path / "input")
    service = local_service(ServeSpec(str(index), version=pinned,
                                      settings=ServeConfig(poll_s=0.1)))
    with serving(service) as url:
        time.sleep(0.5)
        status, headers, body = http(url, "/v1/index")
        assert json.loads(body)["version"] == pinned and json.loads(body)["pinned"]
        assert headers["x-graphrag-version"] == pinned


def test_no_secret_reaches_a_response_or_a_log_line(small_index, llm_server, monkeypatch,
                                                    caplog):
    llm_key, service_key = "sk-llm-key-never-shown-4f1c", "serve-key-never-shown-9a2e"
    monkeypatch.setenv("GRAPHRAG_API_KEY", llm_key)
    monkeypatch.setenv("GRAPHRAG_SERVE_API_KEYS", service_key)
    llm_server.switches.rate_5xx = 1.0  # every LLM call fails: errors carry what they carry
    bodies = []
    with caplog.at_level("DEBUG"), served(small_index, f"llm.api_base={llm_server.url}",
                                          *LLM) as url:
        auth = {"Authorization": f"Bearer {service_key}"}
        for path, body in (("/v1/index", None), ("/metrics", None),
                           ("/v1/query", {"question": "Who?", "method": "local"}),
                           ("/v1/chat/completions", {"model": "graphrag-basic", "messages": [
                               {"role": "user", "content": "Who?"}]}),
                           ("/v1/chat/completions", {"model": "graphrag-global", "stream": True,
                                                     "messages": [{"role": "user",
                                                                   "content": "Who?"}]})):
            bodies.append(http(url, path, body, headers=auth))
        bodies.append(http(url, "/v1/index", headers={"Authorization": "Bearer wrong"}))
    assert {status for status, _, _ in bodies} >= {200, 401}
    assert any(status == 502 for status, _, _ in bodies)  # the LLM's failure, told
    shown = "".join(str(headers) + body.decode() for _, headers, body in bodies)
    shown += caplog.text
    assert llm_key not in shown and service_key not in shown


def test_without_ray_serve_the_command_says_what_to_install(small_index, monkeypatch, capsys):
    import sys

    from graphrag_ray.cli import main

    monkeypatch.setitem(sys.modules, "fastapi", None)  # as if the extra were not installed
    assert main(["serve", "--index", str(small_index)]) == 2
    error = capsys.readouterr().err
    assert "pip install 'graphrag-ray[serve]'" in error and "Traceback" not in error
    assert len(error.strip().splitlines()) == 1
