from graphrag_ray.index.extract.nlp_extractor import extract_nlp


def test_names_types_and_cooccurrence():
    text = ("Darkness fell over London. Mr. Ebenezer Scrooge walked to the Bank of England "
            "with Bob Cratchit. The darkness was thick. Later, Bob Cratchit said goodbye.")
    records = extract_nlp(text)
    titles = {e["title"]: e["type"] for e in records.entities}
    assert "EBENEZER SCROOGE" in titles and "BANK OF ENGLAND" in titles
    assert "BOB CRATCHIT" in titles
    assert "DARKNESS" not in titles  # sentence-initial common word: also used in lower case
    assert titles["BANK OF ENGLAND"] == "ORGANIZATION"
    pairs = {(r["source"], r["target"]) for r in records.relationships}
    assert ("BANK OF ENGLAND", "EBENEZER SCROOGE") in pairs
    assert all(r["source"] < r["target"] for r in records.relationships)


def test_text_without_names_yields_nothing():
    records = extract_nlp("there is nothing here. only lower case words, all the way down.")
    assert records.entities == [] and records.relationships == []


def test_shouting_is_ignored():
    records = extract_nlp("THE FOUNDATION MAKES NO WARRANTY OF ANY KIND EXPRESS OR IMPLIED.")
    assert records.entities == []


def test_names_with_diacritics_stay_whole_and_dashes_never_join_words():
    """Latin-script names in any language (the offline default used to keep 'FRAN' of
    'François' and 'MONTR' of 'Montréal'); hyphenated names stay one; a double dash (an
    em-dash typed as '--') ends a name."""
    text = ("André met François in Montréal. Then Señor González visited Televisión "
            "Española with Jean-Luc Picard. The Łódź office wrote to Ærø. It was Christmas "
            "Eve--old Scrooge sat in his counting-house.")
    titles = [e["title"] for e in extract_nlp(text).entities]
    assert {"FRANÇOIS", "MONTRÉAL", "SEÑOR GONZÁLEZ", "TELEVISIÓN ESPAÑOLA", "JEAN-LUC PICARD",
            "ŁÓDŹ", "ÆRØ"} <= set(titles)
    assert not any(fragment in titles for fragment in ("FRAN", "MONTR", "GONZ", "TELEVISI"))
    assert not any("--" in title for title in titles)
