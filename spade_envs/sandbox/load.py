"""How busy the machine is, so that wall-clock deadlines mean the same under load.

A call's wall time is its CPU time stretched by every other runnable process sharing the
cores: beside ``others`` runnable tasks it gets ``cores / (others + 1)`` of a core at best.
:func:`load_factor` is ``max(1, runnable / cores)``, capped at :data:`MAX_FACTOR`, where
runnable is the larger of the 1-minute load average and the instantaneous count of
runnable tasks in ``/proc/loadavg``, this process excluded and the call itself added (its
worker sleeps on the request pipe while the deadline is read, so the snapshot misses it;
with three busy processes on two cores a call runs at half speed, not two thirds). The
load average needs no such term: it already holds the workers' past runs. A deadline of
``d`` seconds is enforced as ``d * load_factor()`` (:func:`scaled`). A valid program is
therefore not refused because the machine is busy, and a hanging one still meets a finite
deadline (at most ``MAX_FACTOR`` times the nominal one). Read at most every 0.25 s.
"""

from __future__ import annotations

import os
import time

MAX_FACTOR = 8.0
_CACHE: list[float] = [0.0, 1.0]  # [read at, factor]


def _runnable() -> float:
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            parts = fh.read().split()
        return max(float(parts[0]), float(int(parts[3].split("/")[0])))  # - this process + the call
    except (OSError, ValueError, IndexError):
        try:
            return os.getloadavg()[0]
        except OSError:
            return 0.0


def load_factor() -> float:
    """``max(1, runnable / cores)``, capped at :data:`MAX_FACTOR` (see the module docstring)."""
    now = time.monotonic()
    if now - _CACHE[0] > 0.25:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        _CACHE[:] = [now, min(MAX_FACTOR, max(1.0, _runnable() / max(1, cores)))]
    return _CACHE[1]


def scaled(deadline_s: float) -> float:
    """``deadline_s`` stretched by the current :func:`load_factor`."""
    return float(deadline_s) * load_factor()
