"""The measures against hand labels (`testing/resolution_labels.py`) on rows written here."""

from graphrag_testkit.resolution_labels import merge_quality, split_quality

LABELS = {"homonyms": {"DICK": [["carol.txt"], ["persuasion.txt", "persuasion-2.txt"]]},
          "one_across_documents": ["ENGLAND"]}


def row(alias, title, method, documents):
    return {"alias": alias, "entity_title": title, "method": method, "document_ids": documents}


def test_a_name_resolved_in_one_book_and_split_in_another_is_apart_where_the_bearers_differ():
    aliases = [row("DICK", "DICK WILKINS", "in_document:short_form", ["carol.txt"])]
    quality = split_quality(aliases, LABELS)
    # carol apart from both Persuasion files; the two Persuasion files together.
    assert quality["split_precision"] == 1.0 and quality["split_recall"] == 1.0
    assert quality["names_split"] == 0  # resolved, not split


def test_one_bearers_documents_set_apart_count_against_the_split_and_a_place_split_too():
    aliases = [row("DICK", "DICK (2)", "homonym_split", ["persuasion-2.txt"]),
               row("ENGLAND", "ENGLAND (2)", "homonym_split", ["persuasion.txt"])]
    quality = split_quality(aliases, LABELS)
    # right: carol/persuasion-2; wrong: persuasion/persuasion-2 and ENGLAND; missed: carol/
    # persuasion.
    assert quality["split_precision"] == round(1 / 3, 3)
    assert quality["split_recall"] == 0.5
    assert quality["wrong_splits"] == ["ENGLAND"]


def test_a_name_merged_whole_and_one_resolved_in_a_document_to_the_same_entity_are_one():
    labels = {"same": [["MR ROCHESTER", "ROCHESTER"]], "same_where_named": [],
              "different": []}
    aliases = [row("MR ROCHESTER", "FAIRFAX ROCHESTER", "short_form", []),
               row("ROCHESTER", "FAIRFAX ROCHESTER", "in_document:short_form", ["eyre.txt"])]
    assert merge_quality(aliases, labels)["recall"] == 1.0
    aliases[1] = row("ROCHESTER", "MRS ROCHESTER", "in_document:short_form", ["eyre.txt"])
    assert merge_quality(aliases, labels)["recall"] == 0.0


def test_a_name_merged_whole_into_one_resolved_in_a_document_goes_with_it_there():
    # MR WICKHAM was merged into WICKHAM, which Pride and Prejudice resolves to GEORGE
    # WICKHAM: the fold gives MR WICKHAM's mentions there to him too.
    labels = {"same": [["MR WICKHAM", "GEORGE WICKHAM"]], "same_where_named": [],
              "different": []}
    aliases = [row("MR WICKHAM", "WICKHAM", "same_name", []),
               row("WICKHAM", "GEORGE WICKHAM", "in_document:short_form", ["pride.txt"])]
    assert merge_quality(aliases, labels)["recall"] == 1.0
    aliases[1] = row("WICKHAM", "LYDIA WICKHAM", "in_document:short_form", ["pride.txt"])
    assert merge_quality(aliases, labels)["recall"] == 0.0


def test_a_name_resolved_away_in_every_document_is_typed_by_where_its_mentions_went():
    from graphrag_testkit.resolution_labels import type_quality
    labels = {"types": {"DAVID": ["PERSON"]}}
    aliases = [row("DAVID", "DAVID BAKER", "in_document:short_form", ["ep1"]),
               row("DAVID", "DAVID BASZUCKI", "in_work:short_form", ["ep2"])]
    types = {"DAVID BAKER": "PERSON", "DAVID BASZUCKI": "PERSON"}
    assert type_quality(types, aliases, labels)["types_judged"] == 1
    assert type_quality(types, aliases, labels)["wrong_type_share"] == 0.0
    types["DAVID BASZUCKI"] = "GEO"
    assert type_quality(types, aliases, labels)["wrong_types"] == [("DAVID", "GEO", ["PERSON"])]
