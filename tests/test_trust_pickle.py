"""Attacks: a crafted pickle of a ``SpadeEnv`` tries to switch trust on (its state says
``trust_remote_code=True``, smuggles a runtime, or a spec whose kwargs trust), or to make
the receiver replay an unbounded episode (DESIGN.md section 5: a pickle's state never
carries trust; the receiver opts in itself).

The program reads a file of the test's temporary folder in ``reset``: only in-process
can it (the sandbox's file view does not hold it).
"""

from __future__ import annotations

import copyreg
import pickle
import time

import pytest
from gymnasium.envs.registration import EnvSpec

from spade_envs.gym_env import MAX_REPLAY_STEPS, EnvUnpicklingError, SpadeEnv
from spade_envs.runtime import InProcessRuntime
from spade_envs.trust import trust_remote_code_on_unpickle


def probe_source(secret: str) -> str:
    return f'''
class PickleProbeEnv:
    def __init__(self, **kwargs):
        self._turn = 0

    def reset(self, seed=None):
        try:
            with open({secret!r}) as fh:
                fh.read()
            where = "IN-PROCESS"
        except Exception:
            where = "sandboxed"
        self._turn = 0
        return where, {{}}

    def step(self, action):
        self._turn += 1
        return f"turn {{self._turn}}", 0.0, False, False, {{}}
'''


@pytest.fixture
def probe(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host only")
    return probe_source(str(secret))


class _Forged:
    """Pickles as ``SpadeEnv`` rebuilt from ``state`` (what a hostile sender would send)."""

    def __init__(self, state: dict) -> None:
        self.state = state

    def __reduce__(self):
        return copyreg._reconstructor, (SpadeEnv, object, None), self.state


def _state(source: str, **init) -> dict:
    return {"init": {"env_id": None, "version": None, "source": source, "hint": False, "render_mode": None,
                     "env_kwargs": {}, "opponent": "scripted", "seat": 0, **init},
            "seed": 3, "started": True, "actions": [], "use_hint": False, "rng": None, "spec": None}


def _where(env: SpadeEnv) -> str:
    return env.reset(seed=0)[0]


def test_trust_in_a_pickle_is_ignored(probe):
    blob = pickle.dumps(_Forged(_state(probe, trust_remote_code=True)))
    env = pickle.loads(blob)
    try:
        assert type(env._runtime).__name__ == "SandboxRuntime"
        assert _where(env) == "sandboxed"
    finally:
        env.close()


def test_a_runtime_smuggled_in_a_pickle_is_ignored(probe):
    blob = pickle.dumps(_Forged(_state(probe, runtime=InProcessRuntime(), trust_remote_code=True)))
    env = pickle.loads(blob)
    try:
        assert not isinstance(env._runtime, InProcessRuntime) and _where(env) == "sandboxed"
    finally:
        env.close()


def test_a_pickled_spec_cannot_carry_trust_to_a_later_gym_make(probe):
    state = _state(probe, trust_remote_code=True)
    state["spec"] = EnvSpec("spade/Forged-v0", entry_point="spade_envs.gym_env:SpadeEnv",
                            kwargs={"source": probe, "trust_remote_code": True})
    env = pickle.loads(pickle.dumps(_Forged(state)))
    try:
        assert env.spec is None  # made from a source: no id this process registered, so no spec
    finally:
        env.close()


def test_the_receiver_opts_in_itself(probe):
    trusted = SpadeEnv(source=probe, trust_remote_code=True)  # the caller's own argument
    assert _where(trusted) == "IN-PROCESS"
    blob = pickle.dumps(trusted)
    trusted.close()
    plain = pickle.loads(blob)  # the receiver did not opt in: sandboxed
    try:
        assert _where(plain) == "sandboxed"
    finally:
        plain.close()
    with trust_remote_code_on_unpickle():
        again = pickle.loads(blob)
    try:
        assert _where(again) == "IN-PROCESS"
    finally:
        again.close()
    untrusted = SpadeEnv(source=probe)
    with trust_remote_code_on_unpickle():  # opting in never upgrades an env made without trust
        copy = pickle.loads(pickle.dumps(untrusted))
    try:
        assert _where(copy) == "sandboxed"
    finally:
        copy.close()
        untrusted.close()


def test_unpickling_replays_a_bounded_episode():
    state = _state(None, env_id="spade/Env-00001")  # a seed: in-process, quick steps
    state["actions"] = ["\\boxed{0}"] * (MAX_REPLAY_STEPS + 1)
    blob = pickle.dumps(_Forged(state))
    t0 = time.perf_counter()
    with pytest.raises(EnvUnpicklingError, match="replays at most"):
        pickle.loads(blob)
    assert time.perf_counter() - t0 < 1.0
    state["actions"] = ["x" * 600_000, "y" * 600_000]
    with pytest.raises(EnvUnpicklingError, match="characters"):
        pickle.loads(pickle.dumps(_Forged(state)))
    state["actions"] = ["\\boxed{0}"] * 3  # within the caps: replayed
    env = pickle.loads(pickle.dumps(_Forged(state)))
    assert env.turns == 3


@pytest.mark.parametrize("bad", [{"init": "x"}, {"init": {"env_id": 5}}, {"init": {"env_id": "spade/Env-00001"},
                                                                            "started": True, "actions": "abc"}])
def test_malformed_pickled_state_is_one_clear_error(bad):
    with pytest.raises(EnvUnpicklingError, match="pickled environment"):
        pickle.loads(pickle.dumps(_Forged(bad)))
