"""Language data for entity resolution (`graphrag_ray/languages/`): titles, ranks, kind
words, pronouns and nicknames read from a language's file, chosen by
`resolution.language_data`, and none when none is named."""

import pytest

from graphrag_ray import languages
from graphrag_ray.config import load_config
from graphrag_ray.errors import ConfigError
from graphrag_ray.index.resolve.names import bearer, formal_names, name_relation, name_tokens
from graphrag_ray.index.resolve.scoring import pronoun_votes


@pytest.fixture
def no_language_data():
    languages.use([])
    try:
        yield
    finally:
        languages.use(languages.DEFAULT)


def test_english_is_read_from_its_file_and_is_the_default():
    english = languages.load(("en",))
    assert {"MR", "MRS", "DR"} <= english.honorifics and english.nicknames
    assert english.honorific_bearers["MRS"] == "married woman"
    assert load_config(None, []).resolution.language_data == ["en"]
    assert name_tokens("MR. HOLMES") == ("HOLMES",) and bearer("MRS BENNET") == "married woman"
    assert "ELIZABETH" in formal_names("LIZZY")


def test_without_language_data_names_are_their_tokens(no_language_data):
    assert name_tokens("MR. HOLMES") == ("MR", "HOLMES")
    assert bearer("MRS BENNET") is None
    assert formal_names("LIZZY") == frozenset()
    assert name_relation("LIZZY BENNET", "ELIZABETH BENNET") is None
    assert not pronoun_votes("Alice smiled. She said so.")


def test_switching_back_restores_what_the_caches_held(no_language_data):
    assert name_tokens("DR WATSON") == ("DR", "WATSON")
    languages.use(["en"])
    assert name_tokens("DR WATSON") == ("WATSON",)


def test_an_unknown_language_is_refused_where_the_config_is_read():
    with pytest.raises(ConfigError, match="no language data xx .*there is: en"):
        load_config(None, ["resolution.language_data=[xx]"])
    assert load_config(None, ["resolution.language_data=[]"]).resolution.language_data == []
