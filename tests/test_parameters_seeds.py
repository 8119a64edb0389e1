"""Difficulty ladders of the seed suite (spade_envs/seeds): every seed declares ``PARAMETERS``
with a ``difficulty`` level; each level makes, plays and passes acceptance; bad kwargs get one
clear error; defaults keep today's episodes."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import spade_envs  # noqa: F401  (registers spade/ ids)
from spade_envs.designer.acceptance import AcceptanceConfig, validate_source
from spade_envs.games import is_multiplayer
from spade_envs.games import open_game
from spade_envs.parameters import InvalidParametersError, defaults, sample_points, schema_of
from spade_envs.registry.catalog import seed_records

RECORDS = list(seed_records())
SINGLE = [r for r in RECORDS if not is_multiplayer(r)]
GAMES = [r for r in RECORDS if is_multiplayer(r)]


def _levels(rec) -> range:
    spec = schema_of(rec.source)["properties"]["difficulty"]
    return range(spec["minimum"], spec["maximum"] + 1)


def _id(rec) -> str:
    return rec.metadata["file"]


def test_every_seed_declares_a_difficulty_ladder() -> None:
    assert len(SINGLE) >= 24 and len(GAMES) >= 6
    for rec in RECORDS:
        schema = schema_of(rec.source, _id(rec))
        assert schema is not None, f"{_id(rec)} declares no PARAMETERS"
        spec = schema["properties"]["difficulty"]
        assert spec["minimum"] == 0 and spec["maximum"] >= 4, _id(rec)
        assert len(schema["properties"]) >= 2, f"{_id(rec)}: difficulty plus at least one concrete knob"
        for name, prop in schema["properties"].items():
            assert prop.get("description"), f"{_id(rec)}: {name} is undocumented"
        for level in _levels(rec):
            assert f"{level}:" in spec["description"], f"{_id(rec)}: level {level} is not described"


@pytest.mark.parametrize("rec", SINGLE, ids=_id)
def test_each_level_makes_and_its_solution_wins(rec) -> None:
    for level in _levels(rec):
        env = gym.make(f"{rec.env_id.base}-v0", difficulty=level, disable_env_checker=True)
        assert env.spec.kwargs["difficulty"] == level
        inner = env.unwrapped
        for seed in (0, 1):
            inner.reset(seed=seed)
            reward, done = 0.0, False
            for action in inner.solution_actions():
                _, reward, done, truncated, _ = inner.step(action)
                if done or truncated:
                    break
            assert done and reward >= 1.0, f"{_id(rec)} level {level} seed {seed}: the solution does not win"
        env.close()


@pytest.mark.parametrize("rec", SINGLE, ids=_id)
def test_check_env_at_a_sampled_point(rec) -> None:
    (point,) = sample_points(schema_of(rec.source), 1, seed=7)[-1:]
    env = gym.make(f"{rec.env_id.base}-v0", **point)
    assert {k: env.spec.kwargs[k] for k in point} == point
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


@pytest.mark.parametrize("rec", GAMES, ids=_id)
def test_each_game_level_opens_and_plays_its_scripted_moves(rec) -> None:
    for level in _levels(rec):
        game = open_game(rec.env_id.base, kwargs={"difficulty": level})
        game.reset(3)
        steps, done = 0, False
        while not done and steps < 400:
            acts = [game.scripted_action(p) for p in range(game.num_players)] if game.simultaneous else game.scripted_action()
            _, _, terminated, truncated, _ = game.step(acts)
            done, steps = terminated or truncated, steps + 1
        assert done, f"{_id(rec)} level {level} does not end"
        game.close()
        view = gym.make(f"{rec.env_id.base}-v0", difficulty=level)  # the single-agent view vs a built-in opponent
        assert view.spec.kwargs["difficulty"] == level
        view.reset(seed=0)
        view.close()
    env = spade_envs.make_aec(rec.env_id.base, difficulty=0)
    env.reset(seed=0)
    env.close()


@pytest.mark.parametrize("rec", RECORDS, ids=_id)
def test_acceptance_at_the_easiest_and_hardest_levels(rec) -> None:
    """Loose answer parsing at the easy levels must not let garbage win nor the answer leak."""
    top = max(_levels(rec))
    for level in (0, top):
        report = validate_source(rec.source, _id(rec), config=AcceptanceConfig(env_kwargs={"difficulty": level}),
                                 trust_remote_code=True)
        assert report.accepted, f"level {level}: {report.summary()}"


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"difficulty": 99}, "difficulty"), ({"dificulty": 1}, "dificulty"), ({"difficulty": "easy"}, "difficulty")]
)
def test_invalid_kwargs_one_clear_error(kwargs: dict, name: str) -> None:
    with pytest.raises(InvalidParametersError) as info:
        gym.make("spade/Env-00001", **kwargs)
    assert info.value.name == name and name in str(info.value)
    with pytest.raises(InvalidParametersError):
        spade_envs.make_aec("spade/Env-00025", **kwargs)


def test_defaults_keep_todays_episodes() -> None:
    """Passing the schema defaults explicitly gives the same episodes as passing nothing."""
    for rec in SINGLE:
        plain = gym.make(f"{rec.env_id.base}-v0", disable_env_checker=True).unwrapped
        explicit = gym.make(f"{rec.env_id.base}-v0", disable_env_checker=True, **defaults(schema_of(rec.source))).unwrapped
        for seed in (0, 5):
            assert plain.reset(seed=seed)[0] == explicit.reset(seed=seed)[0], _id(rec)
            assert plain.solution() == explicit.solution(), _id(rec)


@pytest.mark.parametrize("seq", [1, 13, 25])
def test_sandboxed_acceptance_at_the_easiest_level(seq: int) -> None:
    """The ladder code (loose parsing, prefetched tool calls) runs under the sandbox policy too."""
    rec = next(r for r in RECORDS if r.env_id.seq == seq)
    report = validate_source(rec.source, _id(rec), config=AcceptanceConfig(env_kwargs={"difficulty": 0}))
    assert report.accepted, report.summary()
    assert report.stages[-1].name == "parameters"
