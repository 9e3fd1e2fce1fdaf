"""Helpers for the operations tests: metric values from /metrics, a planning request, a free
loopback port for a server subprocess."""

import socket

from prometheus_client.parser import text_string_to_metric_families

PLAN_70B = {
    "model": "llama-3.1-70b",
    "gpu": "h100-sxm",
    "concurrency": 40,
    "capacity_basis": "marketed",
}
"""The seed's example: 4 x H100 80 GB, 272 GB budget, tight (on the seeds' marketed basis; the
service's default is driver)."""


def metric(text: str, name: str, **labels: str) -> float:
    """The value of one sample in a Prometheus exposition (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return 0.0


def free_port() -> int:
    """A loopback TCP port nothing listens on now (for a server started afterwards)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
