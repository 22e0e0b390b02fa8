"""Throughput of the cluster-wide rate budget itself: how many acquire/release pairs per second
the named limiter actor serves to several actors with many threads (limits set far above it).

    python scripts/bench_limiter.py --actors 4 --threads 16 --seconds 10
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray  # noqa: E402

from graphrag_ray.config import LLMConfig  # noqa: E402
from graphrag_ray.distributed.shared_budget import cluster_rate_limiter  # noqa: E402
from graphrag_ray.llm.rate_limiter import Settlement  # noqa: E402


@ray.remote(num_cpus=0.1)
class Hammer:
    def __init__(self, limiter):
        self.limiter = limiter

    def run(self, threads: int, seconds: float) -> int:
        deadline = time.monotonic() + seconds

        def loop(_: int) -> int:
            count = 0
            while time.monotonic() < deadline:
                lease = self.limiter.acquire(500, 200, "bench")
                self.limiter.release(lease, Settlement(600, completion_tokens=100))
                count += 1
            return count

        with ThreadPoolExecutor(threads) as pool:
            return sum(pool.map(loop, range(threads)))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--actors", type=int, default=4)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    config = LLMConfig(requests_per_minute=10_000_000, tokens_per_minute=1e12,
                       max_concurrency=10_000)
    limiter = cluster_rate_limiter(config, "bench-limiter")
    hammers = [Hammer.remote(limiter) for _ in range(args.actors)]
    ray.get([h.__ray_ready__.remote() for h in hammers])
    started = time.perf_counter()
    total = sum(ray.get([h.run.remote(args.threads, args.seconds) for h in hammers]))
    elapsed = time.perf_counter() - started
    print(json.dumps({"actors": args.actors, "threads_per_actor": args.threads,
                      "acquire_release_pairs": total,
                      "pairs_per_second": round(total / elapsed),
                      "pairs_per_minute": round(60 * total / elapsed)}))
    limiter.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
