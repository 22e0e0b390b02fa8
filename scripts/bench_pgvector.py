"""pgvector measured: (1) recall@10 of its HNSW index against exact search at `--vectors`
unit vectors (clustered, seeded; 384 dimensions, the local model's), with the time to load
them and build the index and the query latency; (2) with `--input`, an offline build of that
corpus with each store (`vector_index.ann_min_rows=1`, so every table gets one): build wall
time and query latency per vector-reading method, pgvector beside Lance. The server is the
tests' own (`graphrag_testkit.postgres_server`: pgserver's PostgreSQL 16 and pgvector).

    python scripts/bench_pgvector.py --vectors 100000 [--input ../shared/corpora/podcast/input]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the test kit

from graphrag_ray.config import VectorIndexConfig, load_config  # noqa: E402
from graphrag_ray.storage.pgvector_store import PgvectorStore  # noqa: E402
from graphrag_testkit.postgres_server import postgres_server  # noqa: E402

QUESTIONS = ["What are the main themes?", "Who are the guests?", "What is said about AI?",
             "How do the speakers describe their work?"]


def _vectors(count: int, dimensions: int = 384, seed: int = 0) -> np.ndarray:
    generator = np.random.default_rng(seed)
    centres = generator.normal(size=(max(1, count // 100), dimensions))
    rows = centres[generator.integers(0, len(centres), count)] + \
        0.6 * generator.normal(size=(count, dimensions))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _sentences(folder: str, count: int) -> list[str]:
    """The corpus's sentences and lines (at least 20 characters), in file order, distinct
    (symbolic links followed: a folder of links gathers corpora); past those, pairs of
    consecutive sentences of a file (passages a chunker could cut) up to `count`."""
    pieces: list[list[str]] = []
    for root, _, files in sorted(os.walk(folder, followlinks=True)):
        for name in sorted(files):
            text = Path(root, name).read_text(errors="replace")
            pieces.append([" ".join(p.split()) for p in re.split(r"(?<=[.!?])\s+|\n+", text)
                           if len(" ".join(p.split())) >= 20])
    found = dict.fromkeys(piece for file in pieces for piece in file)
    for file in pieces:
        for first, second in zip(file, file[1:]):
            if len(found) >= count:
                break
            found.setdefault(f"{first} {second}")
    return list(found)[:count]


def _embedded(texts: list[str]) -> np.ndarray:
    from graphrag_ray.config import EmbeddingsConfig
    from graphrag_ray.llm.embedding_methods import Embedder

    return Embedder(EmbeddingsConfig(method="local")).embed(texts).astype(np.float32)


def recall(url: str, count: int, texts: str | None, ef_searches: list[int],
           queries: int = 200, k: int = 10) -> list[dict]:
    """Recall@k of the store against exact search, at each `ef_searches`: the vectors of a
    corpus's sentences (the local model; the last `queries` sentences are the questions),
    or, without `texts`, synthetic clustered ones."""
    if texts:
        everything = _embedded(_sentences(texts, count + queries))
        vectors, probe = everything[:-queries], everything[-queries:]
    else:
        vectors, probe = _vectors(count), _vectors(queries, seed=1)
    count = len(vectors)
    ids = np.array([f"v{i}" for i in range(count)])

    def parts(_skip):
        for start in range(0, count, 10_000):
            yield pa.table({"id": ids[start:start + 10_000].tolist(),
                            "vector": list(vectors[start:start + 10_000])})
    config = VectorIndexConfig(store="pgvector", pgvector={"url": url, "hnsw_min_rows": 1})
    store = PgvectorStore()
    started = time.perf_counter()
    entry = store.sync("bench://recall", {}, "vectors", parts, config, None, None)
    load_s = time.perf_counter() - started
    search = store.open("bench://recall", {}, "vectors", entry, config)
    exact = [set(ids[np.argsort(-(vectors @ query))[:k]]) for query in probe]
    results = []
    for ef_search in ef_searches:
        search.ef_search = ef_search
        hits, seconds = 0, []
        for query, truth in zip(probe, exact):
            started = time.perf_counter()
            found = {row_id for row_id, _ in search.nearest(query, k)}
            seconds.append(time.perf_counter() - started)
            hits += len(found & truth)
        results.append({"vectors": count, "source": texts or "synthetic",
                        "ef_search": ef_search, "load_and_index_s": round(load_s, 1),
                        "recall_at_10": round(hits / (len(probe) * k), 4),
                        "query_p50_ms": round(1000 * statistics.median(seconds), 2),
                        "query_p95_ms": round(1000 * sorted(seconds)[
                            int(0.95 * (len(seconds) - 1))], 2)})
    search.close()
    return results


def stores(url: str, corpus: str) -> dict:
    from graphrag_ray import GraphIndex
    from graphrag_ray.index.build import build_index

    figures = {}
    for store in ("lance", "pgvector"):
        with tempfile.TemporaryDirectory(prefix=f"bench-{store}-") as work:
            config = load_config(None, ["vector_index.ann_min_rows=1", f"vector_index.store={store}",
                                        f"vector_index.pgvector.url={url}"])
            started = time.perf_counter()
            manifest = build_index(corpus, f"{work}/index", config, progress=lambda _: None)
            wall = time.perf_counter() - started
            opened = GraphIndex.open(f"{work}/index")
            latency = {}
            for method in ("local", "basic"):
                opened.search(method, QUESTIONS[0])  # (warm)
                times = []
                for question in QUESTIONS * 5:
                    begun = time.perf_counter()
                    opened.search(method, question)
                    times.append(time.perf_counter() - begun)
                latency[method] = round(1000 * statistics.median(times), 1)
            figures[store] = {"build_s": round(wall, 1),
                              "vector_index_s": manifest.timings_s.get("vector_index"),
                              "rows": {t: e.get("rows") for t, e in manifest.vector_stores.items()},
                              "query_p50_ms": latency}
    return figures


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--input", help="a corpus to build with each store")
    parser.add_argument("--texts", help="a corpus whose sentences are the vectors (local "
                        "model); default: synthetic")
    parser.add_argument("--ef-search", type=int, nargs="+", default=[100])
    args = parser.parse_args()
    with postgres_server() as url:
        for figures in recall(url, args.vectors, args.texts, args.ef_search):
            print(figures, flush=True)
        if args.input:
            for store, figures in stores(url, args.input).items():
                print(store, figures, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
