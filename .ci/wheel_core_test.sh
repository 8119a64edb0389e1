#!/usr/bin/env bash
# Packaging check (issue 30, DESIGN.md section 11): the core install works inside someone
# else's stack. Builds the wheel, installs it ALONE (no extras, no constraints file) into a
# fresh venv beside OLDER minors of gymnasium, huggingface-hub and numpy than our lock
# (the lower bounds pyproject.toml states), then checks: torch, transformers, trl, datasets
# absent; `spade validate`, `spade registry add|list`; gym.make + reset + step of a seed env
# and of a sandboxed store env, with no "latest versioned environment" notice; a Hub push
# and pull against the packaged local Hub server. Downloads come from PyPI. ~1-2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PY:-python3}"
# older than requirements/constraints.txt, within pyproject.toml's ranges (their lower bounds)
OLDER=("gymnasium==1.2.3" "huggingface-hub==1.20.0" "numpy==2.0.2")

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$PY" -m venv "$work/venv"
pip=("$work/venv/bin/python" -m pip -q --disable-pip-version-check)
"${pip[@]}" wheel --no-deps -w "$work/dist" .
wheel=("$work"/dist/spade_envs-*.whl)
"${pip[@]}" install "${wheel[0]}" "${OLDER[@]}"
echo "[${SECONDS}s] core wheel installed beside ${OLDER[*]}"
# pip's own check: everything installed is consistent
"$work/venv/bin/python" -m pip check --disable-pip-version-check

export SPADE_HOME="$work/home" HF_HUB_DISABLE_XET=1 HF_TOKEN=hf_local HF_HUB_OFFLINE=0
cd "$work"   # away from the checkout: only the installed wheel is importable
cat > relay_env.py <<'PYEOF'
import random

METADATA = {"name": "Relay", "skill": "arithmetic", "description": "Add two numbers.", "tags": ["math"]}


class RelayEnv:
    def __init__(self, max_turns=2, **kwargs):
        self.max_turns = max_turns
        self.reset()

    def reset(self, seed=None):
        rng = random.Random(seed)
        self._a, self._b, self._turn = rng.randint(10, 99), rng.randint(10, 99), 0
        return f"Runner one carries {self._a} letters, runner two {self._b}. How many in total? Use \\boxed{{}}.", {}

    def step(self, action):
        self._turn += 1
        if f"\\boxed{{{self._a + self._b}}}" in action:
            return "Delivered!", 1.0, True, False, {}
        return "Wrong count.", 0.0, False, self._turn >= self.max_turns, {}

    def solution(self):
        return str(self._a + self._b)
PYEOF
bin="$work/venv/bin"
"$bin/spade" validate relay_env.py --json > validate.json
"$bin/spade" registry add relay_env.py --json > add.json
"$bin/spade" registry list > list.txt
grep -q "^spade/Env-01000 " list.txt
echo "[${SECONDS}s] spade validate, registry add, registry list"

"$bin/python" - "${OLDER[@]}" <<'PYEOF'
import importlib.metadata as md
import importlib.util
import json
import sys
import warnings

for pinned in sys.argv[1:]:
    name, version = pinned.split("==")
    assert md.version(name) == version, (name, md.version(name), version)
heavy = [m for m in ("torch", "transformers", "trl", "datasets", "vllm", "tensorboard") if importlib.util.find_spec(m)]
assert not heavy, f"the core install pulled {heavy}"
assert json.load(open("validate.json"))["accepted"] is True
added = json.load(open("add.json"))["added"]
assert [a["id"] for a in added] == ["spade/Env-01000"], added

warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import gymnasium as gym

    import spade_envs

    for env_id in ("spade/Env-00001", "spade/Env-01000"):  # a seed (in-process) and a store entry (sandboxed)
        env = gym.make(env_id)
        obs, info = env.reset(seed=0)
        assert isinstance(obs, str) and obs, env_id
        for action in env.unwrapped.solution_actions():
            obs, reward, terminated, truncated, info = env.step(action)
        assert reward == 1.0 and terminated, (env_id, reward, obs)
        env.close()
    assert type(gym.make("spade/Env-01000").unwrapped._runtime).__module__.startswith("spade_envs.sandbox"), \
        "a store entry must run sandboxed"
notices = [str(w.message) for w in caught if "latest versioned environment" in str(w.message)]
assert not notices, notices
loaded = [m for m in ("torch", "transformers", "trl", "datasets") if m in sys.modules]
assert not loaded, loaded
print(f"core wheel OK: gymnasium {md.version('gymnasium')}, huggingface-hub {md.version('huggingface-hub')}, "
      f"numpy {md.version('numpy')}; seed and sandboxed store env made, reset, stepped to a win; no torch")
PYEOF

# Hub round trip through the packaged local server (huggingface-hub at its lower bound)
port="$("$bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$bin/python" -m spade_envs.registry.hub_testserver --port "$port" > hub.log 2>&1 &
hub_pid=$!
trap 'kill "$hub_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
export HF_ENDPOINT="http://127.0.0.1:$port"
for _ in $(seq 50); do "$bin/python" -c "import urllib.request as u; u.urlopen('$HF_ENDPOINT/health')" 2>/dev/null && break; sleep 0.2; done
"$bin/spade" registry push me/core-check > push.txt
SPADE_HOME="$work/other" "$bin/spade" registry pull me/core-check > pull.txt
SPADE_HOME="$work/other" "$bin/spade" registry list | grep -q "^spade/Env-01000 "
echo "[${SECONDS}s] core wheel OK: Hub push and pull with huggingface-hub $("$bin/python" -c 'import huggingface_hub as h; print(h.__version__)')"
