"""`graphrag-ray mcp`: an index as a Model Context Protocol server, for agents, on the
official `mcp` SDK: over stdio (the client starts it) or streamable HTTP (one server, many
clients).

Tools: one per query method (`global_search`, `local_search`, ...: the question and the
method's own options), answering with the text and, as structured content, its sources as
index rows (reports, entities, relationships, claims, text units, documents, each with its
id and title) and the version that answered; `get_entity`, `get_community_report` and
`get_text_unit` read one row by id; `index_info` says what the index holds. Community
reports are resources (`graphrag://reports/{community}`).

It answers from the same live index as `serve` (`live_index.LiveIndex`): a version published
while a client is connected answers that client's next call. Over HTTP it takes the same API
keys (GRAPHRAG_SERVE_API_KEYS, as bearer tokens; without keys it binds this machine only),
the same limit on searches at once and the same timeout.
"""

from __future__ import annotations

import hmac
import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any

import anyio

from graphrag_ray import schema
from graphrag_ray.errors import GraphRagError
from graphrag_ray.query.methods import QUERY_METHODS, QueryMethod
from graphrag_ray.serve import chat, citations
from graphrag_ray.serve.live_index import LiveIndex

REPORT_URI = "graphrag://reports/{community}"
# What a source row or a looked-up row shows of a long text (an agent reads the rest by id).
TEXT_CHARS = 4000
SOURCES_PER_KIND = 20

_LOOKUPS = {  # tool -> (table, key column, columns shown, what the id is)
    "get_entity": (schema.ENTITIES, "id", ["id", "human_readable_id", "title", "type",
                                           "description", "degree", "text_unit_ids"],
                   "an entity's id (as in a search's sources)"),
    "get_community_report": (schema.COMMUNITY_REPORTS, "community",
                             ["community", "level", "title", "summary", "full_content",
                              "rank"], "a community's number"),
    "get_text_unit": (schema.TEXT_UNITS, "id", ["id", "human_readable_id", "text",
                                                "document_id"], "a text unit's id"),
}


class Searches:
    """What the tools share: the live index, and how many searches may run at once and for
    how long (`serve.max_concurrent_requests`, `serve.request_timeout_s`)."""

    def __init__(self, live: LiveIndex, max_at_once: int, timeout_s: float):
        self.live = live
        self.timeout_s = timeout_s
        self.slots = anyio.CapacityLimiter(max_at_once)

    async def run(self, work: Callable[[Any], Any]) -> Any:
        """`work(index)` in a thread, on the version current when it starts (held to the
        end); a tool error when every slot is busy or the time is up."""
        from mcp.server.mcpserver.exceptions import ToolError

        try:
            self.slots.acquire_nowait()
        except anyio.WouldBlock:
            raise ToolError(f"{self.slots.total_tokens:g} searches are running already "
                            "(serve.max_concurrent_requests); retry shortly") from None
        try:
            with anyio.fail_after(self.timeout_s):
                return await anyio.to_thread.run_sync(self._leased, work,
                                                      abandon_on_cancel=True)
        except TimeoutError:
            raise ToolError(f"no answer within {self.timeout_s:g} s "
                            "(serve.request_timeout_s)") from None
        finally:
            self.slots.release()

    def _leased(self, work: Callable[[Any], Any]) -> Any:
        with self.live.lease() as index:
            return work(index)


def _answer(index, method: str, question: str, options: dict):
    """The search's text and, as structured content, its sources as rows."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent

    if not question.strip():
        raise ToolError("the question is empty")
    too_long = chat.question_too_long(question, index.config.query.max_question_chars)
    if too_long:
        raise ToolError(too_long)
    try:
        result = index.search(method, question, **options)
    except GraphRagError as exc:
        raise ToolError(str(exc)) from None
    missing = chat.no_answer(result)
    if missing:
        raise ToolError(missing)
    sources = citations.resolve(index.table, index.rows, index.has_table, result.sources,
                                SOURCES_PER_KIND, TEXT_CHARS)
    return CallToolResult(content=[TextContent(type="text", text=result.answer)],
                          structured_content={"method": method, "answer": result.answer,
                                              "version": index.manifest.version,
                                              "sources": sources, "notes": result.notes,
                                              "llm_calls": result.llm_calls})


def _query_tool(searches: Searches, method: QueryMethod) -> Callable:
    """An async tool taking the question and the method's own options (its signature is
    what the client sees as the tool's input schema)."""

    async def tool(question: str, **options):
        given = {name: value for name, value in options.items() if value is not None}
        return await searches.run(lambda index: _answer(index, method.name, question, given))

    from pydantic import Field

    parameters = [inspect.Parameter("question", inspect.Parameter.KEYWORD_ONLY, annotation=(
        Annotated[str, Field(description="the question, in the user's words")]))]
    parameters += [inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                     annotation=Annotated[option.kind | None,
                                                         Field(description=option.help)])
                   for option in method.options]
    tool.__signature__ = inspect.Signature(parameters)
    tool.__name__ = f"{method.name}_search"
    return tool


