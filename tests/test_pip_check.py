"""``pip check`` after the README's install: clean except the lines of the packages the
set-up installs with ``--no-deps`` (named in the Makefile and in the README, which says why)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _no_deps_packages() -> set[str]:
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    found = re.findall(r"--no-deps ([^\n]+)", make)
    assert found, "the Makefile installs nothing with --no-deps any more: drop this exception"
    return {name for line in found for name in line.split() if re.fullmatch(r"[A-Za-z0-9_.-]+", name)}


def test_pip_check_reports_only_the_no_deps_installs():
    tolerated = _no_deps_packages()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(name in readme for name in tolerated - {"mpmath"})  # the README says why each is tolerated
    out = subprocess.run([sys.executable, "-m", "pip", "check", "--disable-pip-version-check"],
                         capture_output=True, text=True, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.strip() and not line.startswith("No broken")]
    other = [line for line in lines if line.split()[0].lower() not in {t.lower() for t in tolerated}]
    assert not other, "pip check reports more than the --no-deps installs:\n" + "\n".join(other)
