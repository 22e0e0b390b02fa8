"""A chunk's place in the corpus as one integer (`seq`): its file's number, then its
document's place in the file, then its window in the document. Sorting by it restores corpus
order.

A file's number is not its index in the listing: a build spreads the files' numbers over all
the numbers a position can hold (`spread_numbers`), and an update keeps every number of the
previous listing and numbers the files it adds in the gaps (`file_numbers`). An unchanged
file's documents, chunks and instances then keep their positions across versions, and an
update links their stored parts instead of renumbering and rewriting them
(`carry_over`). When a gap is too small for the files added into it, the files around it are
numbered again with them (their carried rows renumbered: `FileMap.remap`); all files only
when the whole listing has no room."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from graphrag_ray.errors import InputError

POSITION_BITS = 20  # documents per file, and chunks per document: up to 2^20 each
FILE_SHIFT = 2 * POSITION_BITS  # a position's file number: its bits above these
FILE_NUMBERS = 1 << (63 - FILE_SHIFT)  # numbers a file can take (a signed 64-bit seq)


def seq_file_number(seq: int) -> int:
    return seq >> FILE_SHIFT


def chunk_seq(file_number: int, document: int, window: int) -> int:
    if document >> POSITION_BITS or window >> POSITION_BITS:
        raise InputError(f"input file {file_number} has more than {1 << POSITION_BITS:,} "
                         "documents, or a document more than that many chunks; split it")
    return (file_number << FILE_SHIFT) | (document << POSITION_BITS) | window


def spread_numbers(count: int) -> np.ndarray:
    """A build's file numbers, in listing order: evenly spaced over every number, so that an
    update has room to number the files it adds between two (at 200,000 files, 40 numbers
    between neighbours)."""
    if count >= FILE_NUMBERS:
        raise InputError(f"{count:,} input files: at most {FILE_NUMBERS - 1:,} are indexed "
                         "at once; merge small files (a JSONL or CSV file holds many documents)")
    return np.arange(1, count + 1, dtype=np.int64) * (FILE_NUMBERS // (count + 1))


def file_numbers(paths: list[str], previous: dict[str, int]) -> np.ndarray:
    """The numbers of a listing's files (`paths`, in listing order): a file of the previous
    listing (`previous`: path -> number) keeps its number, the others are spread over the gaps
    between their neighbours'. A run of new files that its gap cannot hold (a build leaves
    ~157 numbers between neighbours at 53k files; 546 files added under one prefix are one
    run) is numbered with the kept files around it (`_room_around`), which are
    then renumbered: a part of the listing, not all of it. All files are numbered afresh
    (`spread_numbers`) when even the whole listing has no room, or the kept numbers do not
    increase in listing order."""
    kept = [previous.get(path, -1) for path in paths]
    numbers = np.asarray(kept, dtype=np.int64)
    held = numbers[numbers >= 0]
    if not held.size or (np.diff(held) <= 0).any():
        return spread_numbers(len(paths))
    # The spacing a window is renumbered with, at least: a quarter of the kept files' usual
    # distance (a build's, ~157 at 53k files), so that the next files added there fit too.
    spacing = max(1, int(np.median(np.diff(held))) // 4 if held.size > 1
                  else FILE_NUMBERS // (len(paths) + 1) // 4)
    place = 0
    while place < len(paths):
        if numbers[place] >= 0:
            place += 1
            continue
        end = place  # a run of new files [place, end), between two kept numbers
        while end < len(paths) and numbers[end] < 0:
            end += 1
        start, end = _room_around(numbers, place, end, spacing)
        if start == 0 and end == len(paths):
            return spread_numbers(len(paths))
        low, high = _bounds(numbers, start, end)
        count = end - start
        numbers[start:end] = low + (np.arange(1, count + 1) * (high - low)) // (count + 1)
        place = end
    return numbers


def _bounds(numbers: np.ndarray, start: int, end: int) -> tuple[int, int]:
    """The numbers just outside files [start, end): the neighbours' (or the range's ends)."""
    return (int(numbers[start - 1]) if start else -1,
            int(numbers[end]) if end < len(numbers) else FILE_NUMBERS)


def _fits(numbers: np.ndarray, start: int, end: int, spacing: int) -> bool:
    """Whether files [start, end) can be numbered `spacing` apart between their bounds."""
    low, high = _bounds(numbers, start, end)
    return (high - low) // (end - start + 1) >= spacing


def _room_around(numbers: np.ndarray, start: int, end: int, spacing: int
                 ) -> tuple[int, int]:
    """New files [start, end) (numbers -1) that fit their gap as they are; or, when they do
    not, the smallest window around them found by doubling on both sides whose files can be
    `spacing` apart: renumbering a window costs the rewrite of its files' stored parts, a
    few hundred files' worth, against every file's. The window's right end never splits a
    run of new files."""
    if _fits(numbers, start, end, 1):
        return start, end
    widen = 1
    while not _fits(numbers, start, end, spacing) and (start > 0 or end < len(numbers)):
        start, end = max(0, start - widen), min(len(numbers), end + widen)
        while end < len(numbers) and numbers[end] < 0:
            end += 1
        widen *= 2
    return start, end


@dataclass
class FileMap:
    """The previous listing's file numbers (`old`, increasing) and what each is now (`new`,
    -1 for a file not carried over: changed, deleted, read again)."""
    old: np.ndarray
    new: np.ndarray
    # Per `old` index, how many files before it moved or went (`unmoved`; reset by `drop`).
    _moved_before: np.ndarray | None = field(default=None, repr=False, compare=False)

    def unmoved(self, first: int, last: int) -> bool:
        """Whether every previous file numbered `first` .. `last` is carried at the number it
        had: a stored part whose rows lie between them is carried as it is, unread."""
        if self._moved_before is None:
            self._moved_before = np.concatenate([[0], np.cumsum(self.new != self.old)])
        low, high = (np.searchsorted(self.old, first, "left"),
                     np.searchsorted(self.old, last, "right"))
        return bool(self._moved_before[high] == self._moved_before[low])

    def remap(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions (or chunk `seq`s) of the previous corpus -> (which belong to a file
        carried over, their positions now)."""
        files = positions >> FILE_SHIFT
        place = np.minimum(np.searchsorted(self.old, files), max(len(self.old) - 1, 0))
        mapped = np.full(len(positions), -1, dtype=np.int64)
        if len(self.old):
            found = self.old[place] == files
            mapped[found] = self.new[place[found]]
        keep = mapped >= 0
        low = positions[keep] & ((1 << FILE_SHIFT) - 1)
        return keep, (mapped[keep] << FILE_SHIFT) | low

    def drop(self, old_numbers) -> None:
        """Files no longer carried over (read again)."""
        numbers = np.asarray(sorted(old_numbers), dtype=np.int64)
        place = np.searchsorted(self.old, numbers)
        inside = place < len(self.old)
        place = place[inside][self.old[place[inside]] == numbers[inside]]
        self.new[place] = -1
        self._moved_before = None

    def carried(self) -> np.ndarray:
        """The carried files' numbers now."""
        return self.new[self.new >= 0]


# Each document's file number (`file_index`), in the work area and then in the kept reading:
# what tells an update which of the previous version's documents it carries.
DOCUMENT_FILES = "document_files"
