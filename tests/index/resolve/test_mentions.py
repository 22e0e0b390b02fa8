"""Short names resolved document by document: to the one full name a document names; in a
document naming two, by the text unit, else by the one it names most; left alone where no
full name is named."""

import numpy as np
import pyarrow as pa

from graphrag_ray.index.resolve.candidates import PAIR_SCHEMA
from graphrag_ray.index.resolve.clusters import Alias, PairRules, Resolution
from graphrag_ray.index.resolve.mentions import resolve_mentions, work_of, works_of
from graphrag_ray.index.resolve.standing import Standings

from conftest import provenance_of

TITLES = ["ELIZABETH", "ELIZABETH BENNET", "ELIZABETH ELLIOT", "LIZZY BENNET"]


def pairs(items):
    return pa.table({f.name: pa.array([item[k] for item in items], f.type)
                     for k, f in enumerate(PAIR_SCHEMA)}, schema=PAIR_SCHEMA)


def resolved(units_by_row, documents, resolution=Resolution(), types=None):
    types = types or ["PERSON"] * len(TITLES)
    found = resolve_mentions(
        TITLES, pairs([(0, 1, 0.7, "short_form", ""), (0, 2, 0.65, "short_form", "")]),
        resolution, provenance_of(units_by_row, documents), PairRules(TITLES, types).apart)
    return {(TITLES[m.row], TITLES[m.canonical]): (m.units, m.documents) for m in found}


def test_each_document_gives_the_short_name_to_the_full_name_it_names():
    # Units 0-2: a novel naming Elizabeth Bennet; 3-4: one naming Elizabeth Elliot; 5: a
    # document naming neither.
    documents = [0, 0, 0, 1, 1, 2]
    found = resolved([[0, 1, 3, 5], [2], [4], []], documents)
    assert found == {("ELIZABETH", "ELIZABETH BENNET"): ([0, 1], [0]),
                     ("ELIZABETH", "ELIZABETH ELLIOT"): ([3], [1])}


def test_a_document_naming_both_resolves_by_text_unit_or_by_the_one_it_names_most():
    # One document, both full names: unit 0 names Bennet with the short name, unit 1 names
    # neither (1 mention each: no one dominates), so it stays.
    assert resolved([[0, 1], [0], [2], []], [0, 0, 0]) == {
        ("ELIZABETH", "ELIZABETH BENNET"): ([0], [0])}
    # Bennet named in five units, Elliot in one: the document's other mentions are Bennet's.
    found = resolved([[0, 6], [1, 2, 3, 4, 5], [6], []], [0] * 7)
    assert found == {("ELIZABETH", "ELIZABETH BENNET"): ([0], [0]),
                     ("ELIZABETH", "ELIZABETH ELLIOT"): ([6], [0])}


def test_a_full_name_merged_whole_is_resolved_to_as_its_canonical_entity():
    # LIZZY BENNET was merged into ELIZABETH BENNET: naming it names the canonical entity.
    found = resolved([[0, 1], [], [2], [0]], [0, 0, 1],
                     Resolution([Alias(3, 1, 0.9, "forced", "")]))
    assert found == {("ELIZABETH", "ELIZABETH BENNET"): ([0, 1], [0])}


def test_types_that_disagree_rule_a_full_name_out():
    found = resolved([[0, 3], [1], [4], []], [0, 0, 1, 1, 1],
                     types=["PERSON", "PERSON", "GEO", "PERSON"])
    assert found == {("ELIZABETH", "ELIZABETH BENNET"): ([0], [0])}


def test_a_surname_with_an_honorific_is_not_resolved_by_document_a_given_name_is():
    # MRS BENNET is not Elizabeth Bennet, though the novel names her: a family's surname.
    # MISS ELIZABETH is: a given name. MRS ELIZABETH would be Mrs Elizabeth (a surname).
    for short, resolved in (("MRS BENNET", False), ("MISS ELIZABETH", True),
                            ("MRS ELIZABETH", False)):
        titles = [short, "ELIZABETH BENNET"]
        found = resolve_mentions(titles, pairs([(0, 1, 0.7, "short_form", "")]), Resolution(),
                                 provenance_of([[0, 1], [1]], [0, 0]),
                                 PairRules(titles, ["PERSON"] * 2).apart)
        assert bool(found) == resolved, short


def test_a_short_name_with_short_names_merged_into_it_is_resolved_with_their_mentions():
    # MR WICKHAM was merged whole into WICKHAM; the novel names George Wickham: both go to
    # him, unit by unit.
    titles = ["WICKHAM", "GEORGE WICKHAM", "MR WICKHAM"]
    found = resolve_mentions(titles, pairs([(0, 1, 0.7, "short_form", "")]),
                             Resolution([Alias(2, 0, 1.0, "same_name", "")]),
                             provenance_of([[0], [0, 1, 2], [1, 2]], [0, 0, 0]),
                             PairRules(titles, ["PERSON"] * 3).apart)
    assert [(titles[m.row], titles[m.canonical], m.units) for m in found] == [
        ("WICKHAM", "GEORGE WICKHAM", [0, 1, 2])]


