"""Reports an update keeps: a community whose report inputs did not change keeps the report
it had, without a call.

What a report reads of its community is its entities (title, type, descriptions), the
relationships inside it, its entities' claims and, when it does not fit, its sub-communities'
reports. Each element's digest (`merge.description_digest`) covers the first three; a
community's digest is the digest of its elements' digests, so two communities with the same
digest hold the same elements with the same descriptions. Every version keeps its
communities' digests (`_community_digests`); an update keeps the report of each community
whose digest a previous community had, and whose sub-communities all keep theirs (their
reports may be in its context). An entity's degree changing outside the community does not
count: the report's text does not depend on it.

This does not depend on the response cache (which also returns a report whose prompt is
unchanged): an index adopted from another tool has none of our prompts in it, and an update
on another machine may have no cache.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray import schema
from graphrag_ray.arrow_rows import one_chunk, take_rows
from graphrag_ray.index.context import BuildContext
from graphrag_ray.index.graph.communities import Community, edges_by_community
from graphrag_ray.index.graph.merge import description_digest, majority_type, unique_texts
from graphrag_ray.index.elements import ordered_pair
from graphrag_ray.index.graph.stage import Graph
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.row_reader import RowReader

COMMUNITY_DIGESTS = "_community_digests"
COMMUNITY_DIGESTS_SCHEMA = pa.schema([("community", pa.int64()), ("digest", pa.string())])
# What is copied of a kept report (its id follows the community's, `report_id`).
KEPT_COLUMNS = ["community", "title", "summary", "full_content", "rank", "rating_explanation",
                "findings", "full_content_json", "period", "generation"]
# What a parent's context takes of a sub-community's report (`context.context_spec`).
CONTEXT_COLUMNS = ["community", "title", "summary", "rank", "findings"]


@dataclass
class KeptReports:
    """The previous reports an update keeps, as they were read: Arrow rows (`rows`,
    `KEPT_COLUMNS`), never turned into Python whole: every kept row as a dict and back into
    the reports table was O(kept reports) on the driver. Only a kept
    report that a changed parent's context takes is needed as one (`reports`)."""
    rows: pa.Table = field(default_factory=lambda: pa.table({c: [] for c in KEPT_COLUMNS}))
    row_of: dict[int, int] = field(default_factory=dict)  # community -> its row in `rows`
    # The communities whose rows the previous version's reports parts, linked into this
    # version, serve as they are (`link_kept_reports`); the table's other rows are written
    # in parts numbered from `first_part`.
    linked: set[int] = field(default_factory=set)
    first_part: int = 0
    # Rows read in part (`read_kept_reports`): per row, whether it holds every column, and
    # its number in `reader` (the previous reports table), which gives the rest.
    whole: np.ndarray | None = None
    stored: np.ndarray | None = None
    reader: RowReader | None = None

    def __len__(self) -> int:
        return len(self.row_of)

    def __contains__(self, community: int) -> bool:
        return community in self.row_of

    def reports(self, rows: list[int], communities: list[int]) -> list[dict]:
        """Rows `rows` as a parent's context takes the reports of `communities` (its
        `CONTEXT_COLUMNS`, `rating`, the community each now serves). Their full contents
        are not read: they were most of what a parent's context read back."""
        found = self.whole_rows(rows, CONTEXT_COLUMNS).to_pylist() if rows else []
        for report, community in zip(found, communities):
            report["rating"] = report["rank"]
            report["findings"] = report["findings"] or []
            report["community"] = community
        return found

    def whole_rows(self, rows, columns: list[str] = KEPT_COLUMNS) -> pa.Table:
        """Rows `rows` of `rows` with `columns` (every one by default), those read in part
        completed from the previous table at once."""
        rows = np.asarray(rows, dtype=np.int64)
        taken = self.rows.select(columns).take(pa.array(rows))
        if self.whole is None or self.whole[rows].all():
            return taken
        present, missing = np.flatnonzero(self.whole[rows]), np.flatnonzero(~self.whole[rows])
        read = self.reader.take(self.stored[rows[missing]], columns).cast(taken.schema)
        both = pa.concat_tables([taken.take(pa.array(present)), read])
        order = np.empty(len(rows), dtype=np.int64)
        order[np.concatenate([present, missing])] = np.arange(len(rows))
        return take_rows(both, pa.array(order))


def claim_digest(claim_id: str) -> int:
    """A claim's id is the hash of its content (`claims.covariates_table`) and its place in
    the corpus (`-<row>`); the content is what a report reads."""
    return description_digest(("claim", claim_id.rsplit("-", 1)[0]), [])


