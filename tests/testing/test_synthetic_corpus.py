"""A generated 100k-token corpus indexes end to end, offline, within a memory bound."""

import json
import os
import subprocess
import sys

import pytest

from graphrag_ray.testing.synthetic_corpus import generate_corpus

pytestmark = pytest.mark.slow

BUILD_GROWTH_BOUND_MB = 512  # measured: ~200 MB over the imports for this corpus, locally


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
    """The build's own memory: the peak RSS of a CLI build less the process's RSS once
    everything a build imports is loaded (imports are ~135 MB of the ~330 MB peak). glibc
    gives threads malloc arenas of their own as they contend, so on a loaded machine the
    same build touched more pages (one CI run peaked at 1,047 MB); two arenas make the
    figure the build's, not the scheduler's."""
    corpus = generate_corpus(tmp_path / "corpus", 100_000, seed=0)
    script = (
        "import json, resource, sys\n"
        "from graphrag_ray.cli import main\n"
        "import graphrag_ray.index.build, graphrag_ray.index.extract.nlp_extractor\n"
        "import graphrag_ray.index.embed.feed, graphrag_ray.index.graph.communities\n"
        "baseline = int(open('/proc/self/statm').read().split()[1]) * 4096 / 2 ** 20\n"
        "code = main(sys.argv[1:])\n"
        "print(json.dumps({'code': code, 'baseline_mb': baseline, 'peak_rss_mb': "
        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))\n")
    run = subprocess.run(
        [sys.executable, "-c", script, "index", "--input", str(tmp_path / "corpus"),
         "--output", str(tmp_path / "index"), "--set", "runtime.engine=local"],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "MALLOC_ARENA_MAX": "2"})
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert figures["code"] == 0, run.stderr[-2000:]
    assert figures["peak_rss_mb"] - figures["baseline_mb"] < BUILD_GROWTH_BOUND_MB, figures
    tables = dict(part.split("=") for part in run.stdout.split("tables: ")[1].split("\n")[0]
                  .split(", "))
    assert int(tables["text_units"]) > 200 and int(tables["entities"]) > corpus.entities * 0.5
    assert int(tables["relationships"]) > 300 and int(tables["community_reports"]) > 50
