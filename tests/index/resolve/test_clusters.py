"""Scored pairs -> clusters: strongest first, no cluster holding names that differ, short
names shared by two entities left alone, forced and forbidden merges obeyed."""

import pyarrow as pa

from graphrag_ray.index.resolve.candidates import PAIR_SCHEMA
from graphrag_ray.index.resolve.clusters import PairRules, resolve_clusters


def pairs(titles, scored):
    row = {t: i for i, t in enumerate(titles)}
    items = [(min(row[a], row[b]), max(row[a], row[b]), s, "short_form", "") for a, b, s in scored]
    return pa.table({f.name: pa.array([item[k] for item in items], f.type)
                     for k, f in enumerate(PAIR_SCHEMA)}, schema=PAIR_SCHEMA)


def merged(titles, resolution):
    return {(titles[a.row], titles[a.canonical]) for a in resolution.aliases}


def resolve(titles, scored, types=None, frequency=None, force=(), forbid=(),
            confirmed=frozenset()):
    types = types or ["PERSON"] * len(titles)
    frequency = frequency or [1] * len(titles)
    return resolve_clusters(titles, frequency, pairs(titles, scored), 0.75,
                            PairRules(titles, types, force, forbid), confirmed)


def test_a_short_form_joins_its_full_name_which_is_canonical():
    titles = ["HOLMES", "MR. HOLMES", "SHERLOCK HOLMES"]
    resolution = resolve(titles, [("HOLMES", "SHERLOCK HOLMES", 0.8),
                                  ("HOLMES", "MR. HOLMES", 1.0)], frequency=[30, 5, 2])
    assert merged(titles, resolution) == {("HOLMES", "SHERLOCK HOLMES"),
                                          ("MR. HOLMES", "SHERLOCK HOLMES")}


def test_a_short_name_shared_by_two_full_names_joins_neither():
    titles = ["FANNY", "FANNY DASHWOOD", "FANNY PRICE"]
    resolution = resolve(titles, [("FANNY", "FANNY PRICE", 0.9),
                                  ("FANNY", "FANNY DASHWOOD", 0.65)])  # weaker, still evidence
    assert resolution.aliases == []
    assert [titles[r] for r in resolution.ambiguous] == ["FANNY"]


def test_a_chain_cannot_carry_one_name_into_another():
    # J. SMITH ~ JOHN SMITH and J. SMITH ~ JANE SMITH: the two full names differ.
    titles = ["J SMITH", "JANE SMITH", "JOHN SMITH"]
    resolution = resolve(titles, [("J SMITH", "JOHN SMITH", 0.9),
                                  ("J SMITH", "JANE SMITH", 0.7)])  # below the threshold
    assert resolution.aliases == []  # J SMITH is ambiguous between them


def test_types_that_disagree_keep_entities_apart():
    titles = ["WASHINGTON", "GEORGE WASHINGTON"]
    resolution = resolve(titles, [("WASHINGTON", "GEORGE WASHINGTON", 0.9)],
                         types=["GEO", "PERSON"])
    assert resolution.aliases == []


def test_forced_merges_win_and_name_the_canonical_entity():
    titles = ["BOZ", "CHARLES DICKENS", "DICKENS"]
    resolution = resolve(titles, [("DICKENS", "CHARLES DICKENS", 0.9)],
                         force=[["Charles Dickens", "Boz"]])
    assert merged(titles, resolution) == {("BOZ", "CHARLES DICKENS"),
                                          ("DICKENS", "CHARLES DICKENS")}
    assert {a.method for a in resolution.aliases} == {"forced", "short_form"}


def test_forbidden_merges_are_never_made():
    titles = ["HOLMES", "MYCROFT HOLMES", "SHERLOCK HOLMES"]
    resolution = resolve(titles, [("HOLMES", "SHERLOCK HOLMES", 0.9)],
                         forbid=[["holmes", "sherlock holmes"]])
    assert resolution.aliases == []
    assert resolution.forbidden_pairs_kept_apart == 1


def test_uncertain_pairs_merge_when_confirmed():
    # HOLMES said 30 times, SHERLOCK HOLMES twice: maybe another Holmes; the LLM can say.
    titles, frequency = ["HOLMES", "SHERLOCK HOLMES"], [30, 2]
    assert resolve(titles, [("HOLMES", "SHERLOCK HOLMES", 0.7)], frequency=frequency
                   ).aliases == []
    confirmed = resolve(titles, [("HOLMES", "SHERLOCK HOLMES", 0.7)], frequency=frequency,
                        confirmed={(0, 1)})
    assert [a.method for a in confirmed.aliases] == ["llm:short_form"]


