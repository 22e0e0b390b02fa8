"""LazyGraphRAG's search for relevant passages: iterative deepening through the community
hierarchy, best first, within a budget of relevance tests.

Text units are ranked by similarity to each sub-question; a community ranks by the best of the
units it holds that are still untested. Each round, every sub-question still searching puts the
best untested units of its best communities to the test (`test` judges them, however it
does); a community none of whose units this round was relevant stops being explored, one
with a relevant unit opens its sub-communities (or, a leaf, stays for its next units). The
search ends when the budget is spent or no community is left to explore. Plain Python over
the communities table: the LLM, the cache and the fan-out live in `test`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# The community that holds the units no community of level 0 holds (passages whose names
# met no one): a root like the others, so no passage is out of the search's reach.
OUTSIDE = -1


@dataclass
class CommunityTree:
    units: dict[int, np.ndarray]  # community -> rows of its text units
    children: dict[int, list[int]]
    roots: list[int]
    levels: dict[int, int]

    def opened(self, community: int) -> list[int]:
        """The sub-communities that split `community`: a child that only carries it down a
        level (the same units) is looked through to its own children."""
        kids = self.children.get(community, [])
        while len(kids) == 1 and len(self.units[kids[0]]) == len(self.units[community]):
            kids = self.children.get(kids[0], [])
        return kids


def community_tree(communities: pa.Table | Iterable[pa.Table],
                   unit_ids: list[str]) -> CommunityTree:
    """The hierarchy over the rows of `unit_ids` (communities read with community, level,
    parent, children, text_unit_ids; whole, or piece by piece). Units no level-0 community
    holds form `OUTSIDE`. Each community's units are found in Arrow and numpy: as Python
    lists they were most of a lazy question process's memory."""
    value_set = pa.array(unit_ids, pa.string())
    units, children, levels, roots = {}, {}, {}, []
    held = np.zeros(len(unit_ids), dtype=bool)
    for piece in [communities] if isinstance(communities, pa.Table) else communities:
        lists = piece.column("text_unit_ids").combine_chunks()
        rows = pc.index_in(pc.list_flatten(lists), value_set=value_set)
        owners = pc.list_parent_indices(lists).filter(pc.is_valid(rows)).to_numpy()
        rows = rows.drop_null().to_numpy().astype(np.int64)
        # Each community's rows, sorted and each once.
        keys = np.unique(owners.astype(np.int64) * max(1, len(unit_ids)) + rows)
        owners, rows = keys // max(1, len(unit_ids)), keys % max(1, len(unit_ids))
        bounds = np.searchsorted(owners, np.arange(piece.num_rows + 1))
        for k, (number, level, kids) in enumerate(zip(
                piece.column("community").to_pylist(), piece.column("level").to_pylist(),
                piece.column("children").to_pylist())):
            units[number] = rows[bounds[k]:bounds[k + 1]]
            children[number] = list(kids or [])
            levels[number] = level
            if level == 0:
                roots.append(number)
                held[units[number]] = True
    for number in list(children):
        children[number] = [c for c in children[number] if c in units]
    outside = np.flatnonzero(~held)
    if len(outside):
        units[OUTSIDE], children[OUTSIDE], levels[OUTSIDE] = outside, [], 0
        roots.append(OUTSIDE)
    return CommunityTree(units, children, sorted(roots), levels)


@dataclass(frozen=True)
class Probe:
    """One relevance test: unit `unit` (a row) for sub-question `question`, reached through
    `community`."""
    question: int
    unit: int
    community: int


@dataclass
class Deepening:
    probes: list[Probe] = field(default_factory=list)
    verdicts: list[bool] = field(default_factory=list)
    rounds: int = 0
    communities_tested: int = 0
    communities_pruned: int = 0
    communities_opened: int = 0
    deepest_level: int = 0

    @property
    def relevant(self) -> list[Probe]:
        return [p for p, ok in zip(self.probes, self.verdicts) if ok]


def deepen(tree: CommunityTree, similarities: list[np.ndarray], budget: int, round_size: int,
           units_per_community: int, test: Callable[[list[Probe]], list[bool]]) -> Deepening:
    """Search every sub-question (`similarities[q]`: each unit row's similarity to it) within
    `budget` tests in all; at most `round_size` tests per round, shared by the sub-questions
    still searching. `test` returns one verdict per probe, in order."""
    outcome = Deepening()
    frontiers = [list(tree.roots) for _ in similarities]
    tested = [np.zeros(len(s), dtype=bool) for s in similarities]
    explored: set[tuple[int, int]] = set()
    left = budget
    while left > 0:
        searching = [q for q, frontier in enumerate(frontiers) if frontier]
        if not searching:
            break
        share = max(1, min(left, round_size) // len(searching))
        probes: list[Probe] = []
        for q in searching:
            room = min(share, left - len(probes))
            if room <= 0:
                break
            probes += _next_probes(tree, frontiers[q], similarities[q], tested[q], room,
                                   units_per_community, q)
        if not probes:
            break
        verdicts = test(probes)
        outcome.rounds += 1
        outcome.probes += probes
        outcome.verdicts += list(verdicts)
        left -= len(probes)
        relevant_in: dict[tuple[int, int], bool] = {}
        for probe, ok in zip(probes, verdicts):
            tested[probe.question][probe.unit] = True
            key = (probe.question, probe.community)
            relevant_in[key] = relevant_in.get(key, False) or bool(ok)
        for (q, community), ok in relevant_in.items():
            if (q, community) not in explored:
                explored.add((q, community))
                outcome.communities_tested += 1
            frontier = frontiers[q]
            frontier.remove(community)
            if not ok:
                outcome.communities_pruned += 1
                continue
            opened = tree.opened(community)
            if opened:
                outcome.communities_opened += 1
                frontier += [c for c in opened if c not in frontier]
                outcome.deepest_level = max(outcome.deepest_level,
                                            max(tree.levels[c] for c in opened))
            else:
                frontier.append(community)  # a relevant leaf: its next units next round
        for q in searching:  # communities with nothing left to test leave the search
            frontiers[q][:] = [c for c in frontiers[q] if not tested[q][tree.units[c]].all()]
    return outcome


def _next_probes(tree: CommunityTree, frontier: list[int], similarity: np.ndarray,
                 tested: np.ndarray, room: int, per_community: int, q: int) -> list[Probe]:
    """The best untested units of the best communities of `frontier` (best: the highest
    similarity among a community's untested units), `per_community` each, `room` in all; a
    unit is tested once per sub-question even where communities overlap."""
    ranked = []
    for community in frontier:
        rows = tree.units[community]
        rows = rows[~tested[rows]]
        if len(rows):
            order = rows[np.lexsort((rows, -similarity[rows]))]
            ranked.append((-float(similarity[order[0]]), community, order))
    ranked.sort(key=lambda item: (item[0], item[1]))
    probes, taken = [], set()
    for _, community, order in ranked:
        picked = [int(row) for row in order if int(row) not in taken][:per_community]
        picked = picked[:room - len(probes)]
        taken.update(picked)
        probes += [Probe(q, row, community) for row in picked]
        if len(probes) >= room:
            break
    return probes
