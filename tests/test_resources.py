"""A process's peak memory is its own, not that of the process that started it; a build
collects garbage less often, and only while it runs."""

import gc
import json
import subprocess
import sys

import pytest

from graphrag_ray.config import load_config
from graphrag_ray.index.build import build_index
from graphrag_ray.resources import BUILD_GC_THRESHOLDS, fewer_collections
from graphrag_testkit.synthetic_corpus import generate_corpus


def test_the_peak_is_not_inherited_from_a_large_parent():
    """getrusage's ru_maxrss survives execve with the forking parent's peak: the memory-bound
    test, late in a full pytest session, measured pytest (980 MB) instead of the build."""
    ballast = bytearray(400 * 2 ** 20)
    for i in range(0, len(ballast), 4096):
        ballast[i] = 1  # resident, as a parent that has done work is
    out = subprocess.run(
        [sys.executable, "-c", "import json, resource\nfrom graphrag_ray.resources import "
         "driver_rss_mb\nprint(json.dumps([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss"
         " // 1024, driver_rss_mb()[1]]))"], capture_output=True, text=True, timeout=120)
    inherited, own = json.loads(out.stdout)
    assert inherited >= 400 and own < 200, (inherited, own)
    del ballast


def test_fewer_collections_inside_and_the_callers_setting_after_even_on_error():
    before = gc.get_threshold()
    try:
        gc.set_threshold(1234, 5, 6)
        with fewer_collections():
            assert gc.get_threshold() == BUILD_GC_THRESHOLDS
        assert gc.get_threshold() == (1234, 5, 6)
        with pytest.raises(RuntimeError):
            with fewer_collections():
                raise RuntimeError("a stage failed")
        assert gc.get_threshold() == (1234, 5, 6)
    finally:
        gc.set_threshold(*before)


def test_a_build_runs_its_stages_with_fewer_collections_and_gives_the_setting_back(tmp_path):
    corpus = tmp_path / "corpus"
    generate_corpus(corpus, 6_000, seed=5, tokens_per_document=1_500)
    seen: dict[str, tuple] = {}
    before = gc.get_threshold()
    try:
        gc.set_threshold(1234, 5, 6)
        build_index(str(corpus), str(tmp_path / "index"),
                    load_config(None, ["runtime.engine=local"]),
                    progress=lambda line: seen.setdefault(line, gc.get_threshold()))
        assert gc.get_threshold() == (1234, 5, 6)
    finally:
        gc.set_threshold(*before)
    assert seen["[merge] ..."] == BUILD_GC_THRESHOLDS, seen
