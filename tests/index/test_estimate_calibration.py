"""Dry runs calibrated by a build of the same index, checked against what building costs
(the test server's answers, billed as the manifest counts them): a dry run of other Carol
text next to a build of its first 40k characters, and `update --dry-run` of adding that
text, both within 10% in calls, prompt and completion tokens (extraction, summaries and
reports together: the update's include the index's own elements and communities that the
new text touches)."""

import shutil

import pytest

from graphrag_ray.index.build import build_index
from graphrag_ray.index.estimate import estimate_index, format_estimate, previous_rates
from graphrag_ray.index.update import format_update_estimate, update_index
from graphrag_testkit.llm_server import run_test_server

from conftest import CAROL_DIR, llm_config

pytestmark = pytest.mark.slow  # three builds through the test server

STAGES = ("extract", "summarize", "reports")
KEYS = ("calls", "prompt_tokens", "completion_tokens")


def _carol(folder, start, end):
    text = (CAROL_DIR / "book.txt").read_text(encoding="utf-8")
    offset = text.find("STAVE ONE")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"carol-{start}.txt").write_text(text[offset + start:offset + end],
                                              encoding="utf-8")
    return folder


def _within(estimated: dict, spent: dict, share: float = 0.1) -> None:
    for key in KEYS:
        predicted = sum(estimated[s][key] for s in STAGES)
        actual = sum(getattr(spent[s], key) for s in STAGES if s in spent)
        assert abs(predicted - actual) <= share * actual, (key, predicted, actual)


def test_dry_runs_next_to_a_build_and_for_an_update_are_within_10_percent(tmp_path):
    built, other = _carol(tmp_path / "built", 0, 40_000), _carol(tmp_path / "other", 40_000,
                                                                  80_000)
    with run_test_server() as server:
        config = llm_config(server, "runtime.engine=local")
        build_index(str(built), str(tmp_path / "index"), config, progress=lambda _: None)
        estimate = estimate_index(str(other), config,
                                  previous_rates(str(tmp_path / "index"), config))
        # The other text names less than the first 40k characters: the density says so.
        assert estimate["calibrated_on"]["density_ratio"] < 0.9
        assert "likely cost" not in format_estimate(estimate)  # the test model has no price
        spent = build_index(str(other), str(tmp_path / "fresh"), config,
                            progress=lambda _: None).llm_usage.stages
        _within(estimate["stages"], spent)

        grown = tmp_path / "grown"
        shutil.copytree(built, grown)
        shutil.copy(next(other.iterdir()), grown)
        dry = update_index(str(tmp_path / "index"), str(grown), config, dry_run=True,
                           progress=lambda _: None)
        touched = dry["new_and_changed"]["touched_in_index"]
        assert touched["summaries"] > 0 and touched["reports"] > 0
        assert "communities holding one of the" in format_update_estimate(dry)
        updated = update_index(str(tmp_path / "index"), str(grown), config,
                               progress=lambda _: None).llm_usage.stages
        _within(dry["new_and_changed"]["stages"], updated)


def test_a_priced_dry_run_prints_its_likely_range(carol_excerpt):
    with run_test_server() as server:
        config = llm_config(server, "runtime.engine=local", "llm.model=gpt-4o-mini")
        estimate = estimate_index(str(carol_excerpt), config)
    low, high = estimate["total"]["cost_usd_range"]
    assert low < estimate["total"]["cost_usd"] < high  # uncalibrated: completions x0.5-x2
    assert f"likely cost ${low:.4f} - ${high:.4f}" in format_estimate(estimate)


def test_a_resumed_runs_few_calls_calibrate_nothing_unless_its_earlier_runs_are_counted():
    from graphrag_ray.index.estimate import _complete
    from graphrag_ray.storage.manifest import StageUsage

    resumed = {"extract": StageUsage(calls=10, cache_hits=300, prompt_tokens=10_000,
                                     completion_tokens=1_000)}
    assert _complete(resumed, None) == {}  # 10 of 310 calls measured: no measure
    earlier = {"stages": {"extract": {"calls": 300, "prompt_tokens": 300_000,
                                      "completion_tokens": 30_000}}}
    whole = _complete(resumed, earlier)["extract"]
    assert (whole.calls, whole.cache_hits) == (310, 0)
    assert whole.completion_tokens == 31_000 and whole.prompt_tokens == 310_000


def test_an_offline_dry_run_names_no_call_and_no_llm_assumption(capsys):
    from graphrag_ray.cli import main

    from conftest import CAROL_DIR

    assert main(["index", "--input", str(CAROL_DIR), "--output", "unused", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "(chat)" not in out and "(embeddings)" not in out
    assert "gleaning" not in out and "no LLM call: every stage runs offline" in out
    assert "minutes" not in out  # nothing is paced: not "at least 0.0 minutes"


def test_the_total_counts_a_batch_reply_once_not_as_a_call_and_a_cache_hit():
    from graphrag_ray.config import load_config
    from graphrag_ray.index.manifest import usage_summary
    from graphrag_ray.llm.client import Usage

    summary = usage_summary({"extract": Usage(cache_hits=1456)}, {}, load_config(None, []),
                            {"extract": {"calls": 0}},
                            {"extract": Usage(calls=1456, prompt_tokens=10, completion_tokens=5)})
    assert summary["total"]["calls"] == 1456 and summary["total"]["cache_hits"] == 0
    assert summary["stages"]["extract"]["cache_hits"] == 1456  # the stage's own pass, as it was
