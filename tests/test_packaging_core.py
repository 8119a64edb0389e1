"""Issue 30: spade-envs inside someone else's stack.

- the core paths (``import spade_envs``, ``gym.make`` of a seed and of a sandboxed store
  env, ``spade validate``, ``spade registry add|list``) work with torch, transformers,
  trl, datasets, accelerate, vllm, tensorboard and matplotlib made unimportable;
- unversioned ``gym.make("spade/...")`` gives no "latest versioned environment" notice;
- ``spade registry list`` keeps ids whole at 80 columns, piped or on a terminal;
- packaging facts: one lock whose pins satisfy pyproject's ranges, ``spade`` the only
  script, the Python floor stated once (README agrees with ``requires-python``);
- ``spade registry pull`` gets the total of its progress; the ACEBench agreement line.

The wheel itself (fresh venv, older gymnasium/huggingface-hub/numpy, downloads from PyPI)
is checked by ``.ci/wheel_core_test.sh``, which CI runs (tests stay on loopback).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tomllib
from contextlib import contextmanager
from pathlib import Path

import pytest
from hub_server import HubServer
from registry_helpers import playable_source

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "trl", "datasets", "accelerate", "vllm", "tensorboard", "matplotlib")

BLOCKER = f"""
import importlib.abc, sys
class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HEAVY!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked by the test)", name=name)
sys.meta_path.insert(0, _Blocker())
"""


def _python(code: str, home: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER + code], capture_output=True, text=True, timeout=240,
                          cwd=home.parent, env={**os.environ, "SPADE_HOME": str(home), **env})


def test_core_paths_work_without_heavy_packages(tmp_path):
    program = tmp_path / "relay_env.py"
    program.write_text(playable_source(7), encoding="utf-8")
    code = f"""
import json, warnings
from spade_envs.cli.main import main
assert main(["validate", {str(program)!r}, "--json"]) == 0
assert main(["registry", "add", {str(program)!r}, "--json"]) == 0
assert main(["registry", "list", "--json"]) == 0
import gymnasium as gym
import spade_envs
for env_id in ("spade/Env-00001", "spade/Env-01000"):
    env = gym.make(env_id)
    obs, info = env.reset(seed=0)
    for action in env.unwrapped.solution_actions():
        obs, reward, terminated, truncated, info = env.step(action)
    assert reward == 1.0 and terminated, (env_id, obs)
    print(env_id, type(env.unwrapped._runtime).__module__)
    env.close()
print("loaded:", sorted(m for m in {HEAVY!r} if m in sys.modules))
"""
    done = _python(code, tmp_path / "home")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "spade/Env-00001 spade_envs.runtime" in done.stdout
    assert re.search(r"spade/Env-01000 spade_envs\.sandbox", done.stdout), done.stdout  # the store entry: sandboxed
    assert "loaded: []" in done.stdout


def test_a_command_needing_an_extra_says_which_one(tmp_path):
    code = """
from spade_envs.cli.main import main
sys.exit(main(["eval", "--suite", "registry", "--agent", "transformers:tiny-random", "--limit", "1"]))
"""
    done = _python(code, tmp_path / "home")
    assert done.returncode == 1, done.stderr[-3000:]
    assert done.stderr.strip().splitlines()[-1] == "spade: error: this command needs torch: pip install 'spade-envs[agents]'"


def test_unversioned_make_gives_no_latest_version_notice(tmp_path):
    code = """
import warnings
warnings.simplefilter("always")
import gymnasium as gym
import spade_envs
for _ in range(3):
    gym.make("spade/Env-00001").close()