def test_a_rank_alone_is_the_holder_its_document_names():
    # "the Colonel": Brandon in one novel; in another naming two colonels, the one its text
    # unit names.
    titles = ["COLONEL", "COLONEL BRANDON", "COLONEL FORSTER", "COLONEL FITZWILLIAM"]
    found = resolve_mentions(
        titles, pairs([(0, 1, 0.7, "title_form", ""), (0, 2, 0.7, "title_form", ""),
                       (0, 3, 0.7, "title_form", "")]), Resolution(),
        provenance_of([[0, 1, 3, 4], [0, 1], [3], [4, 5]], [0, 0, 1, 1, 1, 1]),
        PairRules(titles, ["OTHER", "PERSON", "PERSON", "PERSON"]).apart)
    assert {(titles[m.canonical], tuple(m.units)) for m in found} == {
        ("COLONEL BRANDON", (0, 1)), ("COLONEL FORSTER", (3,)), ("COLONEL FITZWILLIAM", (4,))}


def test_a_document_that_names_the_full_name_rarely_means_someone_else():
    # The novel says ELIZABETH in ten text units and ELIZABETH BENNET in one, elsewhere: its
    # Elizabeth may be another, never named in full; only the unit naming her is resolved.
    found = resolved([list(range(10)) + [10], [10], [], []], [0] * 11)
    assert found == {("ELIZABETH", "ELIZABETH BENNET"): ([10], [0])}


def test_a_family_surname_is_not_given_by_the_text_unit_naming_one_of_the_family():
    titles = ["ELLIOT", "ANNE ELLIOT", "WALTER ELLIOT"]
    # Units 0-3, one novel: ELLIOT in 0 and 1, ANNE ELLIOT in 1 and 2, WALTER ELLIOT in 3.
    found = resolve_mentions(
        titles, pairs([(0, 1, 0.7, "short_form", ""), (0, 2, 0.7, "short_form", "")]),
        Resolution(), provenance_of([[0, 1], [1, 2], [3]], [0, 0, 0, 0]),
        PairRules(titles, ["PERSON"] * 3).apart)
    assert found == []


def test_a_work_cut_into_parts_is_one_work():
    titles = ["Episode 29_Bloomberg_Transcript-part1.txt",
              "Episode 29_Bloomberg_Transcript-part12.txt", "Episode 30_Transcript-part1.txt",
              "Persuasion Chapter 3.md", "Persuasion chapter 14.md", "annual report 2023.txt",
              "annual report 2024.txt"]
    assert [work_of(t) for t in titles] == [
        "Episode 29_Bloomberg_Transcript", "Episode 29_Bloomberg_Transcript",
        "Episode 30_Transcript", "Persuasion", "Persuasion", "annual report 2023",
        "annual report 2024"]
    assert works_of(titles).tolist() == [0, 0, 1, 2, 2, 3, 4]


def test_a_document_naming_no_full_name_is_resolved_by_its_work():
    # Documents 0 and 1 are parts of one episode (work 0), document 2 another episode's
    # (work 1). Document 0 says ELIZABETH only; document 1, of its episode, names ELIZABETH
    # BENNET: the short name in document 0 is hers. Document 2 and its work name neither.
    found = resolve_mentions(
        TITLES, pairs([(0, 1, 0.7, "short_form", ""), (0, 2, 0.65, "short_form", "")]),
        Resolution(), provenance_of([[0, 3], [1], [], []], [0, 1, 2, 2]),
        PairRules(TITLES, ["PERSON"] * 4).apart, works=np.array([0, 0, 1]))
    assert [(TITLES[m.row], TITLES[m.canonical], m.units, m.method) for m in found] == [
        ("ELIZABETH", "ELIZABETH BENNET", [0], "in_work:short_form")]
    # Each document its own work: nothing names her beside unit 0.
    assert resolve_mentions(
        TITLES, pairs([(0, 1, 0.7, "short_form", ""), (0, 2, 0.65, "short_form", "")]),
        Resolution(), provenance_of([[0, 3], [1], [], []], [0, 1, 2, 2]),
        PairRules(TITLES, ["PERSON"] * 4).apart) == []


