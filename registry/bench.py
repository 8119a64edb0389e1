"""``spade bench registry``: ``import spade_envs`` + first ``gym.make`` with a large store,
against the ``gym.register`` loop (DESIGN.md section 4).

Figures (each from a fresh subprocess, best of a few runs):

- ``import_and_make_s``: ``import spade_envs`` + ``gym.make`` of the newest store entry +
  ``reset`` with ``n_envs`` entries in the store (target <= 1.0 s at 100k);
- ``register_store_s``: our registration of the store alone;
- ``gym_register_loop_{n}_s``: ``gym.register`` called in a loop for n ids (measured at
  two sizes), and ``gym_register_loop_{n_envs}_extrapolated_s`` fitted as
  ``a*n^2 + b*n`` through them (the loop is quadratic: each call scans the registry);
- ``ratio_register_loop_over_import_and_make``.

The synthetic store is built once per size under the temp directory and reused.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_TEMPLATE = (
    "class Bench{i}Env:\n"
    "    def __init__(self, **kw):\n        self.reset()\n"
    "    def reset(self, seed=None):\n        self._n = (seed or 0) % 97\n        return f'say {{self._n}}', {{}}\n"
    "    def step(self, action):\n        ok = action.strip() == str(self._n)\n"
    "        return 'done', float(ok), True, False, {{}}\n"
    "    def solution(self):\n        return str(self._n)\n"
)


def build_store(n: int, home: Path) -> int:
    """A store of ``n`` distinct synthetic entries under ``home`` (reused when present);
    returns the newest sequence number."""
    from ..program import source_sha256
    from .migrations import FIRST_STORE_SEQ
    from .store import Registry

    path = home / "registry.sqlite3"
    last = FIRST_STORE_SEQ + n - 1
    if path.exists():
        with Registry.open(path) as reg:
            if reg.stats()["versions"] == n:
                return last
        path.unlink()
    home.mkdir(parents=True, exist_ok=True)
    with Registry.open(path) as reg:
        now = "2026-01-01T00:00:00Z"
        with reg.transaction() as conn:
            for start in range(0, n, 10_000):
                srcs = [_TEMPLATE.format(i=i) for i in range(start, min(n, start + 10_000))]
                shas = [source_sha256(s) for s in srcs]
                conn.executemany("INSERT INTO sources (sha256, source) VALUES (?, ?)", zip(shas, srcs))
                conn.executemany(
                    "INSERT INTO envs (seq, version, sha256, class_name, generation, created_at, updated_at) "
                    "VALUES (?, 0, ?, ?, 1, ?, ?)",
                    [(FIRST_STORE_SEQ + start + k, sha, f"Bench{start + k}Env", now, now) for k, sha in enumerate(shas)],
                )
        reg._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return last


_IMPORT_AND_MAKE = """
import time
t0 = time.perf_counter()
import spade_envs, gymnasium as gym
t1 = time.perf_counter()
env = gym.make("spade/Env-{seq:05d}-v0", trust_remote_code=True)
env.reset(seed=3)
t2 = time.perf_counter()
from spade_envs.registry.gym_registration import register_store
t3 = time.perf_counter(); n = register_store(); t4 = time.perf_counter()
print({{"import_s": t1 - t0, "make_s": t2 - t1, "total_s": t2 - t0, "register_s": t4 - t3, "n": n}})
"""

_LOOP = """
import time, gymnasium as gym
ids = [f"spadebench/Env-{{i:05d}}-v0" for i in range({n})]
t = time.perf_counter()
for i in ids:
    gym.register(id=i, entry_point="spade_envs.gym_env:SpadeEnv")
print(time.perf_counter() - t)
"""


def _python(code: str, env: dict[str, str]) -> str:
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed: {out.stderr.strip()[-500:]}")
    return out.stdout.strip().splitlines()[-1]


def run(quick: bool = False) -> dict[str, Any]:
    n = 20_000 if quick else 100_000
    sizes = (1_000, 4_000) if quick else (5_000, 20_000)
    home = Path(tempfile.gettempdir()) / f"spade-bench-registry-{n}"
    t = time.perf_counter()
    last = build_store(n, home)
    build_s = time.perf_counter() - t
    env = {**os.environ, "SPADE_HOME": str(home), "PYTHONWARNINGS": "ignore"}
    runs = [eval(_python(_IMPORT_AND_MAKE.format(seq=last), env)) for _ in range(2 if quick else 3)]  # noqa: S307
    best = min(runs, key=lambda r: r["total_s"])
    loop = {k: float(_python(_LOOP.format(n=k), env)) for k in sizes}
    (n1, t1), (n2, t2) = loop.items()
    # t = a n^2 + b n through both points
    a = (t2 / n2 - t1 / n1) / (n2 - n1)
    b = t1 / n1 - a * n1
    extrapolated = max(a * n * n + b * n, t2 * n / n2)
    figures = {
        "n_envs": n,
        "store_build_s": build_s,
        "import_s": best["import_s"],
        "first_make_s": best["make_s"],
        "import_and_make_s": best["total_s"],
        "register_store_s": min(r["register_s"] for r in runs),
        "target_import_and_make_s": 1.0,
        "meets_target": best["total_s"] <= 1.0,
        **{f"gym_register_loop_{k}_s": v for k, v in loop.items()},
        f"gym_register_loop_{n}_extrapolated_s": extrapolated,
        "ratio_register_loop_over_import_and_make": extrapolated / best["total_s"],
    }
    return json.loads(json.dumps(figures))
