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
