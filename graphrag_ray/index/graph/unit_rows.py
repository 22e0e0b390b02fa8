"""Elements' text units as numbers while the driver holds the graph.

A merged entity or relationship lists the text units it was found in (`text_unit_ids`, the
table's column). Those ids are 64-character hashes: a large graph's lists were most of the
driver's memory, copied whole to sort the merged shards into one order, and looked
up again by every stage that needed a unit's place (its document, its neighbours, its
elements: `Provenance`, the text units' element lists, the communities' text units, each
hashing 7-10M ids). The merge's workers number them instead: `UNIT_ROWS` lists each text
unit's row in the extraction's status table (`text_unit_id`, one row per chunk of the
build), the rows every one of those stages counts in already. The ids come back as strings
only where they are written (`with_unit_ids`).

The merged shards a version keeps for the next update's merge (`graph/stage`) list rows too,
of that version's status table: the update renumbers them (`renumbered`, through
`rows_now`), so a shard's elements that no change touched are never turned into ids and
back. Written as ids (a second copy beside the driver's), the kept shards cost the merge's
workers several times the writing and numbering (64-character hashes compress slowly).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from graphrag_ray.arrow_rows import index_in, list_parts, one_array

UNIT_IDS = "text_unit_ids"
UNIT_ROWS = "unit_rows"


def with_unit_rows(table: pa.Table, unit_ids: pa.Array, dropped: bool = False) -> pa.Table:
    """`table` with `UNIT_ROWS` (each id's row in `unit_ids`) in place of `UNIT_IDS`. Every
    element's text units are the build's (its instances' chunks): an id the status table
    does not hold is a bug upstream, and fails here rather than vanish from the index.
    `dropped`: `table` is a previous version's, whose ids the update dropped get -1
    (`renumbered`)."""
    lists = table.column(UNIT_IDS).combine_chunks()
    offsets, values = list_parts(lists)
    rows = index_in(values, unit_ids)
    if dropped:
        rows = rows.fill_null(-1)
    elif rows.null_count:
        unknown = values.filter(pc.is_null(rows))[0].as_py()
        raise ValueError(f"text unit {unknown!r} of a merged element is not one of the "
                         "build's chunks")
    numbered = pa.ListArray.from_arrays(offsets, rows.cast(pa.int32()), mask=_null_mask(lists))
    return table.set_column(table.column_names.index(UNIT_IDS), UNIT_ROWS, numbered)


def rows_now(previous_ids: pa.Array | pa.ChunkedArray, unit_ids: pa.Array) -> pa.Array:
    """Per row of a previous status table (its `text_unit_id`s, `previous_ids`), that text
    unit's row in `unit_ids` now; -1 for a unit the update dropped (its file changed or
    went)."""
    rows = index_in(previous_ids, unit_ids)
    return rows.fill_null(-1).cast(pa.int32())


def renumbered(table: pa.Table, previous_rows_now: pa.Array, column: str = UNIT_ROWS
               ) -> pa.Table:
    """`table`, whose `column` (`UNIT_ROWS`, or another list of rows) counts in a previous
    status table, with its rows counted in the status table now (`previous_rows_now`:
    `rows_now`); -1 for a unit the update dropped, which only an element it touched lists,
    and merges again in its place (`touched_merge`: `require_known` says it did)."""
    lists = table.column(column).combine_chunks()
    offsets, values = list_parts(lists)
    numbered = pa.ListArray.from_arrays(offsets, previous_rows_now.take(values),
                                        mask=_null_mask(lists))
    return table.set_column(table.column_names.index(column), column, numbered)


def require_known(table: pa.Table) -> None:
    """Fails when an element of `table` lists a text unit by -1 (`renumbered`): an element an
    update kept though a unit it was found in is gone, a bug upstream."""
    values = list_parts(table.column(UNIT_ROWS))[1]
    if len(values) and pc.min(values).as_py() < 0:
        raise ValueError("a merged element kept from the previous version lists a text unit "
                         "the update dropped")


def with_unit_ids(table: pa.Table, unit_ids: pa.Array) -> pa.Table:
    """`table` with `UNIT_IDS` (the ids at `UNIT_ROWS` of `unit_ids`) in place of
    `UNIT_ROWS`: the column as it is written."""
    lists = table.column(UNIT_ROWS).combine_chunks()
    offsets, values = list_parts(lists)
    ids = pa.ListArray.from_arrays(offsets, one_array(unit_ids).take(values),
                                   mask=_null_mask(lists))
    return table.set_column(table.column_names.index(UNIT_ROWS), UNIT_IDS, ids)


def _null_mask(lists: pa.ListArray) -> pa.Array | None:
    return pc.is_null(lists) if lists.null_count else None
