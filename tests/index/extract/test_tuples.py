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
    # "junk" is text between records, not a record.
    assert sorted(map(malformed_reason, parsed.malformed)) == [
        "entity record needs name, type, description",
        "relationship record needs source, target, description",
        "unknown record kind"]


def test_a_reply_without_any_record_is_counted_once():
    parsed = parse_graph_records("To solve this problem, we will use spaCy:\n\nimport spacy")
    assert list(map(malformed_reason, parsed.malformed)) == ["reply has no records"]
    # Nothing to find is not a fault: an empty reply or the completion marker alone.
    assert parse_graph_records("<|COMPLETE|>").malformed == []


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


# Shapes seen in real replies (tests/fixtures/real_replies/sources.json names where), written
# here in our own words so CI covers each without the third-party texts.
@pytest.mark.parametrize("reply", [
    # Markdown headings and a numbered list (GPT-4o, gleaning).
    '**Entities:**\n\n1. ("entity"<|>"Ada Brandt"<|>"person"<|>"Founder")\n'
    '2. ("entity"<|>"Keel Labs"<|>"organization"<|>"Turbines")\n\n**Relationships:**\n\n'
    '1. ("relationship"<|>"Ada Brandt"<|>"Keel Labs"<|>"Ada founded it"<|>9)\n<|COMPLETE|>',
    # The record delimiter in bold, and on lines of its own (Llama-3.1-Nemotron).
    'Here is the output in the requested format:\n\n**##**\n("entity"<|>"Ada Brandt"<|>"person"'
    '<|>"Founder")**##**\n("entity"<|>"Keel Labs"<|>"organization"<|>"Turbines") \n## \n'
    '("relationship"<|>"Ada Brandt"<|>"Keel Labs"<|>"Ada founded it"<|>9) \n## \n',
    # "relation" for relationship (GPT-4o, GPT-4o-mini).
    '("entity"<|>"Ada Brandt"<|>"person"<|>"Founder")##\n("entity"<|>"Keel Labs"<|>'
    '"organization"<|>"Turbines")##\n("relation"<|>"Ada Brandt"<|>"Keel Labs"<|>'
    '"Ada founded it"<|>9)##\n<|COMPLETE|>',
    # No parentheses, one record a line, inside an untagged fence after prose (DeepSeek-R1).
    'Here are the records:\n\n```\n"entity"<|>"Ada Brandt"<|>"person"<|>"Founder"##\n'
    '"entity"<|>"Keel Labs"<|>"organization"<|>"Turbines"##\n"relationship"<|>"Ada Brandt"'
    '<|>"Keel Labs"<|>"Ada founded it"<|>9##\n```\nThese are all of them.',
    # Records closed by "), " inside an outer parenthesis, a LightRAG-style relationship with
    # keywords before its strength, and a content_keywords record (DeepSeek-R1).
    'Here is the corrected output:\n\n(\n    ("entity"<|>"Ada Brandt"<|>"person"<|>"Founder"), \n'
    '    ("entity"<|>"Keel Labs"<|>"organization"<|>"Turbines"), \n    ("relationship"<|>'
    '"Ada Brandt"<|>"Keel Labs"<|>"Ada founded it"<|>"founding, ownership"<|>9)\n'
    '    ("content_keywords"<|>"turbines, founding")\n)',
    # An entity's type in the tag's place (Qwen 2.5).
    '("entity"<|>"Ada Brandt"<|>"person"<|>"Founder")##\n("organization"<|>"Keel Labs"<|>'
    '"organization"<|>"Turbines")##\n("relationship"<|>"Ada Brandt"<|>"Keel Labs"<|>'
    '"Ada founded it"<|>9)<|COMPLETE|>',
])
def test_records_in_the_shapes_real_models_write_them(reply):
    parsed = parse_graph_records(reply)
    assert [(e["title"], e["type"]) for e in parsed.entities] == [
        ("ADA BRANDT", "PERSON"), ("KEEL LABS", "ORGANIZATION")]
    assert [(r["source"], r["target"], r["description"], r["strength"])
            for r in parsed.relationships] == [("ADA BRANDT", "KEEL LABS", "Ada founded it", 9.0)]
    assert set(map(malformed_reason, parsed.malformed)) <= {"unknown record kind"}


def test_the_prompts_format_echoed_and_program_code_are_not_records():
    reply = ('Format each entity as ("entity"<|><entity_name><|><entity_type><|>'
             '<entity_description>):\n\n("entity"<|>"Keel Labs"<|>"organization"<|>"Turbines")##\n'
             '```python\nline = \'("entity"<|>\' + e["name"] + \'<|>\' + e["type"] + \')\'\n```\n')
    parsed = parse_graph_records(reply)
    assert [e["title"] for e in parsed.entities] == ["KEEL LABS"]
    assert list(map(malformed_reason, parsed.malformed)) == [
        "the format's placeholder, not a record"]


def test_a_record_cut_at_the_length_limit_is_counted_and_the_rest_kept():
    reply = ('("entity"<|>"Keel Labs"<|>"organization"<|>"Turbines")##\n'
             '("entity"<|>"Ada Br')
    parsed = parse_graph_records(reply)
    assert [e["title"] for e in parsed.entities] == ["KEEL LABS"]
    assert list(map(malformed_reason, parsed.malformed)) == [
        "entity record needs name, type, description"]


def test_a_stray_angle_bracket_from_the_slot_syntax_leaves_the_name():
    reply = '("relationship"<|>"Keel Labs"<|>"Ada Brandt"><|>"Ada founded it"<|>9)'
    assert parse_graph_records(reply).relationships[0]["target"] == "ADA BRANDT"
    # A name that starts with "<" is a name.
    entity = parse_graph_records('("entity"<|>"<3% of the fleet"<|>"measure"<|>"Share")')
    assert entity.entities[0]["title"] == "<3% OF THE FLEET"


def test_a_python_list_of_dicts_gives_its_records():
    reply = ("Here is the updated list of entities:\n\n```python\n[\n"
             "    {'entity_name': 'Ada Brandt', 'entity_type': 'person', "
             "'entity_description': 'Founder'},\n"
             "    {'entity_name': 'Keel Labs', 'entity_type': 'organization', "
             "'entity_description': 'Turbines'},\n]\n```")
    parsed = parse_graph_records(reply)
    assert [(e["title"], e["type"]) for e in parsed.entities] == [
        ("ADA BRANDT", "PERSON"), ("KEEL LABS", "ORGANIZATION")]
