"""A generated 100k-token corpus indexes end to end, offline, within a memory bound."""

import json
import subprocess
import sys

import pytest

from graphrag_testkit.synthetic_corpus import generate_corpus

pytestmark = pytest.mark.slow

PEAK_RSS_BOUND_MB = 768  # measured: ~330 MB for this corpus on the local engine
BUILD_GROWTH_BOUND_MB = 512  # measured: ~200 MB over the imports


def test_generator_is_seeded_and_heavy_tailed(tmp_path):
    first = generate_corpus(tmp_path / "a", 20_000, seed=3)
    second = generate_corpus(tmp_path / "b", 20_000, seed=3)
    assert [p.read_text() for p in first.files] == [p.read_text() for p in second.files]
    assert first.tokens >= 20_000
    text = " ".join(p.read_text() for p in first.files)
    # The most mentioned sentence subjects recur far more often than the median one.
    subjects = [s.split(" was mentioned")[0].rsplit(". ", 1)[-1]
                for s in text.split(" was mentioned")[:-1]]
    counts = sorted((subjects.count(s) for s in set(subjects)), reverse=True)
    assert counts[0] >= 5 * counts[len(counts) // 2]


def test_100k_token_corpus_indexes_within_the_memory_bound(tmp_path):
    """The build's own memory: its peak RSS (VmHWM: getrusage's ru_maxrss carries the peak
    of the process that forked it across execve, so late in a pytest session this measured
    pytest, 980-1,047 MB), and that peak less the RSS once a build's imports are loaded
    (~135 MB of the ~330 MB peak)."""
    corpus = generate_corpus(tmp_path / "corpus", 100_000, seed=0)
    script = (
        "import json, sys\n"
        "from graphrag_ray.cli import main\n"
        "from graphrag_ray.resources import peak_rss_mb, rss_mb\n"
        "import graphrag_ray.index.build, graphrag_ray.index.extract.nlp_extractor\n"
        "import graphrag_ray.index.embed.feed, graphrag_ray.index.graph.communities\n"
        "baseline = rss_mb()\n"
        "code = main(sys.argv[1:])\n"
        "print(json.dumps({'code': code, 'baseline_mb': baseline, 'peak_rss_mb': "
        "peak_rss_mb()}))\n")
    run = subprocess.run(
        [sys.executable, "-c", script, "index", "--input", str(tmp_path / "corpus"),
         "--output", str(tmp_path / "index"), "--set", "runtime.engine=local"],
        capture_output=True, text=True, timeout=300)
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert figures["code"] == 0, run.stderr[-2000:]
    assert figures["peak_rss_mb"] < PEAK_RSS_BOUND_MB, figures
    assert figures["peak_rss_mb"] - figures["baseline_mb"] < BUILD_GROWTH_BOUND_MB, figures
    tables = dict(part.split("=") for part in run.stdout.split("tables: ")[1].split("\n")[0]
                  .split(", "))
    assert int(tables["text_units"]) > 200 and int(tables["entities"]) > corpus.entities * 0.5
    assert int(tables["relationships"]) > 300 and int(tables["community_reports"]) > 50
