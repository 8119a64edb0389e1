#!/usr/bin/env bash
# verifiers' current release in an environment of its own (issue 41 point 4): verifiers
# 0.3.x pins mcp<2 (openenv-core needs mcp 2) and 0.4 pins openai<3, so it cannot join the
# one lock (requirements/constraints.txt keeps the tested 0.1.10). This script makes a
# fresh venv with the core install and VERIFIERS (default: the newest 0.3 release, whose
# environment API lives in verifiers.legacy) and runs the verifiers tests there:
#   VERIFIERS="verifiers==0.3.1" .ci/verifiers_current.sh
# A 0.4 (v1-only) release has no MultiTurnEnv: the contract test expects the one clear
# error then (tests/test_verifiers_contract.py). Downloads come from PyPI. ~2-4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-python3}"
VERIFIERS="${VERIFIERS:-verifiers>=0.3,<0.4}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$PY" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$VERIFIERS" pytest pytest-timeout .
"$work/venv/bin/python" -c "import verifiers; print('verifiers', verifiers.__version__)"
"$work/venv/bin/python" -m pip check --disable-pip-version-check
export SPADE_HOME="$work/home"
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider tests/test_verifiers_contract.py tests/test_integrations_verifiers.py
