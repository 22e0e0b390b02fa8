"""Vector search past brute force: what the approximate index (Lance IVF, `vector_index.*`
defaults) costs and finds, against brute force, at a size where brute force hurts.

Vectors are the offline hashing embeddings (1024 floats) of passages cut from the podcast
corpus (or Carol when it is absent) at random offsets and lengths, so they cluster as text
does. Per size it prints: the sync that builds the index (seconds, driver peak RSS), recall@10
against brute force over 100 questions (passages not in the table, embedded the same way),
p50/p95 latency of both, brute force's matrix size, and an update of 1% of the rows (half
changed, half new) synced into the index: seconds, added, deleted, trained or not.

    python scripts/bench_vectors.py --rows 200000,1000000
    python scripts/bench_vectors.py --rows 200000 --s3    # the index on a local moto S3
    python scripts/bench_vectors.py --index /tmp/graphrag-scale/index-100000000
        # a built index's approximate tables against brute force over their Parquet tables
        # (computed part by part: the table is never held), questions embedded as it embeds
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from graphrag_ray.config import VectorIndexConfig  # noqa: E402
from graphrag_ray.llm.embeddings import hashing_embed  # noqa: E402
from graphrag_ray.query.vectors import VectorTable  # noqa: E402
from graphrag_ray.resources import peak_rss_mb  # noqa: E402
from graphrag_ray.storage.lance_vectors import (  # noqa: E402
    LanceVectors, lance_options, lance_uri, sync_vectors)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpora"
PART = 20_000


def corpus_words() -> list[str]:
    podcast = SHARED / "podcast" / "input"
    files = sorted(podcast.glob("*"))[:400] if podcast.is_dir() else [
        SHARED / "christmas_carol" / "book.txt"]
    return " ".join(p.read_text(encoding="utf-8", errors="ignore") for p in files).split()


def passages(words: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        start = rng.randrange(len(words) - 60)
        out.append(" ".join(words[start:start + rng.randrange(10, 60)]))
    return out


def embedded_parts(words: list[str], rows: int, seed: int, prefix: str = "u"):
    """The table as (id, vector) parts of PART rows, made once and kept on disk by the caller."""
    for start in range(0, rows, PART):
        count = min(PART, rows - start)
        vectors = hashing_embed(passages(words, count, seed + start), 1024).astype(np.float32)
        yield pa.table({"id": [f"{prefix}{i}" for i in range(start, start + count)],
                        "vector": pa.array(list(vectors), pa.list_(pa.float32()))})


def exact_nearest(parts, questions: np.ndarray, k: int = 10) -> list[tuple[set[str], float]]:
    """Brute force's top `k` ids per question and the k-th similarity, a part at a time
    (bounded memory)."""
    best: list[list[tuple[float, str]]] = [[] for _ in questions]
    for part in parts:
        search = VectorTable.from_table(part)
        for q, query in enumerate(questions):
            best[q] = sorted(best[q] + [(-s, i) for i, s in search.nearest(query, k)])[:k]
    return [({i for _, i in found}, -found[-1][0]) for found in best]


def search_figures(search: LanceVectors, questions: np.ndarray,
                   truths: list[tuple[set[str], float]]) -> dict:
    """recall@10 against brute force's (ids, 10th similarity) per question, and latency."""
    recall, tied, latency = [], [], []
    for query, (truth, kth) in zip(questions, truths):
        began = time.perf_counter()
        found = search.nearest(query, 10)
        latency.append(time.perf_counter() - began)
        recall.append(len({i for i, _ in found} & truth) / 10)
        # Many offline vectors tie: a hit as similar as the 10th true one is as good as the
        # one brute force listed (it breaks ties by id).
        tied.append(sum(score >= kth - 1e-5 for _, score in found) / 10)
    return {"recall_at_10": round(float(np.mean(recall)), 3),
            "recall_at_10_ties_counted": round(float(np.mean(tied)), 3),
            "p50_ms": round(1000 * float(np.median(latency)), 1),
            "p95_ms": round(1000 * float(np.percentile(latency, 95)), 1)}


