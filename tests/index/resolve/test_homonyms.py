"""Homonyms split: a person's single name whose documents share no context becomes one entity
per context; contexts that share names, places, full names and stray mentions stay one."""

from graphrag_ray.index.elements import Renames
from graphrag_ray.index.resolve.homonyms import (
    Split, final_mentions, split_homonyms, typed_apart)

from conftest import provenance_of

TITLES = ["JANE", "MR DARCY", "BINGLEY", "MR ROCHESTER", "ADELE", "JANE BENNET", "LONDON"]
TYPES = ["PERSON", "PERSON", "PERSON", "PERSON", "PERSON", "PERSON", "GEO"]


def splits(units_by_row, documents, titles=TITLES, types=TYPES, renames=None):
    found = split_homonyms(titles, types, provenance_of(units_by_row, documents),
                           [f"t{u}" for u in range(len(documents))], renames or Renames())
    return {(s.title, s.new_title): (s.units, s.documents) for s in found}


# Units 0-3: Pride and Prejudice (Jane beside Darcy and Bingley); 4-7: Jane Eyre (beside
# Rochester and Adele).
DOCUMENTS = [0, 0, 0, 0, 1, 1, 1, 1]
TWO_JANES = [[0, 1, 2, 4, 5, 6, 7], [0, 1, 2], [1, 2], [4, 5, 6], [5, 6, 7], [], []]


def test_a_name_in_two_unrelated_documents_splits_and_the_larger_keeps_it():
    assert splits(TWO_JANES, DOCUMENTS) == {("JANE", "JANE (2)"): ([0, 1, 2], [0])}


def test_documents_that_share_their_context_stay_one():
    shared = [units + ([4, 5, 6] if row in (1, 2) else []) for row, units in
              enumerate(TWO_JANES)]  # Darcy and Bingley in the second document too
    assert splits(shared, DOCUMENTS) == {}


def test_small_contexts_places_and_full_names_are_not_split():
    few = [[0, 1, 4, 5, 6, 7], [0, 1], [1], [4, 5, 6], [5, 6, 7], [], []]
    assert splits(few, DOCUMENTS) == {}  # two mentions are no second person
    for row, title in ((6, "LONDON"), (5, "JANE BENNET")):
        moved = [TWO_JANES[row] if r == 0 else TWO_JANES[0] if r == row else units
                 for r, units in enumerate(TWO_JANES)]
        assert splits(moved, DOCUMENTS) == {}, title


def test_a_split_counts_the_mentions_renamed_before_it():
    # JANE BENNET's mentions in the first document were JANE's; merged whole, they are split
    # with it (the split is of the name's mentions after resolution).
    units = [[4, 5, 6, 7], [0, 1, 2], [1, 2], [4, 5, 6], [5, 6, 7], [0, 1, 2], []]
    renames = Renames(everywhere={"JANE BENNET": "JANE"})
    rows, finals = final_mentions(TITLES, provenance_of(units, DOCUMENTS),
                                  [f"t{u}" for u in range(8)], renames)
    assert sorted(rows[finals == 0].tolist()) == [0, 1, 2, 4, 5, 6, 7]
    assert splits(units, DOCUMENTS, renames=renames) == {("JANE", "JANE (2)"): ([0, 1, 2], [0])}
    assert splits(units, DOCUMENTS) == {}  # without it, JANE is in one document only


def test_a_new_name_never_takes_an_existing_title():
    titles = TITLES[:6] + ["JANE (2)"]
    assert splits(TWO_JANES, DOCUMENTS, titles=titles) == {
        ("JANE", "JANE (3)"): ([0, 1, 2], [0])}


def test_a_split_holds_only_where_every_part_is_still_typed_a_person():
    splits = [Split("JANE", "JANE (2)", [0], [0], ""), Split("UNIX", "UNIX (2)", [1], [1], "")]
    kept = typed_apart(splits, {"JANE": "PERSON", "JANE (2)": "PERSON", "UNIX": "PERSON",
                                "UNIX (2)": "OTHER"})
    assert [s.title for s in kept] == ["JANE"]
