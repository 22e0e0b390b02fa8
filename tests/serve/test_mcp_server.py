"""The MCP server (`serve/mcp_server.py`) through the official SDK's own client: in process,
over streamable HTTP (uvicorn in a thread, a port picked free) and over stdio (the SDK starts
`graphrag-ray mcp` as a subprocess). Every query method answers with the same text and
sources as `GraphIndex`; lookups, `index_info` and the reports as resources; a wrong key, a
tool error, a long answer, and a version published while a client is connected."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time

import anyio
import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra (pip install -e '.[mcp]')")

from mcp import Client  # noqa: E402

from graphrag_ray import GraphIndex  # noqa: E402
from graphrag_ray.config import ServeConfig  # noqa: E402
from graphrag_ray.query.methods import QUERY_METHODS  # noqa: E402
from graphrag_ray.serve import citations  # noqa: E402
from graphrag_ray.serve.http_api import Limits  # noqa: E402
from graphrag_ray.serve.mcp_server import Searches, build_server, http_app  # noqa: E402
from graphrag_ray.serve.runner import ServeSpec, open_live  # noqa: E402
from served_index import publish_again, running  # noqa: E402

QUESTION = "What does Scrooge think of Christmas?"


def _server(index, poll_s: float = 5.0):
    live = open_live(ServeSpec(index_url=str(index), settings=ServeConfig(poll_s=poll_s)))
    return live, build_server(Searches(live, 4, 60))


def _sources_of(index, method: str, question: str) -> dict:
    opened = GraphIndex.open(str(index))
    result = opened.search(method, question)
    return result.answer, citations.resolve(opened.table, opened.rows, opened.has_table,
                                            result.sources, 20, 4000)


def test_every_method_answers_as_graph_index_does_with_its_sources(small_index):
    live, server = _server(small_index)

    async def asked():
        async with Client(server) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert {f"{m}_search" for m in QUERY_METHODS} | {
                "get_entity", "get_community_report", "get_text_unit", "index_info"} <= names
            found = {}
            for method in QUERY_METHODS:
                found[method] = await client.call_tool(f"{method}_search",
                                                       {"question": QUESTION})
            return found
    try:
        found = anyio.run(asked)
    finally:
        live.close()
    for method, result in found.items():
        answer, sources = _sources_of(small_index, method, QUESTION)
        assert not result.is_error and result.content[0].text == answer, method
        given = result.structured_content
        assert given["method"] == method and given["answer"] == answer
        for kind, rows in sources.items():
            assert given["sources"][kind] == rows, (method, kind)
    cited = found["local"].structured_content["sources"]
    assert cited["entities"]["rows"] and all(row["id"] and row["title"]
                                             for row in cited["entities"]["rows"])


def test_lookups_info_resources_and_tool_errors(small_index):
    live, server = _server(small_index)
    opened = GraphIndex.open(str(small_index))
    entity = opened.table("entities", ["id", "title"]).to_pylist()[0]
    unit = opened.table("text_units", ["id"]).column("id")[0].as_py()
    community = opened.table("community_reports", ["community"]).column("community")[0].as_py()

    async def asked():
        async with Client(server) as client:
            return [await client.call_tool("get_entity", {"id": entity["id"]}),
                    await client.call_tool("get_text_unit", {"id": unit}),
                    await client.call_tool("get_community_report", {"id": str(community)}),
                    await client.call_tool("index_info", {}),
                    await client.call_tool("get_entity", {"id": "no-such-entity"}),
                    await client.call_tool("global_search", {"question": "  "}),
                    await client.call_tool("global_search", {"question": "x", "level": 99}),
                    await client.read_resource(f"graphrag://reports/{community}"),
                    await client.list_resource_templates()]
    try:
        (got_entity, got_unit, got_report, info, missing, empty, bad_level, resource,
         templates) = anyio.run(asked)
    finally:
        live.close()
    assert got_entity.structured_content["title"] == entity["title"]
    assert got_unit.structured_content["id"] == unit and got_unit.structured_content["text"]
    assert got_report.structured_content["community"] == community
    assert info.structured_content["version"] == opened.manifest.version
    assert set(info.structured_content["methods"]) == set(QUERY_METHODS)
    for failed, says in ((missing, "no row of entities"), (empty, "empty"),
                         (bad_level, "level")):
        assert failed.is_error and says in failed.content[0].text, failed.content[0].text
    assert f'"community": {community}' in resource.contents[0].text
    assert [t.uri_template for t in templates.resource_templates] == [
        "graphrag://reports/{community}"]


@contextlib.contextmanager
def _http(server, keys: frozenset[str]):
    # (The MCP app's lifespan runs its session manager.)
    with running(http_app(server, Limits(keys, 1_000_000, 4, 60), "127.0.0.1"),
                 lifespan="on") as url:
        yield f"{url}/mcp"


def _client(url: str, key: str | None):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(
        headers=headers, timeout=60)))


def test_http_takes_keys_and_answers_a_new_version_without_reconnecting(small_index, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(small_index, index)
    live, server = _server(index, poll_s=0.2)
    first = live.version

    async def session(url: str):
        async with _client(url, "right-key") as client:
            before = await client.call_tool("local_search", {"question": QUESTION})
            published = publish_again(index, 20_000, tmp_path / "again")
            deadline = time.monotonic() + 60
            while live.version != published:
                assert time.monotonic() < deadline, "the new version was never served"
                await anyio.sleep(0.1)
            after = await client.call_tool("local_search", {"question": QUESTION})
            long = await client.call_tool("global_search", {"question": QUESTION, "level": 0})
            return before, after, published, long

    async def refused(url: str, key: str | None):
        with pytest.raises(Exception) as caught:
            async with _client(url, key) as client:
                await client.list_tools()
        return caught.value

    try:
        with _http(server, frozenset({"right-key"})) as url:
            before, after, published, long = anyio.run(session, url)
            anyio.run(refused, url, "wrong-key")  # the SDK's client is refused ...
            anyio.run(refused, url, None)
            import httpx2  # ... with a 401 that says what is missing
            plain = httpx2.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                headers={"Authorization": "Bearer wrong-key"})
    finally:
        live.close()
    assert before.structured_content["version"] == first
    assert after.structured_content["version"] == published != first
    assert plain.status_code == 401 and "API key" in plain.json()["error"]
    text = long.content[0].text
    assert len(text) > 2000 and text == long.structured_content["answer"]  # whole, not cut


@pytest.mark.slow  # the SDK starts `graphrag-ray mcp` as a subprocess
def test_stdio_the_command_an_agent_starts(small_index):
    from mcp.client.stdio import StdioServerParameters

    command = StdioServerParameters(command=sys.executable, args=[
        "-m", "graphrag_ray", "mcp", "--index", str(small_index)], env=dict(os.environ))

    async def asked():
        async with Client(command) as client:
            tools = await client.list_tools()
            answer = await client.call_tool("basic_search", {"question": QUESTION})
            return tools, answer
    tools, answer = anyio.run(asked)
    expected, sources = _sources_of(small_index, "basic", QUESTION)
    assert len(tools.tools) == len(QUERY_METHODS) + 4
    assert answer.content[0].text == expected
    assert answer.structured_content["sources"]["text_units"] == sources["text_units"]
