"""MCP tool-call latency as an agent meets it: an offline index of Carol served by
`graphrag-ray mcp`'s HTTP app (uvicorn, this process), the SDK's own client calling each
query tool `--calls` times over streamable HTTP in one session; p50 / p95 per tool.

    python scripts/bench_mcp.py [--input tests/data/christmas_carol] [--calls 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTIONS = ["What does Scrooge think of Christmas?", "Who is Marley?",
             "How does Scrooge change?", "What happens at the Cratchits' dinner?"]


def _serve(index: str):
    import socket

    import uvicorn

    from graphrag_ray.config import ServeConfig
    from graphrag_ray.serve.mcp_server import Searches, build_server, http_app
    from graphrag_ray.serve.runner import ServeSpec, limits_of, open_live

    live = open_live(ServeSpec(index_url=index, settings=ServeConfig()))
    limits = limits_of(ServeConfig())
    app = http_app(build_server(Searches(live, limits.max_concurrent_requests,
                                         limits.request_timeout_s)), limits, "127.0.0.1")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return live, server, f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"


async def _measure(url: str, calls: int) -> dict[str, list[float]]:
    from mcp import Client

    from graphrag_ray.query.methods import QUERY_METHODS

    timings: dict[str, list[float]] = {}
    async with Client(url) as client:
        for method in QUERY_METHODS:
            tool = f"{method}_search"
            for i in range(calls):
                started = time.perf_counter()
                result = await client.call_tool(tool, {"question": QUESTIONS[i % len(QUESTIONS)]})
                timings.setdefault(tool, []).append(time.perf_counter() - started)
                assert not result.is_error, result.content[0].text
    return timings


def main() -> int:
    import anyio

    from graphrag_ray.config import load_config
    from graphrag_ray.index.build import build_index

    parser = argparse.ArgumentParser()
    parser.add_argument("--input", default=str(ROOT / "tests" / "data" / "christmas_carol"))
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as work:
        index = f"{work}/index"
        build_index(args.input, index, load_config(None, ["runtime.engine=local"]),
                    progress=lambda _: None)
        live, server, url = _serve(index)
        try:
            timings = anyio.run(_measure, url, args.calls)
        finally:
            server.should_exit = True
            live.close()
    print(f"{'tool':<16}{'calls':>6}{'p50 ms':>10}{'p95 ms':>10}")
    for tool, seconds in timings.items():
        ordered = sorted(seconds)
        p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
        print(f"{tool:<16}{len(seconds):>6}{statistics.median(seconds) * 1000:>10.1f}"
              f"{p95 * 1000:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
