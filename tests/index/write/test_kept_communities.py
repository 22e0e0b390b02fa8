"""The communities rows an update keeps (`kept_communities`): a previous row is kept only
when its community is still in its place with the same title and members, none of them
touched; the kept rows are served by the previous part, the others written after it."""

from dataclasses import replace

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.index.write.kept_communities import (
    _COLUMNS, kept_rows, link_kept_communities)
from graphrag_ray.index.write.tables import communities_tables
from graphrag_ray.storage import IndexStore


def _previous_part(community_graph):
    communities, entities, relationships, endpoints, units = community_graph
    table = pa.concat_tables(communities_tables(communities, entities, relationships,
                                                endpoints, units))
    return communities, entities, table


def test_a_row_is_kept_only_while_its_community_and_members_are_as_they_were(
        community_graph):
    communities, entities, part = _previous_part(community_graph)
    ids = entities.column("id").combine_chunks()
    untouched = np.zeros(entities.num_rows, dtype=bool)
    by_id = {c.id: c for c in communities}
    assert kept_rows(part.select(_COLUMNS), by_id, ids, untouched).tolist() == [True] * 4

    touched = untouched.copy()
    touched[4] = True  # a member of community 1 only
    assert kept_rows(part.select(_COLUMNS), by_id, ids, touched).tolist() == \
        [True, False, True, True]

    moved = {**by_id,
             2: replace(by_id[2], members=np.array([0, 5])),  # same size, another member
             3: replace(by_id[3], parent=1),  # another place
             0: replace(by_id[0], loose=True)}  # another title
    assert kept_rows(part.select(_COLUMNS), moved, ids, untouched).tolist() == \
        [False, True, False, False]

    gone = {c: by_id[c] for c in (0, 1)}
    renamed = pa.array(["e0", "e1", "x2", "e3", "e4", "e5"])  # a member's id differs
    assert kept_rows(part.select(_COLUMNS), gone, renamed, untouched).tolist() == \
        [False, True, False, False]


def test_kept_rows_are_served_by_the_linked_part_and_the_rest_written_after(
        community_graph, tmp_path):
    communities, entities, table = _previous_part(community_graph)
    store = IndexStore(str(tmp_path / "index"))
    previous = store.stage()
    previous.write_table(schema.COMMUNITIES, table)
    staged = store.stage()
    touched = np.zeros(entities.num_rows, dtype=bool)
    touched[5] = True  # community 1's
    served, first_part = link_kept_communities(
        previous, staged, communities, entities.column("id").combine_chunks(), touched)
    assert served == {0, 2, 3} and first_part == 1
    assert staged.left_out(schema.COMMUNITIES)["part-00000.parquet"].to_pylist() == \
        table.column("id").to_pylist()[1:2]
    staged.write_table(schema.COMMUNITIES, table.slice(1, 1), first_part=first_part)
    assert staged.read_table(schema.COMMUNITIES).sort_by("community").to_pylist() == \
        table.sort_by("community").to_pylist()
