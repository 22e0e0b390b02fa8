"""`graphrag-ray stats`: the facts printed and the plots written, with the LLM usage plot for
a build that called an LLM (through the test server, under configured limits)."""

import matplotlib.image

from graphrag_ray.cli import main

from conftest import carol_input


def test_stats_of_an_llm_build_plot_usage_against_the_limits(tmp_path, llm_server, capsys):
    assert main(["index", "--input", str(carol_input(tmp_path / "in", 12_000)), "--output",
                 str(tmp_path / "index"), "--set", "extraction.method=llm",
                 "--set", f"llm.api_base={llm_server.url}", "--set", "llm.model=test-model",
                 "--set", "llm.requests_per_minute=6000", "--set", "llm.tokens_per_minute=2000000",
                 "--set", "runtime.engine=local"]) == 0
    capsys.readouterr()
    assert main(["stats", "--index", str(tmp_path / "index"),
                 "--out", str(tmp_path / "plots")]) == 0
    printed = capsys.readouterr().out
    calls = llm_server.stats()["requests"]
    assert f"LLM (test-model): {calls} calls" in printed
    assert "communities per level: 0:" in printed
    written = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert written == ["community_sizes.png", "degree_distribution.png", "llm_usage.png",
                       "stage_timeline.png"]
    for name in written:
        image = matplotlib.image.imread(tmp_path / "plots" / name)
        assert image.shape[0] > 200 and image.shape[1] > 400 and image.std() > 0.01


def test_an_offline_build_has_no_llm_plot(tmp_path, capsys):
    assert main(["index", "--input", str(carol_input(tmp_path / "in", 8_000)), "--output",
                 str(tmp_path / "index"), "--set", "runtime.engine=local"]) == 0
    assert main(["stats", "--index", str(tmp_path / "index"),
                 "--out", str(tmp_path / "plots")]) == 0
    out = capsys.readouterr().out
    assert "LLM: no calls (offline build)" in out
    assert "query methods: global, local, drift, basic, text, lazy" in out
    assert not (tmp_path / "plots" / "llm_usage.png").exists()
    assert (tmp_path / "plots" / "stage_timeline.png").exists()
