"""Request counts and latencies, in Prometheus's text exposition format (`GET /metrics`).

One process counts its own requests (`ServiceMetrics.record`); under Ray Serve every replica
sends each request's figures to one small actor holding the `ServiceMetrics`, so that a
scrape of any replica sees the service's totals, not one replica's share.
"""

from __future__ import annotations

import threading
from collections import defaultdict

# Seconds; a global search over an LLM takes tens of them, an offline local one milliseconds.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


def _labels(endpoint: str, method: str, status: int | str) -> tuple:
    return (endpoint, method, str(status))


class ServeMetrics:
    def __init__(self):
        self._lock = threading.Lock()
        self.requests: dict[tuple, int] = defaultdict(int)
        self.latency_sum: dict[tuple, float] = defaultdict(float)
        self.latency_buckets: dict[tuple, list[int]] = {}
        self.llm_tokens: dict[tuple, int] = defaultdict(int)
        self.switches = 0

    def record(self, endpoint: str, method: str, status: int, seconds: float,
               llm_tokens: int = 0) -> None:
        key = _labels(endpoint, method, status)
        with self._lock:
            self.requests[key] += 1
            self.latency_sum[key] += seconds
            buckets = self.latency_buckets.setdefault(key, [0] * len(LATENCY_BUCKETS))
            for i, bound in enumerate(LATENCY_BUCKETS):
                if seconds <= bound:
                    buckets[i] += 1
            self.llm_tokens[(endpoint, method)] += llm_tokens

    def snapshot(self) -> dict:
        with self._lock:
            return {"requests": dict(self.requests), "latency_sum": dict(self.latency_sum),
                    "latency_buckets": {k: list(v) for k, v in self.latency_buckets.items()},
                    "llm_tokens": dict(self.llm_tokens), "switches": self.switches}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _label_text(names: tuple[str, ...], values: tuple) -> str:
    return ",".join(f'{n}="{_escape(str(v))}"' for n, v in zip(names, values))


def render(snapshot: dict, version: str | None, replicas: int) -> str:
    names = ("endpoint", "method", "status")
    lines = ["# HELP graphrag_serve_requests_total Requests answered, by endpoint, query "
             "method and HTTP status.",
             "# TYPE graphrag_serve_requests_total counter"]
    for key, value in sorted(snapshot["requests"].items()):
        lines.append(f"graphrag_serve_requests_total{{{_label_text(names, key)}}} {value}")
    lines += ["# HELP graphrag_serve_request_seconds Time from a request's arrival to its "
              "answer's last byte.",
              "# TYPE graphrag_serve_request_seconds histogram"]
    for key, counts in sorted(snapshot["latency_buckets"].items()):
        labels = _label_text(names, key)
        for bound, count in zip(LATENCY_BUCKETS, counts):
            lines.append(f'graphrag_serve_request_seconds_bucket{{{labels},le="{bound}"}} {count}')
        lines.append(f'graphrag_serve_request_seconds_bucket{{{labels},le="+Inf"}} '
                     f'{snapshot["requests"][key]}')
        lines.append(f"graphrag_serve_request_seconds_sum{{{labels}}} "
                     f"{snapshot['latency_sum'][key]:.6f}")
        lines.append(f"graphrag_serve_request_seconds_count{{{labels}}} "
                     f"{snapshot['requests'][key]}")
    lines += ["# HELP graphrag_serve_llm_tokens_total LLM tokens the answers cost.",
              "# TYPE graphrag_serve_llm_tokens_total counter"]
    for key, value in sorted(snapshot["llm_tokens"].items()):
        lines.append(f"graphrag_serve_llm_tokens_total{{"
                     f"{_label_text(('endpoint', 'method'), key)}}} {value}")
    lines += ["# HELP graphrag_serve_version_switches_total Newly published versions switched to.",
              "# TYPE graphrag_serve_version_switches_total counter",
              f"graphrag_serve_version_switches_total {snapshot['switches']}",
              "# HELP graphrag_serve_replicas Replicas whose counts are summed here (a replaced "
              "one keeps its share).",
              "# TYPE graphrag_serve_replicas gauge",
              f"graphrag_serve_replicas {replicas}",
              "# HELP graphrag_serve_info The version answered from.",
              "# TYPE graphrag_serve_info gauge",
              f'graphrag_serve_info{{version="{_escape(str(version))}"}} 1', ""]
    return "\n".join(lines)


class ServiceMetrics(ServeMetrics):
    """The service's counts, shared by its replicas (one Ray actor holds it) or held by the
    one process serving: requests as `ServeMetrics`, and each replica's version switches."""

    def __init__(self):
        super().__init__()
        self.replica_switches: dict[str, int] = {}

    def switched(self, replica: str, switches: int) -> None:
        self.replica_switches[replica] = switches

    def text(self, version: str | None) -> str:
        snapshot = self.snapshot()
        snapshot["switches"] = sum(self.replica_switches.values())
        # Every replica that ever counted (one that was replaced keeps its share).
        return render(snapshot, version, replicas=len(self.replica_switches))
