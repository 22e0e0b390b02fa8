"""Where a small build's seconds go on the Ray engine: Ray's start-up against ours.

Times, in one process: `import ray`, `ray.init` (a local instance), a first and a second
Ray Data pipeline of trivial functions shaped like our extraction (a task stage, a 2-actor
pool, a task stage), then three offline builds of A Christmas Carol on the same instance
(the first pays the worker processes' start-up and imports, the next ones reuse them).

    python scripts/bench_ray_startup.py
"""

from __future__ import annotations

import json
import logging
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _identity(batch):
    return batch


class _Identity:
    def __call__(self, batch):
        return batch


def _trivial_pipeline() -> float:
    import pyarrow as pa
    import ray
    from ray.data import ActorPoolStrategy, TaskPoolStrategy

    started = time.perf_counter()
    dataset = ray.data.from_arrow([pa.table({"x": list(range(10))}) for _ in range(4)])
    dataset = dataset.map_batches(_identity, batch_format="pyarrow", num_cpus=0,
                                  compute=TaskPoolStrategy(size=2))
    # Half a CPU each: two actors never hold every CPU the task stages need.
    dataset = dataset.map_batches(_Identity, compute=ActorPoolStrategy(size=2),
                                  batch_format="pyarrow", num_cpus=0.5)
    dataset = dataset.map_batches(_identity, batch_format="pyarrow", num_cpus=0,
                                  compute=TaskPoolStrategy(size=2))
    sum(block.num_rows for block in dataset.iter_batches(batch_size=None,
                                                         batch_format="pyarrow"))
    return round(time.perf_counter() - started, 2)


def main() -> int:
    figures = {}
    started = time.perf_counter()
    import ray

    figures["import_ray_s"] = round(time.perf_counter() - started, 2)
    started = time.perf_counter()
    ray.init(address="local", include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING)
    figures["ray_init_s"] = round(time.perf_counter() - started, 2)
    ray.data.DataContext.get_current().enable_progress_bars = False
    figures["trivial_pipeline_s"] = [_trivial_pipeline(), _trivial_pipeline()]

    from graphrag_ray.config import load_config
    from graphrag_ray.index.build import build_index

    config = load_config(None, ["runtime.engine=ray"])
    builds = []
    for _ in range(3):
        output = tempfile.mkdtemp(prefix="bench-ray-startup-")
        started = time.perf_counter()
        manifest = build_index(str(ROOT / "tests" / "data" / "christmas_carol"), output, config,
                               progress=lambda _: None)
        builds.append({"wall_s": round(time.perf_counter() - started, 2),
                       **{k: manifest.timings_s[k] for k in ("extract", "merge",
                                                                "summaries_and_reports")}})
    figures["offline_carol_builds"] = builds
    ray.shutdown()
    print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