def test_an_uncertain_short_name_takes_its_only_full_name_when_that_is_named_enough():
    titles = ["SATYA", "SATYA NADELLA"]
    sole = resolve(titles, [("SATYA", "SATYA NADELLA", 0.65)], frequency=[9, 6])
    assert [(titles[a.row], a.method) for a in sole.aliases] == [("SATYA", "sole:short_form")]
    assert resolve(titles, [("SATYA", "SATYA NADELLA", 0.65)], frequency=[9, 1]).aliases == []
    titles = ["SATYA", "SATYA NADELLA", "SATYA PATEL"]  # two of them: ambiguous
    assert resolve(titles, [("SATYA", "SATYA NADELLA", 0.65), ("SATYA", "SATYA PATEL", 0.62)],
                   frequency=[9, 6, 6]).aliases == []


def test_a_bare_surname_is_the_mans_of_the_family_and_between_women_no_ones():
    titles = ["BINGLEY", "MISS BINGLEY", "MR BINGLEY"]
    resolution = resolve(titles, [("BINGLEY", "MR BINGLEY", 1.0),
                                  ("BINGLEY", "MISS BINGLEY", 1.0)])
    assert {frozenset(pair) for pair in merged(titles, resolution)} == {
        frozenset(("BINGLEY", "MR BINGLEY"))}
    titles = ["DASHWOOD", "MISS DASHWOOD", "MRS DASHWOOD"]
    resolution = resolve(titles, [("DASHWOOD", "MRS DASHWOOD", 1.0),
                                  ("DASHWOOD", "MISS DASHWOOD", 1.0)])
    assert resolution.aliases == [] and [titles[r] for r in resolution.ambiguous] == ["DASHWOOD"]


def test_a_bare_surname_the_familys_full_names_make_ambiguous_still_joins_its_man():
    # WICKHAM: GEORGE or LYDIA WICKHAM cannot say which, but MR WICKHAM is the bare name's.
    titles = ["GEORGE WICKHAM", "LYDIA WICKHAM", "MR WICKHAM", "WICKHAM"]
    resolution = resolve(titles, [("WICKHAM", "MR WICKHAM", 1.0),
                                  ("WICKHAM", "LYDIA WICKHAM", 0.81),
                                  ("WICKHAM", "GEORGE WICKHAM", 0.7),
                                  ("MR WICKHAM", "GEORGE WICKHAM", 0.8),
                                  ("MR WICKHAM", "LYDIA WICKHAM", 0.7)], frequency=[7, 5, 49, 73])
    assert {frozenset(pair) for pair in merged(titles, resolution)} == {
        frozenset(("WICKHAM", "MR WICKHAM"))}


def test_a_given_name_beside_a_title_and_full_names_stays_ambiguous():
    titles = ["JOHN", "JOHN DASHWOOD", "JOHN REED", "SIR JOHN"]
    resolution = resolve(titles, [("JOHN", "SIR JOHN", 1.0), ("JOHN", "JOHN REED", 0.8),
                                  ("JOHN", "JOHN DASHWOOD", 0.8)])
    assert resolution.aliases == [] and titles.index("JOHN") in resolution.ambiguous


def test_a_name_and_the_name_with_its_kind_word_are_one_where_typed_alike():
    # STANFORD and STANFORD UNIVERSITY, both organizations: one. BOSTON, a place, is not
    # BOSTON UNIVERSITY; an untyped ROSE is not ROSE COTTAGE.
    titles = ["STANFORD", "STANFORD UNIVERSITY", "BOSTON", "BOSTON UNIVERSITY", "ROSE",
              "ROSE COTTAGE"]
    row = {t: i for i, t in enumerate(titles)}
    items = [(row[a], row[b], 0.8, "kind_form", "") for a, b in (
        ("STANFORD", "STANFORD UNIVERSITY"), ("BOSTON", "BOSTON UNIVERSITY"),
        ("ROSE", "ROSE COTTAGE"))]
    table = pa.table({f.name: pa.array([item[k] for item in items], f.type)
                      for k, f in enumerate(PAIR_SCHEMA)}, schema=PAIR_SCHEMA)
    types = ["ORGANIZATION", "ORGANIZATION", "GEO", "ORGANIZATION", "OTHER", "GEO"]
    resolution = resolve_clusters(titles, [80, 10, 20, 5, 3, 3], table, 0.75,
                                  PairRules(titles, types))
    assert merged(titles, resolution) == {("STANFORD", "STANFORD UNIVERSITY")}


