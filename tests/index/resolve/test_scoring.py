"""A short form of a person's name is a name of that person; a short form of anything else
is often something else: a thing named after it, or a broader thing."""

import pytest

from graphrag_ray.index.resolve.scoring import (
    CorpusNames, given_names, names_another_thing, word_forms)

OWNERS = CorpusNames(organizations=frozenset({("MICROSOFT",)}))


@pytest.mark.parametrize("short, short_type, full, full_type, other", [
    ("KEVIN", "PERSON", "KEVIN SCOTT", "PERSON", False),  # first name
    ("SCOTT", "OTHER", "KEVIN SCOTT", "PERSON", False),  # surname
    ("CHRISTINA", "PERSON", "CHRISTINA WARREN", "OTHER", False),  # the full name untyped
    ("ROBLOX", "ORGANIZATION", "ROBLOX STUDIO", "OTHER", True),  # named after it
    ("TEXAS", "GEO", "TEXAS INSTRUMENTS", "OTHER", True),
    ("LINUX", "OTHER", "AZURE LINUX", "OTHER", True),  # a kind of it
    ("IOT", "OTHER", "AZURE IOT", "OTHER", True),
    ("AZURE", "OTHER", "MICROSOFT AZURE", "OTHER", False),  # its owner's name first
    ("DOCKER", "OTHER", "COMMERCIALLY SUPPORTED DOCKER ENGINE", "OTHER", True),
    # GENERAL is no honorific here: the engineering a degree is in is not engineering.
    ("ENGINEERING", "OTHER", "GENERAL ENGINEERING", "GEO", True),
])
def test_what_a_short_form_names(short, short_type, full, full_type, other):
    assert names_another_thing(short, short_type, full, full_type, OWNERS) is other


def test_an_acronym_after_an_owners_name_is_not_its_product():
    # With AZURE typed an organization, a short name after it may be its product
    # (MICROSOFT WINDOWS); one the corpus writes only in capitals is a field (IOT).
    owners = CorpusNames(organizations=frozenset({("AZURE",), ("MICROSOFT",)}),
                         acronyms=frozenset({"iot"}))
    assert names_another_thing("IOT", "OTHER", "AZURE IOT", "OTHER", owners)
    assert not names_another_thing("WINDOWS", "OTHER", "MICROSOFT WINDOWS", "OTHER", owners)


def test_an_acronym_opens_no_persons_name():
    # Offline extraction guesses PERSON for SCO UNIX; the corpus writes SCO only in capitals,
    # Kevin also capitalised (his speaker's label in capitals is no acronym).
    forms = word_forms(["The SCO Unix port was late.\nKEVIN SCOTT: Kevin here, said the sun.",
                        "XML HTTP requests."])
    common = forms.no_name_openers()
    assert {"sco", "xml", "sun"} <= common and "kevin" not in common
    corpus = CorpusNames.of(["SCO UNIX", "KEVIN SCOTT"], ["PERSON"] * 2, forms)
    assert names_another_thing("SCO", "OTHER", "SCO UNIX", "PERSON", corpus)
    assert not names_another_thing("KEVIN", "PERSON", "KEVIN SCOTT", "PERSON", corpus)
    # Both guessed persons, a one-word short name: a surname, unless an acronym opens the
    # longer (UNIX is no one's surname in SCO UNIX).
    assert names_another_thing("UNIX", "PERSON", "SCO UNIX", "PERSON", corpus)
    assert not names_another_thing("SCOTT", "PERSON", "KEVIN SCOTT", "PERSON", corpus)


def test_a_name_ending_in_a_word_the_corpus_writes_as_a_word_is_of_that_kind():
    # Guessed PERSON, all of them: the corpus says which endings are words, by count.
    forms = word_forms([
        "The Brady Bunch Movie is a comedy. The movie was a hit; a movie about a movie.",
        "The Heinkel HD 40 was built by Heinkel. St John Rivers came. Rivers spoke; two "
        "rivers met. Hank Williams sang, and Hank smiled. An Indian Hindi-language film, "
        "in Hindi; the language."])
    common, words = forms.no_name_openers(), forms.common_words()
    # Jobs is a word here, and Steve a given name: it opens two names and ends none.
    words |= {"jobs"}
    given = given_names(["STEVE JOBS", "STEVE WOZNIAK", "BRADY BUNCH", "BRADY BUNCH MOVIE",
                         "HEINKEL HD", "HEINKEL HE", "ERNST HEINKEL"])
    assert "STEVE" in given and not {"BRADY", "HEINKEL"} & given
    assert {"movie", "hd"} <= words and not {"rivers", "williams", "heinkel"} & words
    assert "rivers" in common  # (seen once in lower case: no person's name opens with it)
    for short, full, other in [("BRADY BUNCH", "BRADY BUNCH MOVIE", True),
                               ("HEINKEL", "HEINKEL HD", True),
                               ("HINDI", "INDIAN HINDI-LANGUAGE", True),
                               ("JOHN", "JOHN RIVERS", False), ("HANK", "HANK WILLIAMS", False),
                               ("STEVE", "STEVE JOBS", False)]:
        assert names_another_thing(short, "PERSON", full, "PERSON", CorpusNames(
            OWNERS.organizations, common, words, forms.acronyms(), given)) is other, (short, full)
    # Summed when tasks' counts are joined: two more in lower case outweigh the two
    # capitalised.
    assert "rivers" in (forms | word_forms(["rivers and rivers"])).common_words()


def test_the_pronouns_after_a_name_say_its_sex_where_they_are_clear():
    from graphrag_ray.index.resolve.scoring import WordForms, pronoun_votes
    votes = pronoun_votes(
        "Charlotte smiled, and she said no. Charlotte knew her mind. Bob came in and he sat. "
        "Edward saw Elinor and she wept. Edward told them his plan.")
    assert votes[("CHARLOTTE", "woman")] == 2 and votes[("BOB", "man")] == 1
    # "Edward saw Elinor and she": another name first, so the pronoun is not counted his.
    assert votes[("EDWARD", "woman")] == 0 and votes[("ELINOR", "woman")] == 1
    forms = WordForms(pronouns=votes)
    assert forms.sexes() == {"CHARLOTTE": "woman"}  # one vote says nothing
    assert (forms | forms).sexes()["BOB"] == "man"
