"""The Gymnasium surface of DESIGN.md section 4: registration, make, spaces, seeding."""

from __future__ import annotations

import subprocess
import sys
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import spade_envs  # noqa: F401
from spade_envs.errors import InvalidEnvIdError, UnknownEnvironmentError
from spade_envs.gym_env import SpadeEnv
from spade_envs.registry.catalog import resolve, seed_records
from spade_envs.registry.ids import EnvId, format_env_id, parse_env_id
from spade_envs.spaces import UnicodeText
from registry_helpers import spade_home, synthetic_source  # noqa: F401  (fixture)

warnings.filterwarnings("ignore", message=".*latest versioned environment.*")
FIRST = str(seed_records()[0].env_id.base)


def test_ids_parse_and_format():
    assert parse_env_id("spade/Env-00421") == EnvId(421, None)
    assert parse_env_id("spade/Env-00421-v3") == EnvId(421, 3)
    assert parse_env_id("spade_envs:spade/Env-00421-v0") == EnvId(421, 0)
    assert format_env_id(7, 0) == "spade/Env-00007-v0"
    assert format_env_id(123456) == "spade/Env-123456"
    for bad in ["spade/Env-1", "spade/Env-00001-v", "other/Env-00001", "Env-0000a", "", None]:
        with pytest.raises(InvalidEnvIdError):
            parse_env_id(bad)


def test_every_seed_is_registered_versioned():
    for rec in seed_records():
        assert str(rec.env_id) in gym.envs.registration.registry
        assert gym.spec(str(rec.env_id)).entry_point == "spade_envs.gym_env:SpadeEnv"


def test_unversioned_make_resolves_latest_and_module_prefix_works(spade_home):
    """An id without a version makes the latest version (v1 of an entry with two), an
    explicit one makes that one, and the ``spade_envs:`` module prefix is accepted."""
    from spade_envs.registry.store import Registry

    with Registry.open(spade_home / "registry.sqlite3") as reg:
        v0 = reg.add(synthetic_source(1)).env_id
        v1 = reg.add(synthetic_source(2), replaces=v0.base).env_id
    assert v1.version == 1
    for make_id, version in ((v0.base, 1), (str(v0), 0), (f"spade_envs:{v1}", 1)):
        env = gym.make(make_id)
        assert isinstance(env.unwrapped, SpadeEnv) and env.unwrapped.version == version, make_id
        env.close()
    env = gym.make(f"spade_envs:{FIRST}-v0")
    assert isinstance(env.unwrapped, SpadeEnv) and env.unwrapped.version == 0
    env.close()


def test_unknown_id_is_a_clear_error():
    with pytest.raises(UnknownEnvironmentError, match="registry list"):
        resolve("spade/Env-99999")


def test_unicode_text_space():
    space = UnicodeText()
    assert space.contains("Grüße → 中文 \\boxed{42}")
    assert not space.contains(42)
    assert not space.contains("x" * (space.max_length + 1))
    assert space.contains(space.sample())


def test_check_env_on_first_seed():
    env = gym.make(FIRST)
    check_env(env.unwrapped, skip_render_check=False)
    env.close()


def test_reset_seed_reproduces_and_unseeded_reset_continues_deterministically():
    a, b = gym.make(FIRST), gym.make(FIRST)
    obs_a, _ = a.reset(seed=11)
    obs_b, _ = b.reset(seed=11)
    assert obs_a == obs_b
    assert a.unwrapped.solution() == b.unwrapped.solution()
    assert a.reset()[0] == b.reset()[0]  # both derive the next seed from the same RNG
    a.close()
    b.close()


def test_reset_info_carries_tools_and_id_but_not_hint():
    env = gym.make(FIRST)
    _, info = env.reset(seed=0)
    assert info["env_id"] == FIRST and info["version"] == 0
    assert isinstance(info["tools"], list)
    assert "hint" not in info
    env.close()


def test_hint_mode_puts_hint_in_first_observation():
    env = gym.make(FIRST, hint=True)
    obs, info = env.reset(seed=0)
    hint = env.unwrapped.hint()
    assert hint and hint in obs and info["hint"] == hint
    env.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec(mode):
    vec = gym.make_vec(FIRST, num_envs=2, vectorization_mode=mode)
    obs, _ = vec.reset(seed=[3, 4])
    assert len(obs) == 2 and all(isinstance(o, str) and o for o in obs)
    obs2, rewards, term, trunc, _ = vec.step(["\\boxed{-1}", "garbage"])
    assert len(obs2) == 2 and all(isinstance(o, str) for o in obs2)
    assert list(rewards) == [0.0, 0.0]
    vec.close()


def test_source_env_requires_sandbox_or_trust(monkeypatch):
    """A source that is not shipped runs in the sandbox; only trust_remote_code=True runs it
    in-process; with no sandbox to run it in, it is refused with UntrustedCodeError."""
    import builtins

    import spade_envs.trust as trust
    from spade_envs.errors import UntrustedCodeError
    from spade_envs.runtime import InProcessRuntime
    from spade_envs.sandbox import SandboxRuntime

    source = seed_records()[0].source
    sandboxed = SpadeEnv(source=source)
    trusted = SpadeEnv(source=source, trust_remote_code=True)
    assert isinstance(sandboxed._runtime, SandboxRuntime) and isinstance(trusted._runtime, InProcessRuntime)
    assert sandboxed.reset(seed=1)[0] == trusted.reset(seed=1)[0]  # the same program, either way
    sandboxed.close()
    trusted.close()
    real_import = builtins.__import__

    def no_sandbox(name, *args, **kwargs):
        if name.endswith("sandbox") and args and (args[2] or ()) and "SandboxRuntime" in args[2]:
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(trust, "_SHARED", {})
    monkeypatch.setattr(builtins, "__import__", no_sandbox)
    with pytest.raises(UntrustedCodeError, match="trust_remote_code=True"):
        SpadeEnv(source=source)


def test_import_is_light():
    code = (
        "import sys, spade_envs, gymnasium as gym; "
        "bad = [m for m in ('torch', 'transformers', 'trl', 'vllm', 'datasets') if m in sys.modules]; "
        "print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_demo_replays_the_seed_suite(capsys):
    from spade_envs.cli.main import main
    from spade_envs.games import is_multiplayer

    assert main(["demo", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    n = sum(1 for r in seed_records() if not is_multiplayer(r))
    assert f"reference solutions won {n}/{n} episodes" in out
