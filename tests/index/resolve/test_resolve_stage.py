"""The aliases table the resolution stage writes: every alias where its mentions went."""

from graphrag_ray.index.elements import element_id
from graphrag_ray.index.resolve.clusters import Alias, Resolution
from graphrag_ray.index.resolve.homonyms import Split
from graphrag_ray.index.resolve.stage import alias_table

from conftest import provenance_of


def test_a_name_merged_whole_into_a_split_name_follows_its_mentions_by_document():
    # MR CARTER (document 0) and CAPTAIN CARTER (document 1) were merged into CARTER, whose
    # mentions in document 1 the homonym split then gave to CARTER (2).
    titles = ["CARTER", "MR CARTER", "CAPTAIN CARTER"]
    provenance = provenance_of([[0, 2], [1], [2, 3]], [0, 0, 1, 1])
    provenance.document_ids = ["jane-eyre", "pride-and-prejudice"]
    resolution = Resolution([Alias(1, 0, 1.0, "same_name", ""),
                             Alias(2, 0, 1.0, "same_name", "")])
    split = Split("CARTER", "CARTER (2)", [2, 3], [1], "its own context")
    table = alias_table(titles, ["c", "mr", "captain"], resolution, [], [split], provenance)
    rows = {(r["alias"], r["entity_title"]): (r["entity_id"], r["document_ids"])
            for r in table.to_pylist()}
    assert rows == {("MR CARTER", "CARTER"): ("c", ["jane-eyre"]),
                    ("CAPTAIN CARTER", "CARTER (2)"): (element_id("entity", "CARTER (2)"),
                                                       ["pride-and-prejudice"]),
                    ("CARTER", "CARTER (2)"): (element_id("entity", "CARTER (2)"),
                                               ["pride-and-prejudice"])}
    # Without a split, a whole merge holds everywhere (no documents).
    table = alias_table(titles, ["c", "mr", "captain"], resolution, [], [], provenance)
    assert {r["alias"]: r["document_ids"] for r in table.to_pylist()} == {
        "MR CARTER": [], "CAPTAIN CARTER": []}
