"""The autoscaling demo, short: an LLM build on a cluster whose head has no CPU makes Ray's
autoscaler add workers while extraction runs, finishes with every chunk `ok`, and the workers
go once idle (scripts/autoscale_demo.py; tests/graphrag_testkit/autoscaling_cluster.py starts
the cluster, touching only its own processes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CAROL_DIR

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def test_llm_demand_adds_workers_and_idle_workers_go(tmp_path):
    idle_timeout_s = 5
    done = subprocess.run(
        [sys.executable, "scripts/autoscale_demo.py", "--json", "--input", str(CAROL_DIR),
         "--max-workers", "2", "--idle-timeout-s", str(idle_timeout_s), "--latency-ms", "500",
         "--latency-kinds", "extract_graph",
         "--timeout-s", "900"],
        cwd=REPO, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["chunks"] >= 30 and result["failed_chunks"] == 0
    nodes = result["nodes"]
    assert nodes["start"] == 1 and nodes["peak"] > nodes["start"], result
    assert nodes["peak"] <= 1 + 2  # never past the type's max_workers
    assert result["scaled_up_during_extraction"], result
    # Back to the head alone: the idle timeout, and the autoscaler's few seconds to act.
    assert result["scaled_down"] and nodes["end"] == nodes["start"], result
    assert result["back_to_start_s_after_build"] <= idle_timeout_s + 60, result
    assert result["requests_answered_twice"] == 0 and result["finished_calls_repeated"] == 0
