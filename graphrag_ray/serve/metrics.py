"""Request counts and latencies for `GET /metrics`, in Prometheus's text exposition format
(prometheus-client writes it: escaping, histogram buckets and `+Inf` are its, not ours).

One process counts its own requests (`ServiceMetrics.record`); under Ray Serve every replica
sends each request's figures to one small actor holding the `ServiceMetrics`, so that a
scrape of any replica sees the service's totals, not one replica's share.
"""

from __future__ import annotations

import threading

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# Seconds; a global search over an LLM takes tens of them, an offline local one milliseconds.
LATENCY_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)

# A counter's `_created` timestamp series would double every sample a scraper reads and
# means nothing to a service whose counts live as long as its process.
prometheus_client.disable_created_metrics()


class ServiceMetrics:
    """The service's counts, shared by its replicas (one Ray actor holds it) or held by the
    one process serving: requests by endpoint, method and status, their latencies and LLM
    tokens, and each replica's version switches."""

    def __init__(self):
        self._lock = threading.Lock()
        self.registry = CollectorRegistry(auto_describe=True)
        labels = ("endpoint", "method", "status")
        self.requests = Counter("graphrag_serve_requests", "Requests answered, by endpoint, "
                                "query method and HTTP status.", labels, registry=self.registry)
        self.seconds = Histogram("graphrag_serve_request_seconds", "Time from a request's "
                                 "arrival to its answer's last byte.", labels,
                                 buckets=LATENCY_BUCKETS, registry=self.registry)
        self.llm_tokens = Counter("graphrag_serve_llm_tokens", "LLM tokens the answers cost.",
                                  ("endpoint", "method"), registry=self.registry)
        self.switches = Counter("graphrag_serve_version_switches", "Newly published "
                                "versions switched to.", registry=self.registry)
        self.replicas = Gauge("graphrag_serve_replicas", "Replicas whose counts are summed "
                              "here (a replaced one keeps its share).", registry=self.registry)
        self.info = Gauge("graphrag_serve_info", "The version answered from.", ("version",),
                          registry=self.registry)
        self.replica_switches: dict[str, int] = {}

    def record(self, endpoint: str, method: str, status: int, seconds: float,
               llm_tokens: int = 0) -> None:
        self.requests.labels(endpoint, method, str(status)).inc()
        self.seconds.labels(endpoint, method, str(status)).observe(seconds)
        self.llm_tokens.labels(endpoint, method).inc(llm_tokens)

    def switched(self, replica: str, switches: int) -> None:
        with self._lock:
            # Each replica's own count, as it grows; every replica that ever counted (one
            # that was replaced keeps its share).
            self.switches.inc(max(0, switches - self.replica_switches.get(replica, 0)))
            self.replica_switches[replica] = max(switches, self.replica_switches.get(replica, 0))
            self.replicas.set(len(self.replica_switches))

    def text(self, version: str | None) -> str:
        with self._lock:
            self.info.clear()
            self.info.labels(str(version)).set(1)
            return generate_latest(self.registry).decode("utf-8")
