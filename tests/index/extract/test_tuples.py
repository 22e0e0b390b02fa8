import pytest

from graphrag_ray.index.extract.tuples import (
    Delimiters, malformed_reason, normalize_name, parse_claim_records, parse_graph_records)


def test_parses_entities_and_relationships():
    text = ('("entity"<|>Ada Brandt<|>person<|>Founder of Keel Labs)##'
            '("entity"<|>"KEEL LABS"<|>organization<|>Builds turbines)##'
            '("relationship"<|>ADA BRANDT<|>KEEL LABS<|>Ada founded it<|>9)<|COMPLETE|>')
    parsed = parse_graph_records(text)
    assert [(e["title"], e["type"]) for e in parsed.entities] == [
        ("ADA BRANDT", "PERSON"), ("KEEL LABS", "ORGANIZATION")]
    assert parsed.relationships == [{"source": "ADA BRANDT", "target": "KEEL LABS",
                                     "description": "Ada founded it", "strength": 9.0}]
    assert parsed.malformed == []


def test_records_on_lines_without_record_delimiter_and_missing_strength():
    text = ('("entity"<|>A<|>PERSON<|>x)\n("entity"<|>B<|>PERSON<|>y)\n'
            '("relationship"<|>A<|>B<|>knows)\n<|COMPLETE|>')
    parsed = parse_graph_records(text)
    assert len(parsed.entities) == 2
    assert parsed.relationships[0]["strength"] == 1.0


def test_malformed_records_are_counted_with_reasons():
    text = '("entity"<|>ONLY)##("relationship"<|>A)##("banana"<|>x<|>y)##junk'
    parsed = parse_graph_records(text)
    assert parsed.entities == [] and parsed.relationships == []
    assert len(parsed.malformed) == 4
    assert sorted(map(malformed_reason, parsed.malformed)) == [
        "entity record needs name, type, description",
        "relationship record needs source, target, description",
        "unknown record kind", "unknown record kind"]


def test_custom_delimiters():
    d = Delimiters(tuple="|", record=";;", completion="DONE")
    parsed = parse_graph_records('("entity"|x|geo|a place);;("entity"|y|geo|b)DONE', d)
    assert [e["title"] for e in parsed.entities] == ["X", "Y"]


def test_names_normalize():
    assert normalize_name('  "Tiny   Tim" ') == "TINY TIM"


def test_claims():
    text = ('("claim"<|>ACME<|>NONE<|>FRAUD<|>suspected<|>2020-01-01<|>NONE<|>'
            'ACME may have misreported<|>the filing says so)##("claim"<|>too<|>short)')
    parsed = parse_claim_records(text)
    assert parsed.claims[0]["subject_id"] == "ACME"
    assert parsed.claims[0]["status"] == "SUSPECTED"
    assert parsed.claims[0]["source_text"] == "the filing says so"
    assert len(parsed.malformed) == 1


@pytest.mark.parametrize("reply", [
    # An object of lists, with the keys the tuple prompt names.
    '{"entities": [{"entity_name": "Ada Brandt", "entity_type": "person", "entity_description":'
    ' "An engineer"}], "relationships": [{"source_entity": "Ada Brandt", "target_entity": '
    '"Keel Labs", "relationship_description": "She founded it", "relationship_strength": 8}]}',
    # A list of records, each saying its kind.
    '[{"type": "entity", "name": "Ada Brandt", "entity_type": "PERSON", "description": '
    '"An engineer"}, {"type": "relationship", "source": "Ada Brandt", "target": "Keel Labs", '
    '"description": "She founded it", "strength": "8"}]',
    # The tuples as arrays, inside a fence, after a sentence.
    'Here are the records:\n```json\n[["entity", "Ada Brandt", "PERSON", "An engineer"], '
    '["relationship", "Ada Brandt", "Keel Labs", "She founded it", 8]]\n```',
])
def test_json_where_tuples_were_asked_for_gives_the_same_records(reply):
    parsed = parse_graph_records(reply)
    assert parsed.entities == [{"title": "ADA BRANDT", "type": "PERSON",
                                "description": "An engineer"}]
    assert parsed.relationships == [{"source": "ADA BRANDT", "target": "KEEL LABS",
                                     "description": "She founded it", "strength": 8.0}]
    assert parsed.malformed == []


def test_the_record_delimiter_on_its_own_line_and_trailing_spaces():
    """As local models write it (one record per line, `##` between, spaces after)."""
    reply = ('("entity"<|>中国人<|>Person<|>The Chinese people.)  \n##  \n'
             '("entity"<|>牛腱子<|>Product<|>A cut of beef.)  \n##  \n'
             '("relationship"<|>中国人<|>牛腱子<|>They buy it.<|>7)  \n<|COMPLETE|>')
    parsed = parse_graph_records(reply)
    assert [e["title"] for e in parsed.entities] == ["中国人", "牛腱子"]
    assert parsed.relationships[0]["strength"] == 7.0 and parsed.malformed == []
