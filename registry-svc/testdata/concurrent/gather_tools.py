"""Tools for the host's concurrency tests (pyhost TestPlainCallsConcurrent)."""

import threading

_lock = threading.Lock()
_gates = {}


def gather(n: int) -> str:
    """Returns once n calls of gather(n) run at the same time."""
    with _lock:
        gate = _gates.setdefault(n, threading.Barrier(n, timeout=20))
    gate.wait()
    return "met %d" % n
