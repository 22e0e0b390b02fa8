"""An update's communities table: a community none of whose members the update touched holds
the same entities, relationships and text units as before, so where its row's other cells
(id, level, parent, children, title, size) are also those of the previous version's row, the
row is served by the previous version's part, linked (`copy_whole`), and keeps its `period`
(the day its row was made); the other communities are written as new parts after those, and
their old rows left out (`IndexVersion.left_out`). A 1% add to a 100M-token index changes a
few % of the communities, spread over every part; their lists (entities, relationships,
text units: 338 MB of Parquet) were gathered and written again whole."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from graphrag_ray import schema
from graphrag_ray.index.graph.communities import Community
from graphrag_ray.index.write.element_tables import LEFT_OUT_SHARE
from graphrag_ray.storage import IndexVersion
from graphrag_ray.storage.atomic import copy_whole
from graphrag_ray.storage.parquet_io import read_parquet

# The cells compared with the previous row (the lists follow from untouched members).
COMPARED = ["id", "human_readable_id", "community", "level", "parent", "children", "title",
            "size"]


def carried_communities(previous: IndexVersion, staged: IndexVersion,
                        communities: list[Community], cells: pa.Table,
                        touched: np.ndarray) -> tuple[set[int], int]:
    """Links the previous parts of the communities table that serve most of their rows
    (see the module's docstring); `cells`: the `COMPARED` cells of every community now, in
    `communities`' order; `touched`: per entity row. Returns the communities the linked
    parts serve and the number the new parts start from."""
    untouched = [not touched[c.members].any() for c in communities]
    expected = {row["community"]: row for row, keep in zip(cells.to_pylist(), untouched)
                if keep}
    before = previous.left_out(schema.COMMUNITIES)
    served: set[int] = set()
    left: dict[str, pa.Array] = {}
    files = previous.table_files(schema.COMMUNITIES)
    for number, path in enumerate(files):
        name = path.rsplit("/", 1)[-1]
        rows = read_parquet(previous.fs, path, COMPARED)
        gone = set(before[name].to_pylist()) if name in before else set()
        keep = np.fromiter((row["id"] not in gone and expected.get(row["community"]) == row
                            for row in rows.to_pylist()), bool, rows.num_rows)
        if not keep.any() or (~keep).sum() > LEFT_OUT_SHARE * len(keep):
            continue  # (its communities are written again)
        target = staged.part_path(schema.COMMUNITIES, number)
        copy_whole(previous.fs, path, target)
        served.update(rows.column("community").filter(pa.array(keep)).to_pylist())
        if not keep.all():
            left[target.rsplit("/", 1)[-1]] = rows.column("id").filter(
                pa.array(~keep)).combine_chunks()
    staged.write_left_out(schema.COMMUNITIES, left)
    return served, len(files)
