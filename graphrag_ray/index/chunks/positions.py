"""A chunk's place in the corpus as one integer (`seq`): its file's index in the listing,
then its document's place in the file, then its window in the document. Sorting by it
restores corpus order; an update renumbers a carried file by replacing its top bits
(`passage_scans.remap_positions`)."""

from __future__ import annotations

from graphrag_ray.errors import InputError

POSITION_BITS = 20  # documents per file, and chunks per document: up to 2^20 each
FILE_SHIFT = 2 * POSITION_BITS  # a position's file index: its bits above these


def seq_file_index(seq: int) -> int:
    return seq >> FILE_SHIFT


def chunk_seq(file_index: int, document: int, window: int) -> int:
    if document >> POSITION_BITS or window >> POSITION_BITS:
        raise InputError(f"input file {file_index} has more than {1 << POSITION_BITS:,} "
                         "documents, or a document more than that many chunks; split it")
    return (file_index << FILE_SHIFT) | (document << POSITION_BITS) | window
