"""The import layers of ``docs/architecture.md`` hold: import-linter's contracts in
``.importlinter`` (layers from the CLI down to the program format, no cycles inside any
package), imports inside functions included.

The installed package maps ``registry/``, ``designer/``, ``agents/`` and ``evals/`` into
``spade_envs`` (DESIGN.md section 2); import-linter reads packages from disk, so the test
lays the same tree out with links in a temporary folder and lints that.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPPED = ("registry", "designer", "agents", "evals")  # [tool.setuptools.package-dir]


def _linked_tree(dest: Path) -> Path:
    pkg = dest / "spade_envs"
    pkg.mkdir()
    for entry in (ROOT / "spade_envs").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for name in MAPPED:
        (pkg / name).symlink_to(ROOT / name)
    return dest


def test_import_layers_hold(tmp_path):
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.fail("import-linter is not installed: it is part of the [test] extra")
    tree = _linked_tree(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([lint, str(ROOT / ".importlinter"), "--no-cache"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)
    report = done.stdout[done.stdout.find("Contracts"):] or done.stdout
    assert done.returncode == 0, report + done.stderr[-2000:]
