"""What a kept merged shard remembers of its instances (`merge.ENTITY_STATE`,
`merge.RELATIONSHIP_STATE`), so that an update adding instances to it merges the touched
elements from their previous rows and the new instances alone (`added_merge`), and counts
the shard's figures without reading its instances.

Places are text unit rows (`merge.UNIT_ROW`): rows of the build's status table, which is in
corpus order (`seq`), so a row orders instances as their chunks do; the rows of a previous
version are renumbered into the update's as its `unit_rows` are (`unit_rows.rows_now`).
The state is written beside the structure (`graph/stage`), not in it: the driver reads the
structure of every shard and needs none of it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.arrow_rows import list_parts
from graphrag_ray.index.graph.merge import TYPE_COUNT, UNIT_ROW, MergeStats
from graphrag_ray.index.elements import Pieces
from graphrag_ray.index.graph.unit_rows import renumbered

# The relationships' state's schema metadata: the shard's self-loop instances, which the
# merge drops (no row remembers them) but counts.
SELF_LOOPS = b"self_loops"


def numbered(pieces: Pieces, unit_seqs: np.ndarray) -> Pieces:
    """`pieces` with each instance's text unit as a row (`UNIT_ROW`) of the status table
    whose `seq`s (ascending, one per chunk) are `unit_seqs`. An instance of a chunk the
    status table does not hold is a bug upstream, and fails here."""
    numbered_pieces = []
    for table in pieces:
        seqs = table.column("seq").to_numpy()
        rows = np.searchsorted(unit_seqs, seqs)
        found = rows < len(unit_seqs)
        if not (found.all() and np.array_equal(unit_seqs[rows], seqs)):
            raise ValueError("an instance's chunk is not one of the build's status rows")
        numbered_pieces.append(table.append_column(UNIT_ROW, pa.array(rows, pa.int32())))
    return tuple(numbered_pieces)


def renumbered_state(table: pa.Table, previous_rows_now: pa.Array) -> pa.Table:
    """A previous shard's structure with state, its places counted in the status table now
    (`previous_rows_now`: `unit_rows.rows_now`; -1 for a unit the update dropped, which only
    elements it merges again from all their instances list)."""
    table = renumbered(table, previous_rows_now, "description_units")
    if "type_counts" in table.column_names:
        offsets, counts = list_parts(table.column("type_counts"))
        table = table.set_column(
            table.column_names.index("type_counts"), "type_counts", pa.ListArray.from_arrays(
                offsets, pa.StructArray.from_arrays(
                    [counts.field("type"), counts.field("count"),
                     previous_rows_now.take(counts.field("unit"))], fields=list(TYPE_COUNT))))
    return table


def state_stats(entities: pa.Table, relationships: pa.Table, self_loops: int) -> MergeStats:
    """What `merge.merge_shard` counts over a shard's instances, from its merged rows'
    state (every entity record counts in its title's type counts, of a type or none)."""
    offsets, per_type = list_parts(entities.column("type_counts"))
    lengths = np.diff(offsets.to_numpy())
    n_records = pc.sum(per_type.field("count")).as_py() or 0
    said = pc.fill_null(pc.greater(pc.utf8_length(per_type.field("type")), 0), False)
    owners = np.repeat(np.arange(len(lengths)), lengths)
    typed = np.bincount(owners[said.to_numpy(zero_copy_only=False)], minlength=len(lengths))
    return MergeStats(
        entity_instances=n_records,
        relationship_instances=(pc.sum(relationships.column("instance_count")).as_py() or 0)
        + self_loops,
        self_loops_dropped=self_loops,
        entities_added_from_relationships=int(np.sum(lengths == 0)),
        type_conflicts=int(np.sum(typed > 1)))