def kind_pairs(titles, scored):
    row = {t: i for i, t in enumerate(titles)}
    items = [(min(row[a], row[b]), max(row[a], row[b]), s, kind, "") for a, b, s, kind in scored]
    return pa.table({f.name: pa.array([item[k] for item in items], f.type)
                     for k, f in enumerate(PAIR_SCHEMA)}, schema=PAIR_SCHEMA)


def test_a_partner_named_after_the_short_name_leaves_it_to_its_fuller_name():
    # STANFORD RESEARCH (a thing named after Stanford, kept apart from STANFORD by the rules)
    # does not make STANFORD ambiguous; STANFORD UNIVERSITY, its only partner, takes it below
    # the threshold, however more often the corpus says STANFORD alone.
    titles = ["STANFORD", "STANFORD RESEARCH", "STANFORD UNIVERSITY"]
    table = kind_pairs(titles, [("STANFORD", "STANFORD UNIVERSITY", 0.7, "kind_form"),
                                ("STANFORD", "STANFORD RESEARCH", 0.6, "short_form")])
    types = ["ORGANIZATION", "OTHER", "ORGANIZATION"]
    resolution = resolve_clusters(titles, [87, 1, 10], table, 0.75, PairRules(titles, types))
    assert [(titles[a.row], titles[a.canonical], a.method) for a in resolution.aliases] == [
        ("STANFORD", "STANFORD UNIVERSITY", "sole:kind_form")]
    assert resolution.ambiguous == []


def test_an_acronym_takes_its_only_spelled_out_name_where_one_work_names_both():
    titles = ["CMU", "CARNEGIE MELLON UNIVERSITY", "HCI", "HUMAN-CENTERED INSTITUTE", "CS",
              "COMPUTER SCIENCE"]
    table = kind_pairs(titles, [("CMU", "CARNEGIE MELLON UNIVERSITY", 0.7, "acronym"),
                                ("HCI", "HUMAN-CENTERED INSTITUTE", 0.72, "acronym"),
                                ("CS", "COMPUTER SCIENCE", 0.72, "acronym")])
    types = ["ORGANIZATION", "ORGANIZATION", "OTHER", "ORGANIZATION", "OTHER", "OTHER"]
    named_together = {frozenset((0, 1)), frozenset((4, 5))}  # HCI and its "name" never

    def together(a, b):
        return frozenset((a, b)) in named_together
    resolution = resolve_clusters(titles, [10, 3, 1, 1, 13, 13], table, 0.75,
                                  PairRules(titles, types), together=together)
    # (CS: two letters spell too many names to take one below the threshold.)
    assert merged(titles, resolution) == {("CMU", "CARNEGIE MELLON UNIVERSITY")}
    # Without knowing which work names what, no acronym merges below the threshold.
    assert resolve_clusters(titles, [10, 3, 1, 1, 13, 13], table, 0.75,
                            PairRules(titles, types)).aliases == []


def test_a_bare_surname_between_two_titled_men_the_context_keeps_apart_joins_neither():
    # MR WENTWORTH (the curate) and CAPTAIN WENTWORTH (his brother) share too little context
    # to be one; WENTWORTH beside both may be either. MR and COLONEL BRANDON share enough.
    titles = ["WENTWORTH", "MR WENTWORTH", "CAPTAIN WENTWORTH"]
    table = kind_pairs(titles, [("WENTWORTH", "MR WENTWORTH", 1.0, "same_name"),
                                ("WENTWORTH", "CAPTAIN WENTWORTH", 1.0, "same_name"),
                                ("MR WENTWORTH", "CAPTAIN WENTWORTH", 0.63, "same_name")])
    resolution = resolve_clusters(titles, [5, 3, 109], table, 0.75,
                                  PairRules(titles, ["PERSON"] * 3))
    assert resolution.aliases == [] and resolution.ambiguous == [0]
    titles = ["BRANDON", "MR BRANDON", "COLONEL BRANDON"]
    table = kind_pairs(titles, [("BRANDON", "MR BRANDON", 1.0, "same_name"),
                                ("BRANDON", "COLONEL BRANDON", 1.0, "same_name"),
                                ("MR BRANDON", "COLONEL BRANDON", 0.84, "same_name")])
    resolution = resolve_clusters(titles, [5, 2, 116], table, 0.75,
                                  PairRules(titles, ["PERSON"] * 3))
    assert {titles[a.row] for a in resolution.aliases} == {"BRANDON", "MR BRANDON"}