def community_digests(communities: list[Community], entity_digests: np.ndarray,
                      edge_digests: np.ndarray, endpoints: tuple[np.ndarray, np.ndarray],
                      claims_of: dict[int, list[int]] | None = None) -> pa.Table:
    """Each community's digest (COMMUNITY_DIGESTS_SCHEMA). `entity_digests`,
    `edge_digests`: by entity and relationship row; `endpoints`: each relationship's ends as
    entity rows; `claims_of`: entity row -> its claims' digests."""
    sources, targets = endpoints
    inside = edges_by_community(communities, sources, targets, len(entity_digests))
    claims_of = claims_of or {}
    ids, digests = [], []
    empty = np.empty(0, dtype=np.int64)
    for community in communities:
        parts = [entity_digests[community.members],
                 edge_digests[inside.get(community.id, empty)],
                 np.asarray([d for m in community.members.tolist()
                             for d in claims_of.get(m, [])], dtype=np.int64)
                 if claims_of else empty]
        values = np.sort(np.concatenate(parts).astype(np.int64))
        ids.append(community.id)
        digests.append(hashlib.blake2b(values.tobytes(), digest_size=16).hexdigest())
    return pa.table({"community": pa.array(ids, pa.int64()),
                     "digest": pa.array(digests, pa.string())}, schema=COMMUNITY_DIGESTS_SCHEMA)


def digests_of_tables(entities: pa.Table, relationships: pa.Table,
                      communities: pa.Table) -> pa.Table:
    """The community digests a build would have kept for these tables, each element having
    one description (as in an adopted index, whose carried extractions give each element the
    description it has). Claims are not in them: another tool's claims have other ids, so
    a community with claims writes its report again."""
    titles = entities.column("title").to_pylist()
    row_of = {title: row for row, title in enumerate(titles)}
    entity_digests = np.array([description_digest((title, majority_type([kind])),
                                                  unique_texts([text]))
                               for title, kind, text in zip(
                                   titles, entities.column("type").to_pylist(),
                                   entities.column("description").to_pylist())], np.int64)
    pairs = [ordered_pair(s, t) for s, t in zip(relationships.column("source").to_pylist(),
                                                  relationships.column("target").to_pylist())]
    edge_digests = np.array([description_digest(pair, unique_texts([text])) for pair, text in zip(
        pairs, relationships.column("description").to_pylist())], np.int64)
    known = [row for row, (s, t) in enumerate(pairs) if s in row_of and t in row_of]
    endpoints = (np.array([row_of[pairs[k][0]] for k in known], np.int64),
                 np.array([row_of[pairs[k][1]] for k in known], np.int64))
    entity_row = {entity_id: row for row, entity_id in enumerate(
        entities.column("id").to_pylist())}
    found = [Community(community, level, parent, np.array(sorted(
        entity_row[m] for m in members or [] if m in entity_row), np.int64))
        for community, level, parent, members in zip(
            communities.column("community").to_pylist(), communities.column("level").to_pylist(),
            communities.column("parent").to_pylist(), communities.column("entity_ids").to_pylist())]
    return community_digests(found, entity_digests, edge_digests[known], endpoints)


def kept_communities(communities: list[Community], digests: pa.Table,
                     previous: pa.Table) -> dict[int, int]:
    """Community -> the previous community whose report it keeps (the same digest, and
    every sub-community kept); a previous community of the same id is preferred."""
    before: dict[str, list[int]] = defaultdict(list)
    for community, digest in zip(previous.column("community").to_pylist(),
                                 previous.column("digest").to_pylist()):
        before[digest].append(community)
    digest_of = dict(zip(digests.column("community").to_pylist(),
                         digests.column("digest").to_pylist()))
    kept: dict[int, int] = {}
    for community in sorted(communities, key=lambda c: -c.level):  # children first
        matches = before.get(digest_of[community.id])
        if matches and all(child in kept for child in community.children):
            kept[community.id] = community.id if community.id in matches else min(matches)
    return kept