gym.register("OtherPkg/Thing-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv")
gym.make("OtherPkg/Thing").close()   # other packages' ids keep Gymnasium's notice
"""
    done = _python(code, tmp_path / "home")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "`spade/Env-00001-v0`" not in done.stderr
    assert "Using the latest versioned environment `OtherPkg/Thing-v0`" in done.stderr


ID = re.compile(r"^spade/Env-\d{5,}$")


def test_registry_list_piped_at_80_columns_keeps_ids_whole(tmp_path):
    done = subprocess.run([str(Path(sys.executable).parent / "spade"), "registry", "list"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "SPADE_HOME": str(tmp_path), "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["id", "version", "generation", "status", "skill", "class"]
    ids = [line.split()[0] for line in lines[1:]]
    assert len(ids) == 30 and all(ID.match(i) for i in ids), ids
    assert "…" not in done.stdout and "│" not in done.stdout  # plain text for pipes: no boxes, nothing cut


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_rich_table_keeps_ids_whole_on_an_80_column_terminal(monkeypatch):
    from spade_envs.cli.tables import print_table

    monkeypatch.setenv("COLUMNS", "80")
    out = _Terminal()
    long_id = "spade/Env-123456-v12"
    print_table("t", ("id", "version", "generation", "status", "skill", "class"),
                [(long_id, "12", "3", "quarantined", "multi-step planning " * 3, "AVeryLongEnvironmentClassNameEnv")],
                stream=out)
    text = out.getvalue()
    assert long_id in text, text
    assert max(len(re.sub(r"\x1b\[[0-9;]*m", "", line)) for line in text.splitlines()) <= 80


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_one_lock_whose_pins_satisfy_the_ranges():
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    assert not (ROOT / "uv.lock").exists()
    assert "-c requirements/constraints.txt" in (ROOT / "Makefile").read_text().replace("$(LOCK)",
                                                                                      "requirements/constraints.txt")
    pins = {}
    for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    project = _project()
    reqs = [Requirement(r) for r in project["dependencies"]]
    reqs += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    for req in reqs:
        name = canonicalize_name(req.name)
        if name == "spade-envs" or name == "vllm" or (req.marker and not req.marker.evaluate()):
            continue  # self-references; vllm is pinned on GPU machines only
        assert name in pins, f"{name} is a dependency but not in the lock"
        assert req.specifier.contains(pins[name], prereleases=True), f"lock {name}=={pins[name]} outside {req}"
    core = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    assert not core & {"torch", "transformers", "trl", "datasets", "accelerate", "vllm", "tensorboard"}


def test_only_spade_on_path_and_python_floor_stated_once():
    project = _project()
    assert set(project["scripts"]) == {"spade"}
    floor = re.fullmatch(r">=(3\.\d+)", project["requires-python"]).group(1)
    assert sys.version_info >= tuple(map(int, floor.split(".")))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    stated = set(re.findall(r"Python (3\.\d+)\+|`python3` \((3\.\d+)\+", readme))
    assert {v for pair in stated for v in pair if v} == {floor}, stated


def test_pull_progress_gets_its_total(tmp_path, monkeypatch):
    from spade_envs.cli import registry_sharing
    from spade_envs.cli.main import main
    from spade_envs.registry.store import Registry

    totals: list[int] = []

    @contextmanager
    def recording(total, description):
        def advance(n: int = 1) -> None:
            pass

        advance.set_total = totals.append
        yield advance

    monkeypatch.setattr(registry_sharing, "_progress", recording)
    with HubServer() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
        monkeypatch.setenv("HF_TOKEN", "hf_test")
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setenv("SPADE_HOME", str(tmp_path / "alice"))
        with Registry.open(tmp_path / "alice" / "registry.sqlite3") as reg:
            for i in range(3):
                reg.add(playable_source(40 + i), generation=1)
        assert main(["registry", "push", "me/progress", "--json"]) == 0
        monkeypatch.setenv("SPADE_HOME", str(tmp_path / "bob"))
        assert main(["registry", "pull", "me/progress", "--skip-acceptance", "--json"]) == 0
    assert totals == [3]


def test_acebench_agreement_line_shows_only_what_was_compared():
    from spade_envs.evals.acebench_agreement import agreement_line

    normal_only = {"entries": {"n": 0, "agree": 0, "rate": None}, "perturbed": {"n": 0, "agree": 0, "rate": None},
                   "categories": {"special_irrelevant": {"agree": True}, "normal_atom_bool": {"agree": False}}}
    assert agreement_line(normal_only) == "agreement with ACEBench's evaluation: categories 1/2"
    agent = {"entries": {"n": 50, "agree": 50}, "perturbed": {"n": 200, "agree": 198}, "categories": {}}
    assert agreement_line(agent) == ("agreement with ACEBench's evaluation: agent entries 50/50, "
                                     "perturbed trajectories 198/200")
    assert "0/0" not in agreement_line({"entries": {"n": 0, "agree": 0}})


@pytest.mark.parametrize("doc", ["hub.md", "evals.md"])
def test_docs_say_where_things_come_from(doc):
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    if doc == "hub.md":
        assert "python -m spade_envs.registry.hub_testserver" in text
    else:
        assert "github.com/ACEBench/ACEBench" in text and "--data" in text and "../shared" not in text


def test_every_subpackage_is_in_the_wheel():
    """The editable install finds any package; the wheel only those pyproject.toml lists."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed, mapping = set(tool["packages"]), tool["package-dir"]
    found = set()
    for package, folder in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            found.add(".".join([package, *rel.parts]))
    assert found - listed == set(), "add these to [tool.setuptools] packages"
