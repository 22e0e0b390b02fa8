"""What the corpus's titles say of a family's members, and which of them an honorific with
the surname alone can be."""

from graphrag_ray.index.resolve.standing import Standings

TITLES = ["GEORGE WICKHAM", "LYDIA WICKHAM", "MISS LYDIA", "SIR GEORGE", "MR WICKHAM",
          "SIR WALTER ELLIOT", "WILLIAM WALTER ELLIOT", "MR WILLIAM", "ANNE ELLIOT",
          "MISS ANNE ELLIOT", "ELIZABETH ELLIOT", "MISS ELIZABETH", "MISS ELLIOT", "JOHN REED",
          "MASTER REED", "MR JOHN", "MR REED", "LUCY STEELE", "MISS LUCY STEELE", "MISS STEELE",
          "MISS STEELES",
          "DICK MUSGROVE", "MISS MUSGROVE", "MRS JOHN DASHWOOD", "JOHN DASHWOOD",
          "MRS DASHWOOD"]


def test_a_man_s_honorific_is_the_one_man_of_the_family_not_a_titled_one_nor_a_boy():
    standings = Standings(TITLES)
    assert standings.fits("MR WICKHAM", "GEORGE WICKHAM")  # SIR GEORGE: George is a man's
    assert not standings.fits("MR WICKHAM", "LYDIA WICKHAM")  # MISS LYDIA: a woman's
    assert standings.fits("MR ELLIOT", "WILLIAM WALTER ELLIOT")
    assert not standings.fits("MR ELLIOT", "SIR WALTER ELLIOT")  # a baronet is never MR
    # MASTER REED: the family's boy; JOHN REED, never titled a man himself, may be he.
    assert not standings.fits("MR REED", "JOHN REED")
    # MRS JOHN DASHWOOD says John is a man; beside MRS DASHWOOD, a younger branch's.
    assert not standings.fits("MR DASHWOOD", "JOHN DASHWOOD")
    assert Standings(["JOHN DASHWOOD", "MRS JOHN DASHWOOD", "MR DASHWOOD"]).fits(
        "MR DASHWOOD", "JOHN DASHWOOD")


def test_pronouns_say_a_woman_s_given_name_not_a_man_s():
    titles = ["CAROLINE BINGLEY", "MISS BINGLEY", "DICK MUSGROVE", "MR MUSGROVE"]
    assert not Standings(titles).fits("MISS BINGLEY", "CAROLINE BINGLEY")
    said = {"CAROLINE": "woman", "DICK": "man"}
    assert Standings(titles, said).fits("MISS BINGLEY", "CAROLINE BINGLEY")
    # A man's honorific needs a man's title somewhere: DICK MUSGROVE, a dead son, is "he".
    assert not Standings(titles, said).fits("MR MUSGROVE", "DICK MUSGROVE")


def test_miss_with_the_surname_is_the_elder_daughter_whom_the_titles_call_a_woman():
    standings = Standings(TITLES)
    # MISS ANNE ELLIOT, MISS LUCY STEELE and MISS ELIZABETH: younger sisters, not MISS X.
    assert not standings.fits("MISS ELLIOT", "ANNE ELLIOT")
    assert not standings.fits("MISS ELLIOT", "ELIZABETH ELLIOT")
    assert not standings.fits("MISS STEELE", "LUCY STEELE")
    # Nothing says DICK is a woman's name.
    assert not standings.fits("MISS MUSGROVE", "DICK MUSGROVE")
    # Called MISS CHARLOTTE, with MARIA LUCAS, a sister, named too: a younger one.
    assert Standings(["CHARLOTTE LUCAS", "MISS CHARLOTTE", "MARIA LUCAS", "MISS MARIA",
                      "MISS LUCAS"]).fits("MISS LUCAS", "CHARLOTTE LUCAS") is False
    assert Standings(["CHARLOTTE LUCAS", "LADY CHARLOTTE HOPE", "MISS LUCAS"]).fits(
        "MISS LUCAS", "CHARLOTTE LUCAS")


def test_other_honorifics_and_other_surnames_fit_no_one():
    standings = Standings(TITLES)
    assert not standings.fits("MRS DASHWOOD", "JOHN DASHWOOD")
    assert not standings.fits("MR WICKHAM", "WILLIAM WALTER ELLIOT")
    assert not standings.fits("LADY ELLIOT", "ANNE ELLIOT")


def test_an_only_daughter_called_by_her_given_name_is_still_miss_with_the_surname():
    # MISS JANE EYRE marks a younger sister where there is an elder; Jane is her family's
    # only woman, and no MISS EYRES are written. The MISS STEELES say Lucy has a sister.
    titles = ["JANE EYRE", "MISS JANE EYRE", "JOHN EYRE", "MR JOHN", "MISS EYRE", "LUCY STEELE",
              "MISS LUCY STEELE", "MISS STEELE", "MISS STEELES"]
    standings = Standings(titles)
    assert standings.fits("MISS EYRE", "JANE EYRE")
    assert not standings.fits("MISS STEELE", "LUCY STEELE")
    assert "JANE" in standings.given_names and "EYRE" not in standings.given_names


def test_mr_is_no_man_called_by_a_rank_and_a_rank_is_only_its_holder():
    titles = ["FREDERICK WENTWORTH", "CAPTAIN FREDERICK WENTWORTH", "MR WENTWORTH",
              "CAPTAIN WENTWORTH", "FITZWILLIAM DARCY", "MR FITZWILLIAM DARCY"]
    standings = Standings(titles)
    assert not standings.fits("MR WENTWORTH", "FREDERICK WENTWORTH")  # the curate, his brother
    assert standings.fits("CAPTAIN WENTWORTH", "FREDERICK WENTWORTH")
    assert not standings.fits("COLONEL DARCY", "FITZWILLIAM DARCY")
    assert standings.fits("MR DARCY", "FITZWILLIAM DARCY")