def read_kept_reports(version: IndexVersion, kept: dict[int, int],
                      whole: set[int] | None = None) -> KeptReports:
    """The reports the communities keep (`kept`: community -> the previous community whose
    report it keeps), from the previous version's reports, only the kept rows held, with
    their text, date and generation as they were. `whole`: the previous communities whose
    whole rows are read now (the others' hold their title and generation, and are completed
    if they are asked for: `KeptReports.whole_rows`); None: every kept row whole. Most of a
    1% update's kept reports are served by linked parts and taken by no context."""
    wanted = pa.array(sorted(set(kept.values())), pa.int64())
    if not len(wanted):
        return KeptReports()
    light = pa.concat_tables(version.iter_table(schema.COMMUNITY_REPORTS, _LIGHT_COLUMNS))
    found = np.flatnonzero(pc.is_in(light.column("community"), wanted).to_numpy(
        zero_copy_only=False))
    communities = light.column("community").take(pa.array(found)).to_pylist()
    full = np.asarray([whole is None or before in whole for before in communities], bool)
    reader = version.row_reader(schema.COMMUNITY_REPORTS)
    rows = reader.take(found[full], KEPT_COLUMNS)
    rest = light.take(pa.array(found[~full]))
    rows = pa.concat_tables([rows, pa.table({
        name: rest.column(name) if name in _LIGHT_COLUMNS else
        pa.nulls(rest.num_rows, rows.schema.field(name).type) for name in KEPT_COLUMNS}
        ).cast(rows.schema)])
    stored = np.concatenate([found[full], found[~full]])
    rows = one_chunk(rows)  # (taken from row by row as contexts ask)
    at = {before: row for row, before in enumerate(rows.column("community").to_pylist())}
    return KeptReports(rows, {community: at[before] for community, before in kept.items()
                              if before in at},
                       whole=np.arange(len(stored)) < int(full.sum()), stored=stored,
                       reader=reader)


# What is read of every kept report; the rest only where it is needed (`read_kept_reports`).
_LIGHT_COLUMNS = ["community", "title", "generation"]


def _whole_rows_needed(kept: dict[int, int], linked: set[int]) -> set[int]:
    """The previous communities whose kept reports are read whole at once: those not
    served by a linked part (their rows are written again). A context reads its kept
    sub-communities' reports when it takes them (`KeptReports.reports`)."""
    return {kept[c] for c in kept if c not in linked}


def keep_reports(ctx: BuildContext, graph: Graph, communities: list[Community],
                 previous: IndexVersion | None, every_text: bool = False) -> KeptReports:
    """This build's community digests, written to its version for the next update; and,
    in an update (`previous`: the version it updates), the reports it keeps (none when the
    previous version kept no digests).
    `every_text`: every kept report's text is wanted (an embeddings feed takes each report
    as it becomes final), not only those written again or taken by a context."""
    titles = {title: row for row, title in enumerate(graph.entities.column("title").to_pylist())}
    claims_of: dict[int, list[int]] = defaultdict(list)
    for claim_id, subject in zip(graph.claims.column("id").to_pylist(),
                                 graph.claims.column("subject_id").to_pylist()):
        if subject in titles:
            claims_of[titles[subject]].append(claim_digest(claim_id))
    digests = community_digests(
        communities, graph.entities.column("description_digest").to_numpy(),
        graph.relationships.column("description_digest").to_numpy(), graph.endpoints,
        claims_of)
    ctx.staged.write_table(COMMUNITY_DIGESTS, digests)
    if previous is None or not previous.has_table(COMMUNITY_DIGESTS):
        return KeptReports()
    kept = kept_communities(communities, digests, previous.read_table(COMMUNITY_DIGESTS))
    linked, first_part = link_kept_reports(previous, ctx.staged, communities, kept)
    reports = read_kept_reports(previous, kept, None if every_text else
                                _whole_rows_needed(kept, linked))
    reports.linked, reports.first_part = linked, first_part
    return reports


# A kept report's row as stored, to be served as it is: what the reports table says of its
# community besides the report (`schedule._reports_table`).
_PLACE_COLUMNS = ["id", "community", "level", "parent", "children", "size"]


def link_kept_reports(previous: IndexVersion, staged: IndexVersion,
                      communities: list[Community], kept: dict[int, int]
                      ) -> tuple[set[int], int]:
    """The previous version's reports parts linked into `staged` where most of their rows
    are still the table's (`IndexVersion.link_parts`): a community that keeps its own report
    (`kept`: community -> the previous community whose report it keeps) in the same place
    (level, parent, children, size). A small update keeps nearly every report:
    building their rows again and writing them is most of its reports' cost. Returns the communities
    the linked parts serve
    and the number the table's new parts start from (0 when nothing is linked)."""
    by_id = {c.id: c for c in communities}

    def serving(_: int, part: pa.Table) -> tuple[np.ndarray, None]:
        return np.fromiter((
            kept.get(community) == community and
            _in_place(by_id[community], level, parent, children, size)
            for community, level, parent, children, size in zip(
                *(part.column(name).to_pylist() for name in _PLACE_COLUMNS[1:]))),
            bool, part.num_rows), None

    linked, parts = staged.link_parts(previous, schema.COMMUNITY_REPORTS, _PLACE_COLUMNS,
                                      serving)
    served = {community for _, part, serves in linked
              for community in part.column("community").filter(pa.array(serves)).to_pylist()}
    return served, parts if linked else 0


def _in_place(community: Community, level: int, parent: int, children: list[int] | None,
              size: int) -> bool:
    return (community.level, community.parent, len(community.members)) == \
        (level, parent, size) and sorted(community.children) == sorted(children or [])
