"""A short form of a person's name is a name of that person; a short form of anything else
is often something else: a thing named after it, or a broader thing."""

import pytest

from graphrag_ray.index.resolve.scoring import names_another_thing, word_forms

OWNERS = frozenset({("MICROSOFT",)})


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


def test_an_acronym_opens_no_persons_name():
    # Offline extraction guesses PERSON for SCO UNIX; the corpus writes SCO only in capitals,
    # Kevin also capitalised (his speaker's label in capitals is no acronym).
    forms = word_forms(["The SCO Unix port was late.\nKEVIN SCOTT: Kevin here, said the sun.",
                        "XML HTTP requests."])
    common = forms.no_name_openers()
    assert {"sco", "xml", "sun"} <= common and "kevin" not in common
    assert names_another_thing("SCO", "OTHER", "SCO UNIX", "PERSON", OWNERS, common)
    assert not names_another_thing("KEVIN", "PERSON", "KEVIN SCOTT", "PERSON", OWNERS, common)


def test_the_pronouns_after_a_name_say_its_sex_where_they_are_clear():
    from graphrag_ray.index.resolve.scoring import WordForms, pronoun_votes
    votes = pronoun_votes(
        "Charlotte smiled, and she said no. Charlotte knew her mind. Bob came in and he sat. "
        "Edward saw Elinor and she wept. Edward told them his plan.")
    assert votes[("CHARLOTTE", "woman")] == 2 and votes[("BOB", "man")] == 1
    # "Edward saw Elinor and she": another name first, so the pronoun is not counted his.
    assert votes[("EDWARD", "woman")] == 0 and votes[("ELINOR", "woman")] == 1
    forms = WordForms(set(), set(), set(), votes)
    assert forms.sexes() == {"CHARLOTTE": "woman"}  # one vote says nothing
    assert (forms | forms).sexes()["BOB"] == "man"
