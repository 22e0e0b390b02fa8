"""The product as a user runs it: CLI and API, offline and through the test LLM server, on Ray."""

import json
import subprocess
import sys

import pytest

from graphrag_ray import GraphIndex, schema
from graphrag_ray.cli import main
from graphrag_ray.config import load_config
from graphrag_ray.errors import LLMError
from graphrag_ray.index.build import build_index
from graphrag_ray.index.reports.report_worker import SMALL_COMMUNITY
from graphrag_ray.llm import request_shape
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server

from conftest import CAROL_DIR, llm_config

pytestmark = pytest.mark.slow


def _check_index(path_or_url, config=None):
    store = IndexStore(str(path_or_url)).open()
    manifest = store.read_manifest()
    tables = {name: store.read_table(name) for name in (
        schema.DOCUMENTS, schema.TEXT_UNITS, schema.ENTITIES, schema.RELATIONSHIPS,
        schema.COMMUNITIES, schema.COMMUNITY_REPORTS)}
    assert tables[schema.ENTITIES].column_names == schema.ENTITY_COLUMNS
    assert tables[schema.RELATIONSHIPS].column_names == schema.RELATIONSHIP_COLUMNS
    assert tables[schema.COMMUNITY_REPORTS].column_names == schema.COMMUNITY_REPORT_COLUMNS
    assert tables[schema.TEXT_UNITS].column_names == schema.TEXT_UNIT_COLUMNS
    communities = tables[schema.COMMUNITIES].to_pylist()
    entity_ids = set(tables[schema.ENTITIES].column("id").to_pylist())
    for level in manifest.levels:
        members = [e for c in communities if c["level"] == level for e in c["entity_ids"]]
        assert sorted(members) == sorted(entity_ids), f"level {level} is not a partition"
    assert tables[schema.COMMUNITY_REPORTS].num_rows == len(communities)
    assert manifest.extraction.chunks == tables[schema.TEXT_UNITS].num_rows
    return manifest, tables


