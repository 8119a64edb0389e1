"""One post-termination rule for every environment (issue 27, point 9), enforced by the
runtime: after a step returned ``terminated`` or ``truncated`` (or the program failed),
``step`` without ``reset`` raises ``EpisodeOverError`` ("call reset()") and the program
is not called; a hand-written loop can never count a win twice. Checked on every id of
the registry (seeds and games), in-process and sandboxed, one by one and batched, and
on Gymnasium's vector envs (their autoreset never meets the error)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import spade_envs  # noqa: F401  (registers the spade/ namespace)
from spade_envs.errors import EpisodeOverError, SpadeError
from spade_envs.gym_env import SpadeEnv, step_many
from spade_envs.runtime import InProcessRuntime
from spade_envs.sandbox import SandboxRuntime

pytestmark = pytest.mark.filterwarnings("ignore:.*latest versioned environment")
IDS = sorted(i for i in gym.registry if i.startswith("spade/"))

#: pays 1.0 and says "terminated" on every step, also after the end (a program that
#: would let a loop count the same win again and again)
PAYS_TWICE = (
    "class PaysTwiceEnv:\n"
    "    def __init__(self, **kw):\n        self.reset()\n"
    "    def reset(self, seed=None):\n        self.calls = 0\n        return 'go', {}\n"
    "    def step(self, action):\n"
    "        self.calls += 1\n"
    "        if action == 'boom':\n            raise ValueError('boom')\n"
    "        return 'won ' + str(self.calls), 1.0, True, False, {}\n"
    "    def solution(self):\n        return 'x'\n"
)


@pytest.fixture(scope="module")
def sandbox():
    rt = SandboxRuntime(step_timeout_s=20.0)
    yield rt
    rt.close()


def _play_to_the_end(env: gym.Env) -> tuple[float, bool, bool]:
    """The reference solution (single-player) or the scripted move (games) until the end."""
    env.reset(seed=5)
    inner = env.unwrapped
    actions = iter(inner.solution_actions()) if not inner.is_game else None
    for _ in range(300):
        action = inner.solution() if actions is None else next(actions, "\\boxed{0}")
        _, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return reward, terminated, truncated
    raise AssertionError("the episode did not end within 300 steps")


def _assert_episode_over(env: SpadeEnv) -> None:
    turns = env.turns
    for action in ("\\boxed{1}", env.solution() if env.is_game else "again"):
        with pytest.raises(EpisodeOverError, match=r"call reset\(\)"):
            env.step(action)
    assert env.turns == turns  # nothing was played
    obs, _ = env.reset(seed=6)  # reset makes it playable again
    assert isinstance(obs, str) and env.step("\\boxed{1}")[4]["turn"] == 1


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_answers_a_step_after_the_end_the_same_way(env_id, sandbox):
    made = gym.make(env_id)  # in-process (the shipped suite), through Gymnasium's wrappers
    reward, terminated, truncated = _play_to_the_end(made)
    if not made.unwrapped.is_game:
        assert reward == 1.0 and terminated  # the reference solution won
    with pytest.raises(EpisodeOverError):
        made.step("\\boxed{1}")
    _assert_episode_over(made.unwrapped)
    made.close()
    boxed = SpadeEnv(env_id, runtime=sandbox)  # the same program in the sandbox
    _play_to_the_end(boxed)
    _assert_episode_over(boxed)
    boxed.close()


@pytest.mark.parametrize("make_runtime", [InProcessRuntime, lambda: SandboxRuntime(step_timeout_s=20.0)],
                         ids=["in-process", "sandbox"])
def test_a_program_that_pays_after_the_end_is_not_called(make_runtime):
    runtime = make_runtime()
    try:
        env = SpadeEnv(source=PAYS_TWICE, runtime=runtime, trust_remote_code=True)
        env.reset(seed=0)
        assert env.step("x")[:3] == ("won 1", 1.0, True)
        with pytest.raises(EpisodeOverError):
            env.step("x")
        assert env.snapshot()["calls"] == 1  # the program never saw the second step
        # a failed step ends the episode too (SPADE: -1, terminated), then the same answer
        env.reset(seed=1)
        assert env.step("boom")[1:3] == (-1.0, True)
        with pytest.raises(EpisodeOverError):
            env.step("x")
        # batched: later calls of a session in the same batch, after its step that ended it
        session = runtime.open(PAYS_TWICE)
        other = runtime.open(PAYS_TWICE)
        out = runtime.step_batch([(session, "a"), (other, "b"), (session, "c")])
        assert out[0][:3] == ("won 1", 1.0, True) and out[1][1] == 1.0
        assert isinstance(out[2], EpisodeOverError)
        assert all(isinstance(r, EpisodeOverError) for r in runtime.step_batch([(session, "d"), (other, "e")]))
        assert runtime.reset_batch([(session, 0)])[0][0] == "go"
        assert runtime.step_batch([(session, "f")])[0][1] == 1.0
        assert session.snapshot()["calls"] == 1
        for s in (session, other):
            s.close()
        env.close()
    finally:
        runtime.close()


def test_step_many_refuses_a_batch_holding_a_finished_episode_before_stepping_any():
    envs = [SpadeEnv(source=PAYS_TWICE, trust_remote_code=True) for _ in range(3)]
    for env in envs:
        env.reset(seed=0)
    envs[1].step("x")  # its episode is over
    with pytest.raises(EpisodeOverError):
        step_many(envs, ["y", "y", "y"])
    assert [e.turns for e in envs] == [0, 1, 0]  # nobody was stepped
    envs[1].reset(seed=0)
    assert [r[1] for r in step_many(envs, ["y", "y", "y"])] == [1.0, 1.0, 1.0]
    for env in envs:
        env.close()


def test_the_error_is_a_spade_error_that_names_the_fix():
    exc = EpisodeOverError()
    assert isinstance(exc, SpadeError) and isinstance(exc, RuntimeError)
    assert "reset()" in str(exc)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_envs_autoreset_and_never_meet_the_error(mode):
    envs = gym.make_vec("spade/Env-00001", num_envs=2, vectorization_mode=mode)
    try:
        envs.reset(seed=[1, 2])
        ended = 0
        for _ in range(40):  # several episodes each: wrong guesses until the turn limit
            _obs, _rewards, terminated, truncated, _infos = envs.step(["\\boxed{1}", "\\boxed{2}"])
            ended += int(terminated.sum() + truncated.sum())
        assert ended >= 2
    finally:
        envs.close()
