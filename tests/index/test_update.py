"""`update`: an index brought up to date with its corpus pays only for what is new, and ends
where a full build of the new corpus ends (entities, relationships, summaries), with the
communities that did not move keeping their ids and reports."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from graphrag_ray import schema
from graphrag_ray.index.build import build_index
from graphrag_ray.index.update import update_index
from graphrag_ray.storage import IndexStore
from graphrag_testkit.llm_server import run_test_server

from conftest import (CAROL_DIR, cached_answers, kill_with_no_answer_in_transit, llm_config,
                      wait_for_calls)

pytestmark = pytest.mark.slow

QUIET = {"progress": lambda _: None}


def _staves(folder: Path, names: list[str]) -> Path:
    """Files cut from A Christmas Carol (~2.5k tokens each), named a..e."""
    text = (CAROL_DIR / "book.txt").read_text(encoding="utf-8")
    start = text.find("STAVE ONE")
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        offset = start + "abcde".index(name) * 11_000
        (folder / f"{name}.txt").write_text(text[offset:offset + 11_000], encoding="utf-8")
    return folder


def _config(server, out: Path, engine: str = "local"):
    return llm_config(server, f"runtime.engine={engine}", f"cache.url={out}-cache")


def _graph(url: str) -> tuple[dict, dict]:
    version = IndexStore(url).open()
    entities = version.read_table(schema.ENTITIES).to_pylist()
    relationships = version.read_table(schema.RELATIONSHIPS).to_pylist()
    return ({e["title"]: (e["type"], e["description"], sorted(e["text_unit_ids"]))
             for e in entities},
            {(r["source"], r["target"]): (r["description"], r["weight"]) for r in relationships})


def _tables(url: str, name: str) -> list[dict]:
    return IndexStore(url).open().read_table(name).to_pylist()


def _assert_partitions(url: str) -> None:
    entity_ids = {e["id"] for e in _tables(url, schema.ENTITIES)}
    by_level: dict[int, list[str]] = {}
    for community in _tables(url, schema.COMMUNITIES):
        by_level.setdefault(community["level"], []).extend(community["entity_ids"])
    for level, members in by_level.items():
        assert sorted(members) == sorted(entity_ids), f"level {level} is not a partition"


def test_adding_a_document_pays_for_it_alone_and_equals_a_full_build(tmp_path):
    corpus = _staves(tmp_path / "corpus", ["a", "b", "c"])
    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    with run_test_server() as server:
        first = build_index(str(corpus), index, _config(server, tmp_path / "index"), **QUIET)
        before = {c["community"]: c for c in _tables(index, schema.COMMUNITY_REPORTS)}
        members_before = {c["community"]: sorted(c["entity_ids"])
                          for c in _tables(index, schema.COMMUNITIES)}
        _staves(corpus, ["d"])
        server.reset()
        updated = update_index(index, str(corpus), _config(server, tmp_path / "index"), **QUIET)
        calls = server.stats()["by_kind"]
        build_index(str(corpus), full, _config(server, tmp_path / "full"), **QUIET)
    update = updated.update
    assert update["documents"] == {"added": 1, "changed": 0, "deleted": 0, "unchanged": 3}
    assert update["chunks"]["reused"] == first.extraction.chunks
    new_chunks = update["chunks"]["extracted"]
    assert 0 < new_chunks < first.extraction.chunks
    # Extraction was asked of the new document's chunks only.
    assert calls["extract_graph"] == new_chunks
    # Same graph as a full build of the four documents.
    assert _graph(index) == _graph(full)
    _assert_partitions(index)
    # The communities that kept their members kept their ids and their reports (no call).
    changes = update["communities"]
    assert changes["per_level"]["0"]["kept"] > 0
    assert 0 < changes["level0_adjusted_rand_index"] <= 1
    after = {c["community"]: c for c in _tables(index, schema.COMMUNITIES)}
    kept = [cid for cid, c in after.items()
            if members_before.get(cid) == sorted(c["entity_ids"])]
    assert kept
    reports_after = {c["community"]: c for c in _tables(index, schema.COMMUNITY_REPORTS)}
    same_reports = [cid for cid in kept if reports_after[cid]["full_content"]
                    == before[cid]["full_content"]]
    assert same_reports
    # Kept without a call or a cache lookup (their inputs' digests are those of before), with
    # the text they had; a report written again may come out the same, its citations naming
    # the same numbers (entities keep theirs: `graph/numbers`).
    assert 0 < update["reports_kept"] <= len(same_reports)
    assert calls.get("community_report", 0) <= len(reports_after) - update["reports_kept"]


def test_an_update_on_ray_reads_the_kept_extractions_in_its_workers(ray_session, tmp_path):
    corpus = _staves(tmp_path / "corpus", ["a", "b"])
    index, out = str(tmp_path / "index"), tmp_path / "index"
    with run_test_server() as server:
        first = build_index(str(corpus), index, _config(server, out, "ray"), **QUIET)
        _staves(corpus, ["c"])
        server.reset()
        updated = update_index(index, str(corpus), _config(server, out, "ray"), **QUIET)
        calls = server.stats()["by_kind"]
    assert updated.config["runtime"]["engine"] == "ray"
    assert updated.update["chunks"]["reused"] == first.extraction.chunks
    assert calls["extract_graph"] == updated.update["chunks"]["extracted"] > 0
    _assert_partitions(index)


def test_after_a_carried_update_other_settings_still_reuse_every_extraction(tmp_path):
    """The update that carried a and b over (no call for them) kept their extractions with
    its version too: the next update, with another setting and no response cache, calls
    extraction for nothing."""
    corpus = _staves(tmp_path / "corpus", ["a", "b"])
    index, out = str(tmp_path / "index"), tmp_path / "index"
    with run_test_server() as server:
        build_index(str(corpus), index, _config(server, out), **QUIET)
        _staves(corpus, ["c"])
        update_index(index, str(corpus), _config(server, out), **QUIET)
        server.reset()
        other = llm_config(server, "runtime.engine=local", "cache.enabled=false",
                           "summarize.max_length=200")
        updated = update_index(index, str(corpus), other, **QUIET)
        assert server.stats()["by_kind"].get("extract_graph", 0) == 0
    assert updated.update["chunks"]["extracted"] == 0
    _assert_partitions(index)


def test_deleting_a_document_removes_what_only_it_mentioned(tmp_path):
    corpus = _staves(tmp_path / "corpus", ["a", "b", "c"])
    index, full = str(tmp_path / "index"), str(tmp_path / "full")
    with run_test_server() as server:
        build_index(str(corpus), index, _config(server, tmp_path / "index"), **QUIET)
        units_before = len(_tables(index, schema.TEXT_UNITS))
        (corpus / "c.txt").unlink()
        server.reset()
        updated = update_index(index, str(corpus), _config(server, tmp_path / "index"), **QUIET)
        assert server.stats()["by_kind"].get("extract_graph", 0) == 0
        build_index(str(corpus), full, _config(server, tmp_path / "full"), **QUIET)
    assert updated.update["documents"]["deleted"] == 1
    assert _graph(index) == _graph(full)
    units = _tables(index, schema.TEXT_UNITS)
    documents = _tables(index, schema.DOCUMENTS)
    assert sorted(d["title"] for d in documents) == ["a.txt", "b.txt"]
    kept_ids = {d["id"] for d in documents}
    assert all(set(u["document_ids"]) <= kept_ids for u in units)
    assert len(units) < units_before
    _assert_partitions(index)


def test_an_update_with_no_change_calls_nothing_and_publishes_nothing(tmp_path):
    """A file the build skipped (empty here) is part of the corpus too: unchanged, it is no
    change."""
    corpus = _staves(tmp_path / "corpus", ["a", "b"])
    (corpus / "empty.txt").write_text("")
    index = str(tmp_path / "index")
    with run_test_server() as server:
        built = build_index(str(corpus), index, _config(server, tmp_path / "index"), **QUIET)
        # The readers' fingerprints of what they read, kept for the next update.
        assert {f["path"]: f["sha256"] for f in _tables(index, "_input_files")} == {
            p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in corpus.iterdir()}
        server.reset()
        result = update_index(index, str(corpus), _config(server, tmp_path / "index"), **QUIET)
        assert server.stats()["requests"] == 0
    assert result["no_change"] and result["version"] == built.version
    assert IndexStore(index).versions() == [built.version]


def test_update_cli_dry_run_names_the_changes_and_calls_nothing(tmp_path):
    corpus = _staves(tmp_path / "corpus", ["a", "b"])
    index = str(tmp_path / "index")
    with run_test_server() as server:
        build_index(str(corpus), index, _config(server, tmp_path / "index"), **QUIET)
        _staves(corpus, ["c"])
        (corpus / "a.txt").write_text("A new first document about Marley.", encoding="utf-8")
        server.reset()
        done = subprocess.run([sys.executable, "-m", "graphrag_ray", "update", "--index", index,
                               "--input", str(corpus), "--dry-run"],
                              capture_output=True, text=True, timeout=300)
        assert server.stats()["requests"] == 0
    assert done.returncode == 0, done.stderr[-2000:]
    assert "1 added, 1 changed, 0 deleted, 1 unchanged" in done.stdout
    assert "added: c.txt" in done.stdout and "changed: a.txt" in done.stdout
    assert "extract" in done.stdout


def test_a_killed_update_leaves_the_previous_version_and_resumes(tmp_path):
    corpus = _staves(tmp_path / "corpus", ["a", "b"])
    index = str(tmp_path / "index")
    with run_test_server(latency_ms=40) as server:
        earlier = build_index(str(corpus), index, _config(server, tmp_path / "index"),
                              **QUIET).version
        _staves(corpus, ["c", "d", "e"])
        server.reset()
        cached_before = cached_answers(f"{index}-cache")
        command = [sys.executable, "-m", "graphrag_ray", "update", "--index", index, "--input",
                   str(corpus), "--set", "llm.unlimited_concurrency=2"]
        env = {**os.environ, "OPENAI_API_KEY": "test"}
        victim = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True, env=env)
        wait_for_calls(server, "extract_graph", 4, victim)

        def kill_driver() -> None:
            os.killpg(victim.pid, signal.SIGKILL)
            victim.wait()

        kill_with_no_answer_in_transit(server, kill_driver, f"{index}-cache", cached_before,
                                       roots=(victim.pid,))
        assert IndexStore(index).open().version == earlier
        # Its own session, as the killed run's (see test_llm_runs: autogroup scheduling).
        finished = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env,
                                  start_new_session=True)
        assert finished.returncode == 0, finished.stderr[-2000:]
        stats = server.stats()
    assert stats["repeated_successes"] == 0
    assert IndexStore(index).open().version != earlier
    assert sorted(d["title"] for d in _tables(index, schema.DOCUMENTS)) == \
        [f"{n}.txt" for n in "abcde"]
    shutil.rmtree(f"{index}-cache", ignore_errors=True)


SAFE_HARBOUR = ("Certain statements in this call are forward-looking statements that involve "
                "risks and uncertainties; actual results may differ materially, and we "
                "undertake no duty to update them.")
SIGN_OFF = ("This concludes today's conference call. Thank you for your participation; you "
            "may now disconnect your lines and have a wonderful day.")


def _transcripts(folder: Path) -> tuple[list[Path], list[str]]:
    """Twelve transcripts (~3k tokens): the safe harbour early in two (not yet repeated:
    three are needed), the sign-off closing three (repeated); two more kept aside."""
    from graphrag_testkit.synthetic_corpus import generate_corpus

    generate_corpus(folder, 36_000, seed=5, tokens_per_document=3_000)
    files = sorted(folder.glob("*.txt"))
    for path in files[:2]:
        text = path.read_text()
        path.write_text(text[:300] + "\n\n" + SAFE_HARBOUR + "\n\n" + text[300:])
    for path in files[2:5]:
        path.write_text(path.read_text() + "\n\n" + SIGN_OFF)
    aside = [path.read_text() for path in files[-2:]]
    for path in files[-2:]:
        path.unlink()
    return files[:-2], aside


def _windows(url: str) -> dict[str, dict[str, str]]:
    """Per document title: its chunks' id -> text (not the repeated passages' own units)."""
    version = IndexStore(url).open()
    titles = {d["id"]: d["title"] for d in version.read_table(schema.DOCUMENTS,
                                                              ["id", "title"]).to_pylist()}
    by_title: dict[str, dict[str, str]] = {}
    for unit in version.read_table(schema.TEXT_UNITS, ["id", "text", "document_ids"]
                                   ).to_pylist():
        if unit["text"].strip() not in (SAFE_HARBOUR, SIGN_OFF):
            by_title.setdefault(titles[unit["document_ids"][0]], {})[unit["id"]] = unit["text"]
    return by_title


def test_an_unchanged_file_keeps_its_chunks_whatever_changes_elsewhere(tmp_path):
    """Two transcripts added (with the safe harbour: now repeated, so cut from the two that
    had it), a line appended to a third, a fourth deleted (the sign-off no longer repeated,
    so kept in the two others): the unchanged files keep every window; only the windows
    whose own text the repeated passages changed are extracted again, with the new and
    changed files' chunks, and the dry run names that count before."""
    corpus = tmp_path / "corpus"
    files, aside = _transcripts(corpus)
    index = str(tmp_path / "index")
    with run_test_server() as server:
        build_index(str(corpus), index, _config(server, tmp_path / "index"), **QUIET)
        before = _windows(index)
        for n, text in enumerate(aside):
            (corpus / f"new-{n}.txt").write_text(text[:200] + "\n\n" + SAFE_HARBOUR + "\n\n"
                                                 + text[200:])
        files[5].write_text(files[5].read_text() + "\n\nOne more line at the end.")
        files[4].unlink()
        dry = update_index(index, str(corpus), _config(server, tmp_path / "index"),
                           dry_run=True, **QUIET)
        server.reset()
        updated = update_index(index, str(corpus), _config(server, tmp_path / "index"), **QUIET)
        calls = server.stats()["by_kind"]["extract_graph"]
    after = _windows(index)
    untouched = [p.name for p in files if p.name not in (files[4].name, files[5].name)]
    changed_windows = 0
    for name in untouched:
        gone = [before[name][i] for i in set(before[name]) - set(after[name])]
        new = [after[name][i] for i in set(after[name]) - set(before[name])]
        assert len(gone) == len(new), name  # no window moved, none added or lost
        # A window changes only where the repeated passages changed its own text: the safe
        # harbour is cut from it now, or the sign-off no longer is.
        assert all(SAFE_HARBOUR in t for t in gone) or all(SIGN_OFF in t for t in new), name
        changed_windows += len(new)
    assert changed_windows == 4  # the safe harbour's two windows, the sign-off's two
    # The changed file's windows of unchanged text reuse their extraction (by text).
    new_and_changed = sum(len(after[t]) for t in after if t.startswith("new-")) + \
        len(set(after[files[5].name].values()) - set(before[files[5].name].values()))
    assert new_and_changed == 9 and calls == new_and_changed + changed_windows
    assert dry["chunks_to_extract"] == calls
    assert updated.update["chunks"]["extracted"] >= calls