def test_a_family_s_honorific_is_resolved_to_the_one_member_it_can_be():
    # MR WICKHAM: a novel naming GEORGE WICKHAM (SIR GEORGE: a man's name) and LYDIA WICKHAM
    # (MISS LYDIA: a woman's). Without what the titles say, the family's surname stays.
    titles = ["MR WICKHAM", "GEORGE WICKHAM", "LYDIA WICKHAM", "SIR GEORGE", "MISS LYDIA"]
    table = pairs([(0, 1, 0.7, "short_form", ""), (0, 2, 0.7, "short_form", "")])
    provenance = provenance_of([[0, 1, 2, 3], [1], [3], [], []], [0, 0, 0, 0])
    apart = PairRules(titles, ["PERSON"] * 5).apart
    found = resolve_mentions(titles, table, Resolution(), provenance, apart,
                             standings=Standings(titles))
    assert [(titles[m.row], titles[m.canonical], m.units) for m in found] == [
        ("MR WICKHAM", "GEORGE WICKHAM", [0, 1, 2, 3])]
    assert resolve_mentions(titles, table, Resolution(), provenance, apart) == []


def test_a_diminutive_with_a_given_name_s_honorific_merged_into_it_is_resolved():
    # MISS LIZZY was merged into LIZZY; the novel names ELIZABETH: both are hers (MISS LIZZY
    # is no family's honorific: LIZZY is no word of ELIZABETH).
    titles = ["LIZZY", "ELIZABETH", "MISS LIZZY"]
    found = resolve_mentions(titles, pairs([(0, 1, 0.8, "nickname", "")]),
                             Resolution([Alias(2, 0, 1.0, "same_name", "")]),
                             provenance_of([[0], [0, 1, 2], [1]], [0, 0, 0]),
                             PairRules(titles, ["PERSON"] * 3).apart,
                             standings=Standings(titles))
    assert [(titles[m.row], titles[m.canonical], m.units, m.method) for m in found] == [
        ("LIZZY", "ELIZABETH", [0, 1], "in_document:nickname")]


def test_a_given_name_the_corpus_opens_full_names_with_is_no_family_s_name():
    # MISS ROSAMOND, merged into ROSAMOND: ROSAMOND opens ROSAMOND OLIVER and ends no full
    # name, so MISS ROSAMOND is her given name with an honorific, not a family's.
    titles = ["ROSAMOND", "ROSAMOND OLIVER", "MISS ROSAMOND"]
    found = resolve_mentions(titles, pairs([(0, 1, 0.7, "short_form", "")]),
                             Resolution([Alias(2, 0, 1.0, "same_name", "")]),
                             provenance_of([[0], [0, 1], [1]], [0, 0]),
                             PairRules(titles, ["PERSON"] * 3).apart,
                             standings=Standings(titles))
    assert [(titles[m.row], titles[m.canonical], m.units) for m in found] == [
        ("ROSAMOND", "ROSAMOND OLIVER", [0, 1])]


def test_a_rank_takes_a_surname_even_one_that_opens_a_full_name():
    # FITZWILLIAM opens MR FITZWILLIAM DARCY (a given name there), but COLONEL FITZWILLIAM is
    # his cousin: a rank is a family's honorific, which no full name of the Darcys fits.
    titles = ["COLONEL FITZWILLIAM", "MR FITZWILLIAM DARCY", "MR DARCY"]
    found = resolve_mentions(titles, pairs([(0, 1, 0.7, "short_form", "")]), Resolution(),
                             provenance_of([[0, 1], [1], [1]], [0, 0]),
                             PairRules(titles, ["PERSON"] * 3).apart,
                             standings=Standings(titles))
    assert found == []


def test_names_given_to_a_full_name_by_other_short_names_count_at_a_higher_share():
    # MISS BINGLEY (units 0-5) was resolved to CAROLINE BINGLEY, written once (unit 6);
    # CAROLINE (units 7-9) is hers: six names given and one written, of three mentions.
    # MISS KING's one unit does not make MARY's ten (units 11-20) Mary King's, written once.
    titles = ["CAROLINE", "CAROLINE BINGLEY", "MISS BINGLEY", "MARY", "MARY KING", "MISS KING",
              "SIR GEORGE", "MISS LYDIA"]
    table = pairs([(0, 1, 0.7, "short_form", ""), (2, 1, 0.7, "short_form", ""),
                   (3, 4, 0.7, "short_form", ""), (5, 4, 0.7, "short_form", "")])
    provenance = provenance_of([[7, 8, 9], [6], [0, 1, 2, 3, 4, 5], list(range(11, 21)), [21],
                                [10], [], []], [0] * 22)
    standings = Standings([*titles, "MISS CAROLINE", "MISS MARY KING"])
    found = resolve_mentions(titles, table, Resolution(), provenance,
                             PairRules(titles, ["PERSON"] * 8).apart, standings=standings)
    given = {(titles[m.row], titles[m.canonical]): m.units for m in found}
    assert given[("CAROLINE", "CAROLINE BINGLEY")] == [7, 8, 9]
    assert ("MARY", "MARY KING") not in given