def _lookup(index, name: str, key: str | int) -> dict:
    from mcp.server.mcpserver.exceptions import ToolError

    table, column, columns, what = _LOOKUPS[name]
    if not index.has_table(table):
        raise ToolError(f"this index has no {table} table")
    wanted = key
    if column == "community":  # (a number; anything else names no community)
        wanted = int(key) if str(key).lstrip("-").isdigit() else None
    found = [] if wanted is None else citations.rows_by_key(
        index.table, index.rows, table, column, [wanted], columns, TEXT_CHARS)
    if not found:
        raise ToolError(f"no row of {table} has {column} {key!r} ({what})")
    return found[0]


def _index_info(index) -> dict:
    manifest = index.manifest
    return {"version": manifest.version, "levels": list(manifest.levels),
            "tables": sorted(manifest.tables),
            "methods": {name: method.help for name, method in QUERY_METHODS.items()},
            "embeddings": {"method": manifest.embeddings.method,
                           "model": manifest.embeddings.model}}


def build_server(searches: Searches):
    """The MCP server over `searches`' live index: its tools and resources."""
    from importlib.metadata import version

    from pydantic import Field
    try:
        from mcp.server.mcpserver import MCPServer
    except ImportError:
        raise GraphRagError("graphrag-ray mcp needs the mcp extra: "
                            "pip install -e \".[mcp]\"") from None

    server = MCPServer(name="graphrag-ray", version=version("graphrag-ray"),
                       log_level="WARNING", instructions=(
        "Questions over a GraphRAG index. global_search answers questions about the whole "
        "corpus (themes, trends) from community reports; local_search, drift_search and "
        "basic_search answer about named things from their passages; lazy_search spends "
        "the LLM at query time. Every answer lists its sources by id; get_entity, "
        "get_community_report and get_text_unit read them."))
    for method in QUERY_METHODS.values():
        server.add_tool(_query_tool(searches, method), name=f"{method.name}_search",
                        description=method.help, structured_output=False)
    for name, (_, _, _, what) in _LOOKUPS.items():
        async def lookup(id: str, _name: str = name) -> dict:  # noqa: A002 (the MCP name)
            return await searches.run(lambda index: _lookup(index, _name, id))
        lookup.__signature__ = inspect.Signature([inspect.Parameter(
            "id", inspect.Parameter.KEYWORD_ONLY,
            annotation=Annotated[str, Field(description=what)])],
            return_annotation=dict[str, Any])
        server.add_tool(lookup, name=name, description=f"one row by {what}",
                        structured_output=True)

    @server.tool(description="what the index holds: version, levels, tables, query methods")
    async def index_info() -> dict[str, Any]:
        return await searches.run(_index_info)

    @server.resource(REPORT_URI, mime_type="application/json",
                     description="a community's report, by the community's number")
    async def report(community: str) -> str:
        row = await searches.run(lambda index: _lookup(index, "get_community_report",
                                                       community))
        return json.dumps(row, default=str)

    return server


class BearerKeys:
    """ASGI middleware: every request carries one of `keys` as a bearer token, else 401."""

    def __init__(self, app, keys: frozenset[str]):
        self.app, self.keys = app, keys

    def _allowed(self, scope) -> bool:
        header = dict(scope.get("headers") or []).get(b"authorization", b"").decode()
        scheme, _, key = header.partition(" ")
        return scheme.lower() == "bearer" and any(
            hmac.compare_digest(key.strip().encode(), known.encode()) for known in self.keys)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not self.keys or self._allowed(scope):
            return await self.app(scope, receive, send)
        body = json.dumps({"error": "a valid API key is required (Authorization: Bearer "
                                    "KEY; GRAPHRAG_SERVE_API_KEYS)"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"),
                                (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body})


def http_app(server, limits, host: str):
    """The streamable HTTP application at /mcp, behind the API keys of `limits`."""
    return BearerKeys(server.streamable_http_app(
        host=host, max_request_body_size=limits.max_body_bytes), limits.api_keys)


def run_mcp(spec, transport: str, announce: Callable[[str], None]) -> None:
    """Serve `spec`'s index over `transport` (stdio or http) until stopped."""
    from graphrag_ray.serve.runner import bound_host, limits_of, open_live

    limits = limits_of(spec.settings)
    live = open_live(spec)
    try:
        server = build_server(Searches(live, limits.max_concurrent_requests,
                                       limits.request_timeout_s))
        if transport == "stdio":
            announce(f"MCP server on stdio, answering from version {live.version}")
            server.run("stdio")
            return
        import uvicorn

        host = bound_host(spec.settings.host, bool(limits.api_keys))
        app = http_app(server, limits, host)
        shown = f"[{host}]" if ":" in host else host
        announce(f"MCP server on http://{shown}:{spec.settings.port}/mcp (streamable HTTP), "
                 f"answering from version {live.version}; API keys "
                 f"{'required' if limits.api_keys else 'off'}; Ctrl-C stops")
        uvicorn.run(app, host=host, port=spec.settings.port, log_level="warning")
    finally:
        live.close()
