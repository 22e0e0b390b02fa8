"""Name relations and blocking keys: what the names alone say."""

import pytest

from graphrag_ray.index.resolve.names import (
    blocking_keys, family_name, name_relation, name_tokens)


@pytest.mark.parametrize("a, b, kind", [
    ("MR. HOLMES", "HOLMES", "same_name"),
    ("ACME CORP", "ACME", "same_name"),
    ("HOLMES", "SHERLOCK HOLMES", "short_form"),
    ("FANNY", "FANNY PRICE", "short_form"),
    ("J. SMITH", "JOHN SMITH", "initials"),
    ("IBM", "INTERNATIONAL BUSINESS MACHINES", "acronym"),
    ("EBENEZER SCROOGE", "EBENEZER SCROGOE", "typo"),  # two letters swapped
    ("EBENEZER SCROOGE", "EBENEZER SCROGE", "typo"),  # one missing
    ("TOBI LÜTKE", "TOBI LUTKE", "same_name"),  # accents
    ("KRAKEN", "SEATTLE KRAKEN", "short_form"),
    ("QUOC", "QUOC LE", "short_form"),  # a last word is a word, joiner or not
    ("BEHINDTHETECH", "BEHIND THE TECH", "joined"),  # written as one word
    ("FEIFEI LI", "FEI-FEI LI", "joined"),
    ("AUNT REED", "MRS REED", "same_name"),  # both say a woman
    ("STANFORD", "STANFORD UNIVERSITY", "kind_form"),  # one thing where typed alike
    ("THORNFIELD", "THORNFIELD HALL", "kind_form"),
    ("ADMIRAL", "ADMIRAL CROFT", "title_form"),  # "the Admiral": the document's one
    ("COLONEL", "COLONEL BRANDON", "title_form"),
    ("LIZZY", "ELIZABETH", "nickname"),  # a diminutive of one given name
    ("LIZZY BENNET", "ELIZABETH BENNET", "nickname"),
])
def test_related_names(a, b, kind):
    assert name_relation(a, b)[0] == kind
    assert name_relation(b, a)[0] == kind


@pytest.mark.parametrize("a, b", [
    ("FANNY PRICE", "FANNY DASHWOOD"),  # a shared first name is not one person
    ("STOSMEM COMPANY", "STESTEM COMPANY"),  # two edits apart: another company
    ("GAESMUR MIND", "GAESMUR MINDIX"),
    ("SCROOGE", "SCROGE"),  # one-word names this short: a slip or another name, who knows
    ("BOB CRATCHIT", "TINY TIM"),
    ("DR", "DR WHO"),  # nothing but an honorific is not a short form
    ("THEO VON", "THEO VAUGHN"),
    # Something named after a name is not it: an institution, a place, a role.
    ("MANITOBA", "UNIVERSITY OF MANITOBA"),
    ("MERRICK", "MERRICK LIBRARY"),
    ("ADMOB", "CEO OF ADMOB"),
    ("PALO ALTO", "PALO ALTO RESEARCH CENTER"),
    ("KANSAS", "KANSAS CITY"),  # another place of the same kind
    # Honorifics that say different people: a husband and wife, a mother and daughter.
    ("MR BENNET", "MRS BENNET"),
    ("MRS DASHWOOD", "MISS DASHWOOD"),
    ("MR DARCY", "MISS DARCY"),
    ("MISS ELLIOT", "SIR WALTER ELLIOT"),
    ("JOHN", "MRS JOHN DASHWOOD"),  # her husband's name
    ("CHARLES MUSGROVE", "MRS CHARLES MUSGROVE"),  # his wife
    ("COLONEL DENT", "MRS COLONEL DENT"),
    ("MISS ELLIOT", "MISS ANNE ELLIOT"),  # the eldest daughter and a younger one
    ("MRS SHIRLEY", "DR SHIRLEY"),  # the doctor's wife: his title says nothing of her
    ("MISS GREY", "REVEREND GREY"),
    ("LADY LUCAS", "MISS LUCAS"),  # Sir William's wife and their daughter
    ("VR", "VPL RESEARCH"),  # a field's abbreviation is no acronym alias
])
def test_unrelated_names(a, b):
    assert name_relation(a, b) is None


def test_honorifics_lead_and_suffixes_trail():
    assert name_tokens("DR. JOHN WATSON") == ("JOHN", "WATSON")
    assert name_tokens("ACME HOLDINGS INC.") == ("ACME", "HOLDINGS")
    assert name_tokens("BITWISE INDUSTRIES") == ("BITWISE",)
    assert name_tokens("MR.") == ("MR",)  # an honorific alone stays what it is


def test_keys_meet_where_names_relate():
    def share(a, b):
        return blocking_keys(a) & blocking_keys(b)
    assert share("HOLMES", "SHERLOCK HOLMES")
    assert share("IBM", "INTERNATIONAL BUSINESS MACHINES")
    assert share("EBENEZER SCROOGE", "EBENEZER SCROGOE")
    assert share("CHARLES DICKENS", "CHARLES DIKCENS")
    assert share("BEHINDTHETECH", "BEHIND THE TECH")
    assert not share("BOB CRATCHIT", "TINY TIM")
    assert "t:OF" not in blocking_keys("BANK OF ENGLAND")  # joiners open no block


def test_an_honorific_with_a_surname_or_a_word_of_no_given_name_is_a_familys():
    assert family_name("MRS FERRARS", "EDWARD FERRARS")  # his mother
    assert family_name("MRS FAIRFAX", "FAIRFAX ROCHESTER")  # her own surname
    assert family_name("MISS FAIRFAX", "FAIRFAX ROCHESTER")  # FAIRFAX is no given name
    assert not family_name("MISS ANNE", "ANNE ELLIOT")
    assert not family_name("SIR JOHN", "SIR JOHN MIDDLETON")
    assert not family_name("ANNE", "ANNE ELLIOT")  # no honorific


def test_a_rank_alone_meets_its_holders_in_a_block():
    assert "t:COLONEL" in blocking_keys("COLONEL") & blocking_keys("COLONEL BRANDON")
    assert name_relation("COLONEL", "BRANDON") is None


def test_a_diminutive_meets_its_given_name_where_it_is_of_one_only():
    assert "t:ELIZABETH" in blocking_keys("LIZZY")
    # ELIZA is a diminutive of ELIZABETH, LOUISA and LOUISE: Eliza Reed is no Louisa.
    assert name_relation("ELIZA", "LOUISA") is None
    assert name_relation("LIZZY BENNET", "ELIZABETH DARCY") is None


def test_a_knight_s_whole_name_is_no_short_form_of_a_longer_one():
    # SIR WALTER ELLIOT, the baronet, and WILLIAM WALTER ELLIOT, his heir.
    assert name_relation("SIR WALTER ELLIOT", "WILLIAM WALTER ELLIOT") is None
    assert name_relation("SIR WALTER", "SIR WALTER ELLIOT")[0] == "short_form"
    assert name_relation("WALTER ELLIOT", "WILLIAM WALTER ELLIOT")[0] == "short_form"


def test_one_name_under_two_men_s_titles_is_left_to_the_context():
    # MR and CAPTAIN WENTWORTH: the curate and his brother; MR and COLONEL BRANDON: one man.
    assert name_relation("MR WENTWORTH", "CAPTAIN WENTWORTH") == ("same_name", 0.6)
    assert name_relation("MR WENTWORTH", "WENTWORTH") == ("same_name", 1.0)
