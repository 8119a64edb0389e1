"""Push and pull of a large registry through the local Hub test server (127.0.0.1 only).

    .venv/bin/python benchmarks/registry_hub_sync.py [N]      # default N = 100000

Builds a store of N synthetic entries (``spade_envs.benches.registry.build_store``), then
times, through the ``spade`` CLI (progress bars on stderr when it is a terminal):
``registry push`` from home A, ``registry pull --skip-acceptance`` into a fresh home B
(acceptance of N programs is a separate cost: about 50 ms each once the sandbox is warm),
a no-op re-pull into B and a re-push from B (nothing changed: no commit). Prints one JSON
object with every figure in seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hub_server import HubServer  # noqa: E402


def main(n: int) -> dict:
    from spade_envs.cli.main import main as spade
    from spade_envs.benches.registry import build_store

    root = Path(tempfile.mkdtemp(prefix="spade-hub-bench-"))
    figures: dict = {"bench": "registry_hub_sync", "n_envs": n}
    try:
        t = time.perf_counter()
        build_store(n, root / "a")
        figures["store_build_s"] = time.perf_counter() - t
        with HubServer() as hub:
            os.environ.update(HF_ENDPOINT=hub.url, HF_HUB_DISABLE_XET="1", HF_TOKEN="hf_bench")
            os.environ.pop("HF_HUB_OFFLINE", None)

            def timed(name: str, home: str, *args: str) -> None:
                os.environ["SPADE_HOME"] = str(root / home)
                t0 = time.perf_counter()
                rc = spade(list(args))
                figures[name] = time.perf_counter() - t0
                if rc != 0:
                    raise SystemExit(f"{' '.join(args)} failed with {rc}")

            timed("push_s", "a", "registry", "push", "bench/reg", "--json")
            timed("pull_s", "b", "registry", "pull", "bench/reg", "--skip-acceptance", "--json")
            timed("repull_s", "b", "registry", "pull", "bench/reg", "--skip-acceptance", "--json")
            commits = hub.commits("bench/reg")
            timed("repush_unchanged_s", "b", "registry", "push", "bench/reg", "--json")
            figures["repush_made_no_commit"] = hub.commits("bench/reg") == commits
        figures["pull_rows_per_s"] = n / figures["pull_s"]
        figures["push_rows_per_s"] = n / figures["push_s"]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return figures


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)))
