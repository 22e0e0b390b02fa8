import re

import pytest

from graphrag_ray.config import GraphRagConfig, config_from_data, interpolate_env, load_config
from graphrag_ray.errors import ConfigError
from graphrag_ray.storage import Manifest


def test_env_interpolation_with_default_and_unset():
    env = {"KEY": "secret"}
    assert interpolate_env("a: ${KEY}\nb: ${MISSING:-fallback}\nc: '${MISSING:-}'", env) == \
        "a: secret\nb: fallback\nc: ''"


def test_an_unset_variable_is_an_error_naming_it_the_key_and_the_file(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    path = tmp_path / "settings.yaml"
    path.write_text("llm:\n  api_key: ${NO_SUCH_KEY_VAR}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "NO_SUCH_KEY_VAR is not set" in message and "llm.api_key" in message
    assert str(path) in message


def test_yaml_env_and_set_overrides(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_API_KEY", "sk-test-123")
    path = tmp_path / "settings.yaml"
    path.write_text("llm:\n  api_key: ${TEST_API_KEY}\n  model: m1\nchunks:\n  size: 300\n")
    config = load_config(path, ["chunks.overlap=50", "extraction.entity_types=[person, ship]"])
    assert config.llm.api_key.get_secret_value() == "sk-test-123"
    assert config.chunks.size == 300 and config.chunks.overlap == 50
    assert config.extraction.entity_types == ["person", "ship"]
    # A value that is not YAML is its text (it stopped the command with a YAML traceback).
    odd = load_config(None, ["extraction.tuple_delimiter=|~|", "extraction.record_delimiter=;;"])
    assert (odd.extraction.tuple_delimiter, odd.extraction.record_delimiter) == ("|~|", ";;")


def test_unknown_key_names_key_and_file(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text("chunks:\n  sise: 300\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "chunks.sise" in str(info.value) and str(path) in str(info.value)


def test_bad_value_and_bad_set():
    with pytest.raises(ConfigError, match="chunks.size"):
        load_config(None, ["chunks.size=-5"])
    with pytest.raises(ConfigError, match="key.path=value"):
        load_config(None, ["chunks.size"])
    with pytest.raises(ConfigError, match="overlap"):
        load_config(None, ["chunks.size=100", "chunks.overlap=100"])


def test_missing_file_and_invalid_yaml(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("chunks: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)


def test_public_dict_never_holds_the_api_key():
    config = load_config(None, ["llm.api_key=sk-very-secret"])
    assert "sk-very-secret" not in str(config.public_dict())
    assert "sk-very-secret" not in repr(config)


def test_auto_methods_follow_extraction():
    assert not GraphRagConfig().uses_llm("auto")
    assert load_config(None, ["extraction.method=llm"]).uses_llm("auto")
    assert GraphRagConfig().uses_llm("llm")


def test_an_older_index_manifest_with_a_renamed_key_still_opens():
    from graphrag_ray.config import config_from_manifest

    manifest = Manifest.read({"config": {"merge": {"instances_per_shard": 250000, "shards": 3},
                                         "retired_section": {"x": 1}, "chunks": {"size": 300}}},
                             "an old index")
    config = config_from_manifest(manifest)
    assert config.merge.shards == 3 and config.chunks.size == 300
    with pytest.raises(ConfigError, match="unknown key"):
        config_from_manifest(manifest, ["merge.typo=1"])  # the user's own keys stay checked


def test_an_older_manifests_default_in_process_limit_gives_way_to_the_cores():
    """Manifests hold every setting: one written while 256 chunks was the default limit
    would send every update to Ray; a limit the user chose stays."""
    from graphrag_ray.config import config_from_manifest

    for held, now in ((256, None), (300, 300)):
        manifest = Manifest.read({"config": {"runtime": {"engine": "ray",
                                                         "local_max_chunks": held}}}, "old")
        config = config_from_manifest(manifest)
        assert config.runtime.local_max_chunks == now and config.runtime.engine == "auto"


def test_the_old_tokenizer_key_still_works_with_a_deprecation_warning(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text("chunks:\n  size: 300\n  encoding_model: p50k_base\n", encoding="utf-8")
    with pytest.warns(FutureWarning, match="chunks.encoding_model .* set tokenizer.encoding"):
        config = load_config(path)
    assert config.tokenizer.encoding == "p50k_base" and config.chunks.size == 300


def test_an_old_manifest_keeps_its_tokenizer_without_a_warning(recwarn):
    from graphrag_ray.config import config_from_manifest

    config = config_from_manifest(Manifest.read(
        {"config": {"chunks": {"encoding_model": "p50k_base"}}}, "an old index"))
    assert config.tokenizer.encoding == "p50k_base"
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]


def test_lances_own_settings_have_their_section_and_the_old_keys_still_work(tmp_path,
                                                                             recwarn):
    """`vector_index` holds what every store shares; Lance's settings are `vector_index.lance`
    (a plugin's, `vector_index.options`). A config or an index manifest written with them at
    the section's top still gets them: the file with a warning, the manifest silently."""
    from graphrag_ray.config import config_from_manifest

    path = tmp_path / "settings.yaml"
    path.write_text("vector_index:\n  ann_min_rows: 500\n  nprobes: 20\n"
                    "  lance:\n    refine_factor: 5\n", encoding="utf-8")
    with pytest.warns(FutureWarning, match="vector_index.nprobes .* vector_index.lance.nprobes"):
        config = load_config(path)
    lance = config.vector_index.lance
    assert (config.vector_index.ann_min_rows, lance.nprobes, lance.refine_factor) == (500, 20, 5)
    recwarn.clear()
    old = config_from_manifest(Manifest.read(
        {"config": {"vector_index": {"index_type": "IVF_PQ", "retrain_below_share": 0.25}}},
        "an old index"))
    assert (old.vector_index.lance.index_type, old.vector_index.lance.retrain_below_share) \
        == ("IVF_PQ", 0.25)
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]
    chosen = config_from_data({}, ["vector_index.lance.nprobes=7",
                                   "vector_index.options.m=16"])
    assert chosen.vector_index.lance.nprobes == 7 and chosen.vector_index.options == {"m": 16}
    with pytest.raises(ConfigError, match="vector_index.lance"):
        config_from_data({}, ["vector_index.lance.nprobe=7"])


def test_the_api_key_comes_from_the_environment_when_the_config_gives_none(monkeypatch,
                                                                          tmp_path):
    monkeypatch.delenv("GRAPHRAG_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-openai-var")
    assert load_config(None).llm.api_key.get_secret_value() == "sk-from-openai-var"
    monkeypatch.setenv("GRAPHRAG_API_KEY", "sk-ours")
    config = load_config(None)
    assert config.llm.api_key.get_secret_value() == "sk-ours"
    assert config.embeddings.api_key.get_secret_value() == "sk-ours"
    assert "sk-ours" not in str(config.public_dict())
    path = tmp_path / "settings.yaml"
    path.write_text("llm:\n  api_key: sk-in-the-file\n")
    assert load_config(path).llm.api_key.get_secret_value() == "sk-in-the-file"


def test_the_old_logit_bias_switch_moves_to_the_llm_section(tmp_path):
    """extraction.use_logit_bias: false forbade it; true meant "where accepted", which is
    what llm.logit_bias's auto (None) decides now."""
    path = tmp_path / "settings.yaml"
    path.write_text("extraction:\n  use_logit_bias: false\n")
    with pytest.warns(FutureWarning, match="llm.logit_bias"):
        assert load_config(path).llm.logit_bias is False
    path.write_text("extraction:\n  use_logit_bias: true\n")
    with pytest.warns(FutureWarning):
        assert load_config(path).llm.logit_bias is None


def test_batch_settings_that_cannot_work_are_refused_with_the_reason():
    with pytest.raises(ConfigError, match="llm.batch needs the response cache"):
        load_config(None, ["llm.batch=true", "cache.enabled=false"])
    with pytest.raises(ConfigError, match="embeddings.batch needs an embeddings endpoint"):
        load_config(None, ["embeddings.batch=true"])
    with pytest.raises(ConfigError, match="embeddings.batch is true or false"):
        load_config(None, ["embeddings.batch=extraction", "embeddings.api_base=http://x/v1"])
    assert load_config(None, ["embeddings.batch=true",
                              "embeddings.api_base=http://x/v1"]).embeddings.batch is True


@pytest.mark.parametrize("url, says", [
    ("http://127.0.0.1:PORT/v1", "is not a URL"),  # a template's placeholder left in
    ("localhost:abc", "is not an http(s) URL with a host"),
    ("ftp://models.example/v1", "is not an http(s) URL with a host")])
def test_an_endpoint_that_is_no_url_is_named_when_the_config_is_read(url, says, capsys):
    from graphrag_ray.cli import main

    for key in ("llm.api_base", "embeddings.api_base", "eval.judge_api_base"):
        with pytest.raises(ConfigError, match=rf"{key}: .*{re.escape(says)}"):
            load_config(None, [f"{key}={url}"])
    assert main(["doctor", "--set", f"llm.api_base={url}"]) == 2
    err = capsys.readouterr().err
    assert "llm.api_base" in err and "Traceback" not in err and "InvalidURL" not in err
    assert load_config(None, ["llm.api_base=http://localhost:8000/v1"]).llm.api_base


def test_a_boolean_for_a_number_is_refused_and_a_misspelled_key_gets_a_suggestion():
    with pytest.raises(ConfigError, match="max_gleanings is a number, not true"):
        load_config(None, ["extraction.max_gleanings=true"])
    with pytest.raises(ConfigError, match="local_serch: unknown key; did you mean "
                                          "local_search?"):
        load_config(None, ["local_serch.top_k_entities=3"])
    with pytest.raises(ConfigError, match="did you mean local_search.top_k_entities?"):
        load_config(None, ["local_search.top_k_entitis=3"])
    assert load_config(None, ["extraction.glean_check=true"]).extraction.glean_check is True