def test_offline_cli_index_and_query_on_ray(tmp_path):
    out = tmp_path / "index"
    run = subprocess.run([sys.executable, "-m", "graphrag_ray", "index", "--input", str(CAROL_DIR),
                          "--output", str(out), "--set", "runtime.engine=ray"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "communities per level" in run.stdout
    # Nothing red a user learns to ignore: no warning from Ray about our own private
    # instance's token, nor about the progress bars we turned off.
    assert "WARNING" not in run.stderr and "ERROR" not in run.stderr, run.stderr[-3000:]
    # Nor Ray's error-level line about actor constructor arguments (Ray Data's own), nor an
    # LLM usage table of zeros for a build that called no LLM.
    assert "core_worker" not in run.stderr and " E " not in run.stderr, run.stderr[-3000:]
    assert "LLM usage" not in run.stdout
    manifest, tables = _check_index(out)
    assert tables[schema.ENTITIES].num_rows > 100 and len(manifest.levels) >= 2
    assert manifest.llm_usage.total.calls == 0
    assert 50 < manifest.driver_peak_rss_mb < 2048
    query = subprocess.run([sys.executable, "-m", "graphrag_ray", "query", "--index", str(out),
                            "--method", "global", "--level", "1", "--json",
                            "Who is Bob Cratchit?"], capture_output=True, text=True, timeout=300)
    assert query.returncode == 0, query.stderr[-3000:]
    result = json.loads(query.stdout)
    assert "Cratchit" in result["answer"] and result["details"]["level"] == 1
    reports = tables[schema.COMMUNITY_REPORTS].to_pylist()
    level_one = {r["community"] for r in reports if r["level"] == 1}
    cited = result["sources"]["reports"]
    assert cited and set(cited) <= level_one


def test_llm_index_and_global_query_on_ray(ray_session, tmp_path):
    out = tmp_path / "index"
    with run_test_server() as server:
        config = llm_config(server, "claims.enabled=true", "runtime.num_workers=2",
                            "runtime.engine=ray")
        manifest = build_index(str(CAROL_DIR), str(out), config, progress=lambda _: None)
        stats = server.stats()
        manifest, tables = _check_index(out)
        assert manifest.extraction.failed_chunks == 0
        # Every chunk is extracted once but the book's Gutenberg header and licence (kept as
        # text units of their own, never extracted).
        assert manifest.extraction.boilerplate_chunks == 2
        chunks = manifest.extraction.chunks - manifest.extraction.boilerplate_chunks
        assert stats["by_kind"]["extract_graph"] == chunks
        assert stats["by_kind"]["claims"] == chunks
        # Every request said what it was (from Ray's actors too): none told by its wording.
        assert stats["undeclared_kinds"] == {}
        generations = tables[schema.COMMUNITY_REPORTS].column("generation").to_pylist()
        assert set(generations) - {SMALL_COMMUNITY} == {"llm"}  # no fallback
        assert manifest.reports_by_generation == {
            ("llm" if g == "llm" else "extractive"): generations.count(g)
            for g in set(generations)}
        covariates = IndexStore(str(out)).open().read_table(schema.COVARIATES)
        assert covariates.num_rows > 0 and covariates.column_names == schema.COVARIATE_COLUMNS
        index = GraphIndex.open(str(out), config=config)
        result = index.global_search("What happens to Scrooge and Marley?", level=0)
        map_calls = result.details["map_calls"]
        assert result.details["reduce_calls"] == 1 and map_calls >= 1
        assert result.answer.startswith("Summary of the analysts' points")
        level_zero = {r["community"] for r in tables[schema.COMMUNITY_REPORTS].to_pylist()
                      if r["level"] == 0}
        assert result.sources.reports and set(result.sources.reports) <= level_zero
        assert result.usage.calls == map_calls + 1 == result.llm_calls
        assert result.usage.prompt_tokens > 0
        scores = [p["score"] for p in result.details["points"]]
        assert scores == sorted(scores, reverse=True) and min(scores) > 0
        assert server.stats()["undeclared_kinds"] == {}  # the query's map and reduce too
        # Rows come back from Ray in completion order; the rerun must still hit the cache.
        requests = server.stats()["requests"]
        rerun = build_index(str(CAROL_DIR), str(out), config, progress=lambda _: None)
        assert server.stats()["requests"] == requests
        assert rerun.llm_usage.total.calls == 0


def test_flaky_llm_loses_no_chunk(carol_excerpt, tmp_path):
    """5xx without retries fails some chunks: they are recorded with reasons, the rest indexed;
    malformed replies are counted and reports fall back visibly."""
    with run_test_server(rate_5xx=0.3, rate_malformed=0.2, seed=4) as server:
        config = llm_config(server, "llm.max_retries=0", "runtime.engine=local",
                            "extraction.max_gleanings=0", "llm.max_parse_retries=0")
        manifest = build_index(str(carol_excerpt), str(tmp_path / "i"), config,
                               progress=lambda _: None)
    units = IndexStore(str(tmp_path / "i")).open().read_table(schema.TEXT_UNITS).to_pylist()
    failed = [u for u in units if u["extraction_status"] == "failed"]
    assert 0 < len(failed) < len(units)
    assert all("HTTP 503" in u["extraction_error"] for u in failed)
    assert manifest.extraction.failed_chunks == len(failed)
    assert manifest.extraction.malformed_records > 0
    # The test server's malformed reply: a name without type or description, and a record of
    # no known kind.
    assert manifest.extraction.malformed_by_reason == {
        "entity record needs name, type, description":
            manifest.extraction.malformed_records // 2,
        "unknown record kind": manifest.extraction.malformed_records // 2}
    generations = manifest.reports_by_generation
    assert generations.get("extractive fallback", 0) > 0 and generations.get("llm", 0) > 0


def test_every_chunk_failing_is_an_error(carol_excerpt, tmp_path):
    with run_test_server(fail_first=100, fail_status=503) as server:
        config = llm_config(server, "llm.max_retries=0", "runtime.engine=local")
        with pytest.raises(LLMError, match="every chunk failed extraction"):
            build_index(str(carol_excerpt), str(tmp_path / "i"), config, progress=lambda _: None)
    assert not (tmp_path / "i" / schema.MANIFEST).exists()


def test_index_on_a_non_local_filesystem(carol_excerpt):
    config = load_config(None, ["runtime.engine=local"])
    build_index(str(carol_excerpt), "memory://indexes/carol", config, progress=lambda _: None)
    index = GraphIndex.open("memory://indexes/carol")
    assert index.levels and index.table(schema.ENTITIES).num_rows > 10
    result = index.global_search("Who is Marley?", level=0)
    assert "Marley" in result.answer and result.sources.reports


def test_cli_errors_are_clear(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["index", "--input", str(empty), "--output", str(tmp_path / "o"),
                 "--set", "runtime.engine=local"]) == 2
    assert "error: no input documents" in capsys.readouterr().err
    assert main(["index", "--input", str(empty), "--output", str(tmp_path / "o"),
                 "--set", "chunks.sise=3"]) == 2
    assert "chunks.sise: unknown key" in capsys.readouterr().err
    assert main(["index", "--input", str(CAROL_DIR), "--output", str(tmp_path / "o"),
                 "--set", "extraction.method=llm", "--set", "llm.api_base=http://127.0.0.1:9/v1",
                 "--set", "llm.max_retries=0"]) == 2
    assert "cannot reach LLM endpoint http://127.0.0.1:9/v1" in capsys.readouterr().err
    assert main(["query", "--index", str(tmp_path / "nothing"), "question"]) == 2
    assert "no index at" in capsys.readouterr().err


def test_init_writes_settings_that_load(tmp_path, capsys):
    assert main(["init", str(tmp_path / "proj")]) == 0
    settings = tmp_path / "proj" / "settings.yaml"
    config = load_config(settings)
    assert config.prompts.dir == str((tmp_path / "proj" / "prompts").resolve())
    assert (tmp_path / "proj" / "prompts" / "extract_graph.txt").exists()
    assert main(["init", str(tmp_path / "proj")]) == 2
    assert "--force" in capsys.readouterr().err


def test_corpus_without_entities_indexes_and_query_says_why(tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.txt").write_text("nothing to see here. only lower case words.")
    assert main(["index", "--input", str(tmp_path / "in"), "--output", str(tmp_path / "o")]) == 0
    assert "no entities were extracted" in capsys.readouterr().err
    assert main(["query", "--index", str(tmp_path / "o"), "anything?"]) == 2
    assert "the index has no communities" in capsys.readouterr().err


def test_query_overrides_apply_on_top_of_the_manifest_config(carol_excerpt, tmp_path, capsys):
    build_index(str(carol_excerpt), str(tmp_path / "i"), load_config(None, ["runtime.engine=local"]),
                progress=lambda _: None)
    assert main(["query", "--index", str(tmp_path / "i"), "--json", "--set",
                 "global_search.default_level=0", "Who is Marley?"]) == 0
    assert json.loads(capsys.readouterr().out)["details"]["level"] == 0
    assert main(["query", "--index", str(tmp_path / "i"), "--set", "nope.key=1", "q"]) == 2
    assert "nope: unknown key" in capsys.readouterr().err


def test_ray_and_local_engines_build_the_same_index(ray_session, carol_excerpt, tmp_path):
    tables = {}
    for engine in ("local", "ray"):
        # Ray also merges in 3 hash partitions, as parallel tasks, and writes tables in parts:
        # the same logical tables come out.
        shards = ["merge.shards=3", "output.rows_per_part=50"] if engine == "ray" else []
        config = load_config(None, [f"runtime.engine={engine}", "runtime.batch_size=4", *shards])
        build_index(str(carol_excerpt), str(tmp_path / engine), config, progress=lambda _: None)
        tables[engine] = {name: IndexStore(str(tmp_path / engine)).open().read_table(name)
                          for name in (schema.ENTITIES, schema.RELATIONSHIPS,
                                       schema.COMMUNITIES, schema.COMMUNITY_REPORTS)}
    for name, table in tables["local"].items():
        assert table.equals(tables["ray"][name]), name


def test_the_build_summary_counts_files_read_and_skipped(carol_excerpt, capsys):
    (carol_excerpt / "slides.pptx").write_bytes(b"PK\x03\x04 ...")
    (carol_excerpt / "empty.txt").write_text("")
    out = carol_excerpt.parent / "index"
    assert main(["index", "--input", str(carol_excerpt), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "input: 1 file read, 2 skipped (see skipped_inputs in the manifest)" in printed
    manifest = IndexStore(str(out)).open().read_manifest()
    assert manifest.input_files == {"read": 1, "skipped": 2}
    assert sorted(s["path"] for s in manifest.skipped_inputs) == ["empty.txt", "slides.pptx"]


def test_index_takes_an_exported_api_key(carol_excerpt, monkeypatch, capsys):
    monkeypatch.delenv("GRAPHRAG_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-exported")
    with run_test_server(api_key="sk-exported") as server:
        code = main(["index", "--input", str(carol_excerpt), "--output",
                     str(carol_excerpt.parent / "index"), "--set", "extraction.method=llm",
                     "--set", f"llm.api_base={server.url}", "--set", "llm.model=test-model",
                     "--set", "runtime.engine=local", "--set", "extraction.max_gleanings=0"])
        assert code == 0, capsys.readouterr().err[-2000:]
        assert server.stats()["by_status"].get("401", 0) == 0


@pytest.mark.parametrize("personality, model", [
    ("reasoning", "o3-mini"), ("reasoning", "my-azure-deployment"), ("think", "qwen3-8b"),
    ("fenced", "gpt-4o-mini"), ("no_usage", "llama-3.1-8b-instruct"),
    ("error_200", "gpt-4-turbo")])
def test_each_endpoint_personality_indexes_every_chunk(personality, model, carol_excerpt,
                                                     monkeypatch):
    """The quirks of real endpoints (the test server's personalities) end to end: every
    chunk ok, reports from the LLM; an o-series model behind a name we cannot tell gets no
    max_tokens, temperature or logit_bias once the first rejections taught the job."""
    # The others wait for the first request's answer up to FIRST_ANSWER_WAIT_S (1 s: a 400
    # comes back at once, a long answer is not waited for). On a loaded machine a 400 took
    # longer in CI and a second request collected the same lesson; this server answers
    # everything at once, so here they may wait for it whatever the load.
    monkeypatch.setattr(request_shape, "FIRST_ANSWER_WAIT_S", 60.0)
    out = carol_excerpt.parent / "index"
    with run_test_server(personality=personality) as server:
        config = llm_config(server, f"llm.model={model}", "runtime.engine=local",
                            "llm.retry_base_delay_s=0.01")
        manifest = build_index(str(carol_excerpt), str(out), config, progress=lambda _: None)
        sent = server.stats()["chat_parameters"]
    store = IndexStore(str(out)).open()
    units = store.read_table(schema.TEXT_UNITS)
    assert set(units.column("extraction_status").to_pylist()) == {"ok"}
    assert manifest.extraction.malformed_records == 0
    reports = store.read_table(schema.COMMUNITY_REPORTS)
    # No fallback: every report by the LLM, but those of communities too small to ask for.
    assert reports.num_rows and \
        set(reports.column("generation").to_pylist()) - {SMALL_COMMUNITY} == {"llm"}
    if personality == "reasoning":
        # One rejection per parameter for a name we cannot tell, none for a name we can;
        # after them, none of the three.
        statuses = [status for status, _ in sent]
        assert statuses.count(400) == (2 if model == "my-azure-deployment" else 0)
        answered = [params for status, params in sent if status == 200]
        assert answered and all(params == ("max_completion_tokens",) for params in answered)
        assert manifest.llm_usage.rate_limiter["learned_request_shape"] == (
            None if model == "o3-mini" else
            "max_completion_tokens, no temperature, no logit_bias, +4096 reasoning tokens")


def test_azure_openai_by_config(carol_excerpt):
    """Azure OpenAI: the resource's endpoint, an api-version, the key in Azure's api-key
    header and a deployment name for the model, through openai's AzureOpenAI client."""
    out = carol_excerpt.parent / "index"
    with run_test_server(api_key="azure-key") as server:
        endpoint = server.url.removesuffix("/v1")
        config = load_config(None, [
            "extraction.method=llm", f"llm.api_base={endpoint}", "llm.api_version=2024-10-21",
            "llm.model=graph-extraction", "llm.api_key=azure-key", "runtime.engine=local",
            "extraction.max_gleanings=0", f"embeddings.api_base={endpoint}",
            "embeddings.api_version=2024-10-21", "embeddings.model=embedding-deployment",
            "embeddings.api_key=azure-key"])
        manifest = build_index(str(carol_excerpt), str(out), config, progress=lambda _: None)
        billed = server.stats()["usage_by_model"]
    assert set(billed) == {"graph-extraction", "embedding-deployment"}
    assert manifest.extraction.failed_chunks == 0
    assert manifest.embeddings.model == "embedding-deployment"