def measure_index(index_url: str, settings: list[str], queries: int) -> None:
    """recall@10 and latency of each approximate table of a built index."""
    from graphrag_ray import GraphIndex

    index = GraphIndex.open(index_url)
    words = corpus_words()
    questions = np.asarray(index.embed(passages(words, queries, seed=31)), np.float32)
    for table, store in index.manifest.vector_stores.items():
        started = time.perf_counter()
        truths = exact_nearest(index.store.iter_table(table, ["id", "vector"]), questions)
        brute_s = time.perf_counter() - started
        row = {"index": index_url, "table": table, "rows": store["rows"],
               "sync": store, "brute_force_all_questions_s": round(brute_s, 1)}
        for setting in settings:
            nprobes, refine = (int(n) for n in setting.split("x"))
            vector_index = index.config.vector_index
            config = vector_index.model_copy(update={"lance": vector_index.lance.model_copy(
                update={"nprobes": nprobes, "refine_factor": refine})})
            search = LanceVectors.open(lance_uri(index_url, table), store["version"],
                                       lance_options(index_url), config)
            row[setting] = search_figures(search, questions, truths)
        row["peak_rss_mb"] = peak_rss_mb()
        print(json.dumps(row), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="200000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--search", default="40x3",
                        help="comma-separated NPROBESxREFINE: recall and latency at each")
    parser.add_argument("--s3", action="store_true", help="the index on a local moto server")
    parser.add_argument("--out", help="append each size's figures as a JSON line")
    parser.add_argument("--index", help="measure this built index's approximate tables")
    args = parser.parse_args()
    if args.index:
        measure_index(args.index, args.search.split(","), args.queries)
        return 0
    config = VectorIndexConfig()
    words = corpus_words()
    questions = hashing_embed(passages(words, args.queries, seed=999_999), 1024)
    work = Path(tempfile.mkdtemp(prefix="bench-vectors-"))
    server = None
    if args.s3:
        import os
        import socket

        from moto.server import ThreadedMotoServer

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        server.start()
        os.environ.update({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
                           "AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                           "AWS_DEFAULT_REGION": "us-east-1"})
        import s3fs

        s3fs.S3FileSystem().mkdir("bench")
    try:
        for rows in [int(r) for r in args.rows.split(",")]:
            folder = work / str(rows)
            folder.mkdir()
            started = time.perf_counter()
            files = []
            for number, part in enumerate(embedded_parts(words, rows, seed=rows)):
                path = folder / f"part-{number:05d}.parquet"
                pq.write_table(part, path)
                files.append(path)
            embed_s = time.perf_counter() - started

            def parts(paths=tuple(files)):
                return (pq.read_table(p) for p in paths)

            index_url = f"s3://bench/{rows}" if args.s3 else str(folder / "index")
            uri = f"{index_url}/vectors/t.lance"
            options = lance_options(index_url)
            sync = sync_vectors(uri, options, lambda skip: parts(), config)
            started = time.perf_counter()
            exact = VectorTable.from_table(pa.concat_tables(parts()))
            brute_load_s = time.perf_counter() - started
            truths, lat_brute = [], []
            for query in questions:
                started = time.perf_counter()
                found = exact.nearest(query, 10)
                lat_brute.append(time.perf_counter() - started)
                truths.append(({i for i, _ in found}, found[-1][1]))
            matrix_mb = exact.matrix.nbytes / 2 ** 20
            del exact
            probes = {}
            for setting in args.search.split(","):
                nprobes, refine = (int(n) for n in setting.split("x"))
                searched = config.model_copy(update={"lance": config.lance.model_copy(
                    update={"nprobes": nprobes, "refine_factor": refine})})
                probes[setting] = search_figures(
                    LanceVectors.open(uri, sync.version, options, searched), questions, truths)

            # 1% of the rows: half described anew (same ids, new vectors), half new ids.
            changed = max(1, rows // 200)
            fresh = hashing_embed(passages(words, 2 * changed, seed=7), 1024).astype(np.float32)
            update_file = folder / "update.parquet"
            first = pq.read_table(files[0])
            vectors = first.column("vector").to_pylist()
            for i in range(changed):
                vectors[i] = fresh[i].tolist()
            pq.write_table(pa.table({"id": first.column("id"), "vector": pa.array(
                vectors, pa.list_(pa.float32()))}), update_file)
            added_file = folder / "added.parquet"
            pq.write_table(pa.table({"id": [f"new{i}" for i in range(changed)],
                                     "vector": pa.array(list(fresh[changed:]),
                                                        pa.list_(pa.float32()))}), added_file)
            updated = (update_file, *files[1:], added_file)
            update = sync_vectors(uri, options, lambda skip: parts(updated), config)
            figures = {
                "rows": rows, "store": "s3 (moto)" if args.s3 else "local disk",
                "index_type": config.lance.index_type, "embed_s": round(embed_s, 1),
                "sync": sync.as_json("t"), "by_search": probes,
                "brute_p50_ms": round(1000 * float(np.median(lat_brute)), 1),
                "brute_load_s": round(brute_load_s, 1), "brute_matrix_mb": round(matrix_mb),
                "update_1pct": update.as_json("t"),
                "driver_peak_rss_mb": peak_rss_mb()}
            print(json.dumps(figures), flush=True)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as handle:
                    handle.write(json.dumps(figures) + "\n")
            shutil.rmtree(folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
