"""What every stage of a build shares (`BuildContext`), and how a stage is timed.

A stage is a plain function `stage(ctx, inputs...) -> outputs` in its folder (`chunks/`,
`extract/`, `graph/`, `reports/`, `write/`, `embed/`); `build.build_index` is the list of them.
The context carries what they all need: the config, the prompts, the LLM services (rate
budgets and cache), the version being staged with its work area, and the progress sinks;
stages report figures for the manifest into `ctx.figures` (`BuildFigures`).
"""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

import pyarrow as pa

from graphrag_ray.config import GraphRagConfig
from graphrag_ray.llm.client import LLMServices
from graphrag_ray.progress import ProgressBar
from graphrag_ray.resources import driver_rss_mb, shared_memory_mb
from graphrag_ray.storage import IndexVersion

log = logging.getLogger(__name__)

Progress = Callable[[str], None]


@dataclass
class BuildFigures:
    """What the stages measure for the manifest, each in its own field (None: the stage did
    not run, and the manifest has no such section)."""
    input_files: dict | None = None  # read, skipped (`build._report_inputs`)
    repeated_passages: dict | None = None  # extraction's pass over the corpus
    merge: dict | None = None  # the merge's stats
    resolution: dict | None = None  # entity resolution, when enabled
    lexical: dict | None = None  # the text units' lexical index (`write/lexical.py`)
    embeddings_note: str | None = None  # why `auto` embedded by hashing
    leiden: dict = field(default_factory=dict)  # per level (`graph/communities`)
    community_changes: dict | None = None  # an update: ids carried, similarity
    batch_phases: dict[str, dict] = field(default_factory=dict)  # llm.batch: per phase
    # Any other stage's figures, by stage name (a stage added to a pipeline, a plugin's):
    # written to the manifest's `stage_figures` as they are, with no field to add anywhere.
    stages: dict[str, dict] = field(default_factory=dict)

    def of_stage(self, name: str) -> dict:
        """The figures stage `name` reports (a dict it fills; JSON values)."""
        return self.stages.setdefault(name, {})


@dataclass
class BuildContext:
    config: GraphRagConfig
    prompts: dict[str, str]
    services: LLMServices
    staged: IndexVersion
    progress: Progress = log.info
    progress_bars: bool = False
    # Stage -> seconds, and the driver's memory after it (where the head node's memory goes:
    # RSS, its peak so far, and how much of the RSS is object store pages).
    timings: dict[str, float] = field(default_factory=dict)
    driver_rss_mb: dict[str, dict[str, int]] = field(default_factory=dict)
    # Sections of the manifest the stages fill in.
    figures: "BuildFigures" = field(default_factory=lambda: BuildFigures())
    # Stage -> when it started, seconds from the context's creation (the build's timeline).
    stage_starts: dict[str, float] = field(default_factory=dict)
    created: float = field(default_factory=time.perf_counter)

    @property
    def work_url(self) -> str:
        """Where documents, chunks and instances go from one stage's workers to the next's;
        removed before the version is published."""
        return self.staged.url_of("_work")

    @property
    def tokenizer(self) -> str:
        return self.config.tokenizer.encoding

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """`with ctx.stage("merge"): ...` times what it wraps."""
        self.progress(f"[{name}] ...")
        start = time.perf_counter()
        self.stage_starts[name] = round(start - self.created, 3)
        yield
        self.timings[name] = round(time.perf_counter() - start, 3)
        # What the stage freed goes back to the system: Arrow's allocator keeps freed pages
        # for reuse, which the driver's RSS then carries from stage to stage.
        pa.default_memory_pool().release_unused()
        current, peak = driver_rss_mb()
        self.driver_rss_mb[name] = {"after": current, "peak": peak,
                                    "object_store_pages": shared_memory_mb(),
                                    "arrow": pa.total_allocated_bytes() // 2 ** 20}
        self.progress(f"[{name}] done in {self.timings[name]:.2f}s")

    def bar(self, label: str, total: int, unit: str) -> ProgressBar | None:
        return ProgressBar(label, total, unit) if self.progress_bars else None
