"""The update planner: what a build keeps of the version it updates, decided in one place,
level by level, and handed to each stage as its share.

    level        what changed is known from              kept, handed to
    files        the input's fingerprints (`diff`)       files carried, not read (carry_over)
    chunks       the carried files                       their chunks, status, instances;
                                                         extractions kept by text (extract)
    elements     the merge's description digests         summaries kept (kept_summaries),
                                                         rows and numbers kept (write, numbers)
    communities  the previous partition                  Leiden's warm start, ids kept
    reports      each community's digest                 reports kept, their parts linked
    tables       the carried files, kept elements        previous parts linked (write)
    vectors      the carried chunks, unchanged texts     vectors copied; the store's rows

A level's change follows from the level above it, so it is computed when the stage before
has produced that level (the graph, the communities): the planner holds the previous version
and the comparisons, the stages call it with what they made. A build is the plan of no
previous version (`UpdatePlan.fresh()`): every level keeps nothing, and each stage runs one
code path for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.config import GraphRagConfig
from graphrag_ray.index.carry_over import (
    CarriedReading, carry_embeddings, has_reading, plan_carry_over, previous_numbers)
from graphrag_ray.index.chunks.positions import file_numbers
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.elements import element_id
from graphrag_ray.index.extract.kept_extractions import KEPT_EXTRACTIONS, extraction_fingerprint
from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.graph.stage import Graph
from graphrag_ray.index.previous_version import (
    INPUT_FILES, PREVIOUS_PARTITION, PreviousTables, diff_inputs, input_fingerprints,
    settings_fingerprint)
from graphrag_ray.index.reports.kept_reports import KeptReports, keep_reports
from graphrag_ray.index.reports.kept_summaries import keep_summaries
from graphrag_ray.index.write.carried_tables import CarriedTables
from graphrag_ray.index.write.element_tables import CarriedElements, unchanged_elements
from graphrag_ray.storage import IndexVersion, Manifest


@dataclass
class UpdatePlan:
    """The version a build updates and what it compared (none: a build)."""
    previous: IndexVersion | None = None
    manifest: Manifest | None = None  # the previous version's
    diff: dict[str, list[str]] = field(default_factory=dict)
    # The same content settings and prompts: the unchanged files' reading is carried over,
    # the summaries of unchanged description lists kept.
    same_settings: bool = False
    # The same extraction settings: chunks whose text was extracted keep their extraction.
    same_extraction: bool = False
    # The input files' fingerprints compared (`input_fingerprints`), kept by the new version.
    fingerprints: pa.Table | None = None
    # The input as listed (`input.loader.list_input_files`): the build does not list it again.
    listing: tuple | None = None

    @classmethod
    def fresh(cls) -> "UpdatePlan":
        return cls()

    @classmethod
    def of(cls, previous: IndexVersion, manifest: Manifest, config: GraphRagConfig,
           prompts: dict[str, str], listing: tuple) -> "UpdatePlan":
        """The files level: the corpus listed now against the previous version's
        fingerprints, and whether the settings that decide what is reusable are the same
        (`manifest`: the previous version's, as the update read it)."""
        fs, root, files, _, _ = listing
        before = previous.read_table(INPUT_FILES) if previous.has_table(INPUT_FILES) else None
        now = input_fingerprints(fs, root, files, before)
        return cls(previous, manifest, diff_inputs(before, now),
                   manifest.settings_fingerprint == settings_fingerprint(config, prompts),
                   manifest.extraction_fingerprint == extraction_fingerprint(config, prompts),
                   now, listing)

    @property
    def is_update(self) -> bool:
        return self.previous is not None

    @property
    def changes_anything(self) -> bool:
        return bool(self.diff["added"] or self.diff["changed"] or self.diff["deleted"]) \
            or not self.same_settings

    @cached_property
    def tables(self) -> PreviousTables | None:
        """The previous tables the stages after the merge read (numbers, layout), some read
        ahead while the merge runs (`read_ahead`)."""
        return PreviousTables(self.previous) if self.previous is not None else None

    # -- files and chunks -------------------------------------------------------------

    @property
    def carries_reading(self) -> bool:
        return self.is_update and self.same_settings

    def file_numbers(self, relative: list[str]) -> np.ndarray:
        """Each file's number: the previous version's where it had one (its rows then keep
        their positions, and their stored parts are carried as they are)."""
        return file_numbers(relative, previous_numbers(self.previous))

    def files_to_read(self, relative: list[str], estimates: list[int]) -> list[int]:
        """The estimated chunks of the files read and extracted (the others are carried)."""
        if not self.carries_reading:
            return estimates
        unchanged = set(self.diff["unchanged"])
        return [n for path, n in zip(relative, estimates) if path not in unchanged]

    def carried_reading(self, files: list[str], numbers: np.ndarray, input_root: str
                        ) -> CarriedReading | None:
        """The unchanged files whose reading (documents, chunks, instances) is carried."""
        if not self.carries_reading or not has_reading(self.previous):
            return None
        return plan_carry_over(self.previous, self.diff["unchanged"], files, numbers,
                               input_root)

    @property
    def kept_extractions_url(self) -> str | None:
        """Where the previous version's extractions by chunk text are (same settings)."""
        return self.previous.url_of(KEPT_EXTRACTIONS) \
            if self.is_update and self.same_extraction else None

    # -- elements, communities, reports --------------------------------------------

    def read_ahead(self, wanted: dict[str, list[str]]) -> None:
        if self.tables is not None:
            self.tables.read_ahead(wanted)

    def kept_summaries(self, ctx: BuildContext, graph: Graph) -> np.ndarray:
        """Element keys whose summary is the previous version's (the same settings)."""
        return keep_summaries(ctx, graph, self.previous if self.same_settings else None)

    def partition(self) -> tuple[pa.Table | None, set[str] | None]:
        """Leiden's start: the previous communities (their members by this build's ids) and,
        when that partition is kept rather than refined (an adopted index and its updates),
        the previous entities."""
        if self.previous is None:
            return None, None
        communities = self.tables.read_table(schema.COMMUNITIES, PREVIOUS_PARTITION)
        ids = self._our_ids
        if ids is not None:
            members = [[ids.get(m, m) for m in row] for row in
                       communities.column("entity_ids").to_pylist()]
            communities = communities.set_column(
                communities.column_names.index("entity_ids"), "entity_ids",
                pa.array(members, pa.list_(pa.string())))
        return communities, self._entity_ids() if self.partition_kept_from else None

    @property
    def partition_kept_from(self) -> str | None:
        """Whose partition the previous communities are when it is kept rather than refined
        (an adopted index and its updates, `graph/continuity`); None: our Leiden's."""
        return self.manifest.communities_kept_from if self.manifest else None

    def communities_rows_from(self) -> IndexVersion | None:
        """The version whose communities rows may be linked (ours: an adopted one's rows
        are its tool's)."""
        return self.previous if self.manifest and self.manifest.adopted_from is None else None

    def kept_reports(self, ctx: BuildContext, graph: Graph, communities: list[Community],
                     every_text: bool) -> KeptReports:
        """The reports of communities that read what a previous community read."""
        return keep_reports(ctx, graph, communities, self.previous, every_text=every_text)

    def _entity_ids(self) -> set[str]:
        ids = self._our_ids
        if ids is not None:
            return set(ids.values())
        return set(self.previous.read_table("entities", ["id"]).column("id").to_pylist())

    @cached_property
    def _our_ids(self) -> dict[str, str] | None:
        """Its entity id -> ours, for a version adopted from another tool (an entity's id
        here is its title's); None: ours."""
        if self.manifest.adopted_from is None:
            return None
        entities = self.previous.read_table("entities", ["id", "title"])
        return {old: element_id("entity", title) for old, title in zip(
            entities.column("id").to_pylist(), entities.column("title").to_pylist())}

    # -- tables and vectors ----------------------------------------------------------

    def carried_tables(self, carried: CarriedReading | None, numbers: np.ndarray
                       ) -> CarriedTables | None:
        return CarriedTables.of(carried, numbers)

    def unchanged_elements(self, graph: Graph, kept_summaries: np.ndarray | None
                           ) -> CarriedElements | None:
        return unchanged_elements(graph, kept_summaries, self.previous)

    def carried_vectors(self, carried: CarriedReading | None, units: pa.ChunkedArray | None,
                        staged: IndexVersion, queued: bool, runtime
                        ) -> tuple[dict[str, int], dict[str, pa.ChunkedArray]]:
        """Per embeddings table, the rows copied and their ids: the carried chunks' and
        (tables embedded once written) the entities' and reports' of unchanged texts."""
        if carried is None:
            return {}, {}
        return carry_embeddings(carried, units, staged, queued, runtime)

    @property
    def vector_stores(self) -> dict[str, dict] | None:
        """The previous version's rows in each vector store, which the new one updates."""
        return self.manifest.vector_stores if self.manifest else None

    def summary(self, extraction: pa.Table, community_changes: dict | None,
                reports_kept: int) -> dict | None:
        """The manifest's `update` section: per level, what was kept and what changed."""
        if not self.is_update:
            return None
        reused = int(sum(extraction.column("reused").to_pylist()))
        return {"previous_version": self.previous.version,
                "documents": {k: len(v) for k, v in self.diff.items()},
                "changed_files": {k: v[:50] for k, v in self.diff.items()
                                  if k != "unchanged" and v},
                "chunks": {"reused": reused, "extracted": extraction.num_rows - reused},
                "communities": community_changes, "reports_kept": reports_kept}
