"""File numbers (`chunks/positions`): a build spreads them, an update keeps them and numbers
the files it adds in the gaps, in listing order, so unchanged files keep their chunks'
positions; `FileMap` moves positions of the previous corpus to the current one."""

import random

import numpy as np

from graphrag_ray.index.chunks.positions import (
    FILE_NUMBERS, FileMap, chunk_seq, file_numbers, seq_file_number, spread_numbers)


def test_a_build_spreads_its_files_over_every_number_in_listing_order():
    numbers = spread_numbers(200_000)
    assert (np.diff(numbers) > 1).all() and numbers[0] > 0 and numbers[-1] < FILE_NUMBERS
    # The largest position a chunk can take still fits a signed 64-bit integer.
    last = chunk_seq(int(numbers[-1]), (1 << 20) - 1, (1 << 20) - 1)
    assert 0 < last < 2 ** 63 and seq_file_number(last) == numbers[-1]


def test_an_update_keeps_every_number_and_fits_new_files_between_their_neighbours():
    rng = random.Random(5)
    paths = sorted(f"doc-{i:05d}.txt" for i in range(500))
    before = dict(zip(paths, spread_numbers(len(paths)).tolist()))
    for _ in range(20):
        gone = set(rng.sample(sorted(before), 25))
        added = [f"{rng.choice(sorted(before))[:-4]}-{rng.randrange(10 ** 6)}.txt"
                 for _ in range(40)] + ["added-0001.txt", "zz.txt"]
        now = sorted((set(before) - gone) | set(added))
        numbers = file_numbers(now, before)
        assert (np.diff(numbers) > 0).all()  # listing order
        assert all(numbers[i] == before[p] for i, p in enumerate(now) if p in before)
        before = dict(zip(now, numbers.tolist()))


def test_files_are_numbered_afresh_when_a_gap_is_too_small():
    # A listing from before numbers were spread (0, 1, 2, ...): no room between two files.
    before = {"a.txt": 0, "c.txt": 1}
    numbers = file_numbers(["a.txt", "b.txt", "c.txt"], before)
    assert numbers.tolist() == spread_numbers(3).tolist()
    # Room at the ends, though: a file after the last, or before the first.
    assert file_numbers(["a.txt", "c.txt", "d.txt"], before)[:2].tolist() == [0, 1]
    assert file_numbers(["0.txt", "a.txt", "c.txt"], {"a.txt": 5, "c.txt": 9}).tolist()[1:] \
        == [5, 9]


def test_a_run_of_new_files_too_long_for_its_gap_renumbers_only_the_files_around_it():
    # 546 files added in front of 53,401 (a build leaves ~157 numbers between neighbours):
    # the first update of the 100M-token index renumbered, and rewrote, every file's parts.
    paths = [f"doc-{i:06d}.txt" for i in range(53_401)]
    before = dict(zip(paths, spread_numbers(len(paths)).tolist()))
    for added in ([f"added-{i:04d}.txt" for i in range(546)],
                  [f"doc-025000-{i:04d}.txt" for i in range(546)]):
        now = sorted(paths + added)
        numbers = file_numbers(now, before)
        assert (np.diff(numbers) > 0).all() and numbers[0] >= 0 \
            and numbers[-1] < FILE_NUMBERS
        moved = [p for p, n in zip(now, numbers.tolist()) if p in before and before[p] != n]
        assert 0 < len(moved) <= 2 * len(added)
        # Spaced so that as many again fit there without renumbering.
        again = sorted(now + [f"{a[:-4]}-b.txt" for a in added])
        renumbered = dict(zip(again, file_numbers(again, dict(zip(now, numbers.tolist())))
                              .tolist()))
        assert all(renumbered[p] == n for p, n in zip(now, numbers.tolist()))


def test_a_file_map_moves_positions_and_drops_files_not_carried():
    files = FileMap(np.array([10, 20, 30]), np.array([10, 25, -1]))
    old = np.array([chunk_seq(10, 0, 3), chunk_seq(20, 2, 0), chunk_seq(30, 0, 0),
                    chunk_seq(40, 0, 0)])
    keep, now = files.remap(old)
    assert keep.tolist() == [True, True, False, False]
    assert now.tolist() == [chunk_seq(10, 0, 3), chunk_seq(25, 2, 0)]
    assert files.unmoved(10, 10) and not files.unmoved(10, 20) and files.unmoved(11, 19)
    files.drop({20, 99})
    assert files.carried().tolist() == [10]
    assert files.unmoved(5, 12) and not files.unmoved(12, 20)
    assert FileMap(np.array([], np.int64), np.array([], np.int64)).remap(old)[0].sum() == 0
