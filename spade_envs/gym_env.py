r"""``SpadeEnv``: the Gymnasium face of an environment program.

Observations and actions are Unicode text (:class:`~spade_envs.spaces.UnicodeText`).
Environment code runs through a runtime: in-process for the shipped seed suite, the
sandbox for anything else unless ``trust_remote_code=True``.

- ``reset`` returns ``info`` with ``tools`` (OpenAI function specs), ``env_id``,
  ``version`` and ``messages`` (the opening conversation, see :meth:`SpadeEnv.messages`);
  the privileged hint is added (to the first observation and to ``info``) only when the
  environment was made with ``hint=True``. ``seed`` must be None or an int.
- ``step`` takes text (``str``; ``bytes`` are decoded as UTF-8; anything else raises
  :class:`~spade_envs.episode.InvalidActionError`, a ``TypeError``). Its ``info`` carries
  ``turn`` (step calls since reset) and, when the episode ends, ``terminated_by`` or
  ``truncated_by`` (``"max_turns"``, ``"env"``, or a failure verdict such as
  ``"timeout"``; see :mod:`spade_envs.episode`). A program that raises or hangs ends its
  episode as in SPADE (reward -1.0, ``terminated=True``, ``terminated_by`` the failure
  verdict, ``info["error"]``) instead of raising into the caller.
- After ``terminated`` or ``truncated`` (a failure included), ``step`` without ``reset``
  raises :class:`~spade_envs.errors.EpisodeOverError`: one rule for every environment,
  kept by the runtime (:mod:`spade_envs.runtime`), never by the program.
- Multi-player games (two or more players) are played from one seat against a built-in
  opponent: ``opponent="scripted"`` (default), ``"random"`` or a callable
  ``policy(observation, legal_actions) -> str``; ``seat=`` picks the agent's seat
  (:mod:`spade_envs.games.gym_view`). PettingZoo (``spade_envs.make_aec``) is the
  multi-agent API.
- Environments pickle: the pickled form is the id/version (or the source) plus the
  episode so far (seed and actions), replayed on unpickling in any process. A pickle
  never carries trust: unpickled, a program runs in the sandbox unless the receiving code
  opted in with :func:`spade_envs.trust.trust_remote_code_on_unpickle`; a replay longer
  than :data:`MAX_REPLAY_STEPS` steps (or :data:`MAX_REPLAY_CHARS` characters) is refused
  with :class:`EnvUnpicklingError`, before any program runs, and one that runs past
  :data:`MAX_REPLAY_S` seconds is stopped with it. A pickled ``EnvSpec`` never names code:
  the receiver rebuilds the spec from its own registration of the env's id.
- A registry variant's params reach the program's constructor only (``env_kwargs``);
  params naming one of ``SpadeEnv``'s own keywords are refused
  (:func:`spade_envs.trust.check_params`).
"""

from __future__ import annotations

import dataclasses
import pickle
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from .solutions import solution_plans
from .episode import EpisodeLog, coerce_action, coerce_seed, constructor_default, end_reason
from .errors import EnvExecutionError, EnvProgramError, EpisodeOverError, FailureKind, SpadeError
from .parameters import RESERVED_KEYWORDS
from .program import TURN_CAP
from .prompts import SYSTEM_PROMPT, opening_messages
from .records import resolve_record
from .runtime import EnvRuntime, EnvSession
from .spaces import UnicodeText
from .trust import check_params, get_runtime, unpickle_trusted

StepTuple = tuple[str, float, bool, bool, dict]

#: the most steps unpickling replays; a pickle holding more is refused
MAX_REPLAY_STEPS = 512
#: the most action text (characters, all steps together) unpickling replays
MAX_REPLAY_CHARS = 1_000_000
#: the most seconds unpickling spends replaying (checked before each step: at most this
#: plus one step's deadline)
MAX_REPLAY_S = 10.0
#: the constructor arguments a pickle may carry (trust and runtimes are never among them)
_PICKLED_INIT = ("env_id", "version", "source", "hint", "render_mode", "env_kwargs", "opponent", "seat")
_PICKLED_TYPES: dict[str, tuple[type, ...]] = {"env_id": (str,), "version": (int,), "source": (str,), "hint": (bool,),
                                               "render_mode": (str,), "env_kwargs": (dict,), "seat": (int,)}


class EnvUnpicklingError(SpadeError, pickle.UnpicklingError):
    """A pickled environment cannot be restored: malformed state, or a replay over the caps."""


class SpadeEnv(gym.Env[str, str]):
    """A spade environment. Make it with ``gym.make("spade/Env-00001")``, or directly
    from a source with ``SpadeEnv(source=text)``. Other keyword arguments are the
    program's parameters (its ``PARAMETERS`` schema), e.g. ``gym.make(id, difficulty=0)``;
    an invalid one raises :class:`~spade_envs.parameters.InvalidParametersError`."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}

    def __init__(
        self,
        env_id: str | None = None,
        version: int | None = None,
        *,
        source: str | None = None,
        hint: bool = False,
        trust_remote_code: bool = False,
        runtime: EnvRuntime | None = None,
        render_mode: str | None = None,
        env_kwargs: dict[str, Any] | None = None,
        opponent: Any = "scripted",
        seat: int = 0,
        **kwargs: Any,
    ) -> None:
        if (env_id is None) == (source is None):
            raise ValueError("give exactly one of env_id= or source=")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        from .games import is_multiplayer, is_multiplayer_source

        trusted = False
        if env_id is not None:
            record = resolve_record(env_id, version)  # the registry's records (spade_envs.records)
            source, trusted = record.source, record.trusted
            if record.params:  # a registry variant: its fixed kwargs, under any given ones (program only)
                params = check_params(record.params, f"{record.env_id}: stored variant params")
                env_kwargs = {**params, **(env_kwargs or {})}
            self.env_id, self.version = record.env_id.base, record.env_id.version
            self.spade_metadata = dict(record.metadata)
            game = is_multiplayer(record)
        else:
            self.env_id, self.version, self.spade_metadata = None, None, {}
            game = is_multiplayer_source(source)
        assert source is not None
        self._init_args = {"env_id": env_id if env_id is None else self.env_id, "version": self.version,
                           "source": None if env_id is not None else source, "hint": hint,
                           "trust_remote_code": trust_remote_code, "render_mode": render_mode,
                           "env_kwargs": {**(env_kwargs or {}), **kwargs}, "opponent": opponent, "seat": seat}
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.use_hint = hint
        self.is_game = game
        self._runtime = runtime or get_runtime(trusted=trusted, trust_remote_code=trust_remote_code)
        # the program's own parameters: gym.make(id, difficulty=3) or env_kwargs={...};
        # the runtime validates them against the program's PARAMETERS (spade_envs.parameters)
        env_kwargs = self.env_kwargs = {**(env_kwargs or {}), **kwargs}
        filename = self.spade_metadata.get("file", "<env>")
        if game:
            self._session: EnvSession = _open_game_view(source, self._runtime, env_kwargs, filename, opponent, seat)
        else:
            self._session = self._runtime.open(source, kwargs=env_kwargs, filename=filename)
        # SPADE's turn budget (spade_envs.program.TURN_CAP; None for the shipped seeds): every
        # step call counts, tool calls included; the program's own max_turns is capped to it
        self._turn_cap = None if game else getattr(self._runtime, "turn_cap", TURN_CAP)
        self._max_turns = _capped(env_kwargs.get("max_turns", _default_max_turns(source)), self._turn_cap)
        self._log = EpisodeLog()
        self._last_obs = ""
        self._first_obs = ""
        self._failed = False

    # -- Gymnasium API --------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        seed = coerce_seed(seed)
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        obs, info = self._session.reset(seed)
        self._log.reset(seed)
        info = dict(info)
        info.update(tools=self._session.tools, env_id=self.env_id, version=self.version)
        if self.use_hint:
            hint = self.hint()
            if hint:
                obs = f"{obs}\n\nHint: {hint}"
                info["hint"] = hint
        self._failed = False
        self._last_obs = self._first_obs = obs
        info["messages"] = self.messages()
        return obs, info

    def step(self, action: str) -> StepTuple:
        action = coerce_action(action)
        if self._failed:  # the post-termination rule (spade_envs.runtime), for a failed episode too
            raise EpisodeOverError("the episode is over (the program failed): call reset() before step()")
        try:
            result: StepTuple | SpadeError = self._session.step(action)
        except (EnvExecutionError, EnvProgramError) as exc:
            result = exc
        return self._finish_step(action, result)

    def _finish_step(self, action: str, result: StepTuple | SpadeError) -> StepTuple:
        """The wrapper's bookkeeping after the program answered (or failed) ``action``."""
        self._log.actions.append(action)
        if isinstance(result, SpadeError):
            self._failed = True
            kind = getattr(result, "kind", None) or getattr(result, "stage", FailureKind.ERROR)
            # SPADE's wrapper: a step that raises is ("Error: <message>", -1.0, True, False, {})
            obs = f"Error: {result}" if kind == FailureKind.ERROR else f"Environment error ({kind}): {result}"
            self._last_obs = obs
            return obs, -1.0, True, False, {"error": str(result), "verdict": kind, "terminated_by": kind,
                                            "turn": self._log.turns}  # SPADE: a crash is -1, terminated
        obs, reward, terminated, truncated, info = result
        self._last_obs = obs
        counted = info.get("game_moves", self._log.turns) if self.is_game else self._log.turns
        if self._turn_cap is not None and not (terminated or truncated) and self._log.turns >= self._turn_cap:
            truncated = True  # SPADE's loop ends after its budget of turns: the episode is over
            self._failed = True  # the program is not asked again (the post-termination rule)
            info = {**info, "truncated_by": "turn_cap"}
        info = end_reason(info, terminated, truncated, counted, self._max_turns)
        info["turn"] = self._log.turns
        return obs, reward, terminated, truncated, info

    def render(self) -> str | None:
        return self._last_obs if self.render_mode == "ansi" else None

    def close(self) -> None:
        session = getattr(self, "_session", None)
        if session is not None:
            try:
                session.close()
            except SpadeError:
                pass
        super().close()

    # -- spade extras ---------------------------------------------------------------
    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._session.tools

    def messages(self, *, native_tools: bool = False, answer_tool: bool = False,
                 system_prompt: str = SYSTEM_PROMPT) -> list[dict[str, str]]:
        """The opening conversation of the current episode, ``[system, user(first
        observation)]``: the system message states the protocol, the answer format and
        (``native_tools=False``) the tool specs; ``native_tools=True`` leaves the specs to a
        chat template that renders them; ``answer_tool=True`` asks for the final answer
        through an ``answer`` tool (function-calling trainers). See :mod:`spade_envs.prompts`."""
        return opening_messages(self._first_obs, self._session.tools, native_tools=native_tools,
                                answer_tool=answer_tool, base=system_prompt)

    def solution(self) -> str:
        """Replayable winning action text of the current episode, one action per line."""
        return "\n".join(self.solution_actions())

    def solution_actions(self) -> list[str]:
        """The reference's winning actions from the current state: the whole sequence in a
        single-player environment; in a game against a built-in opponent only the next
        move (the opponent's replies are not known in advance: ask again after each step)."""
        plans = solution_plans(self._session.solution(), self._session.tools, self._first_obs)  # acceptance's form:
        return plans[min(_solution_form(self.spade_metadata), len(plans) - 1)]

    def hint(self) -> str | None:
        """The privileged hint of the current episode (None if the program has none)."""
        return self._session.hint()

    def snapshot(self) -> Any:
        return self._session.snapshot()

    @property
    def turns(self) -> int:
        """Step calls since the last reset."""
        return self._log.turns

    # -- pickling ---------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        """id/version (or source) + the episode so far; the session itself never travels."""
        rng = getattr(self, "_np_random", None)
        return {"init": dict(self._init_args), "seed": self._log.seed, "started": self._log.started,
                "actions": list(self._log.actions), "use_hint": self.use_hint,
                "rng": None if rng is None else rng.bit_generator.state, "spec": getattr(self, "spec", None)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        init, replay = _unpickled_init(state)
        self.__init__(**init)  # type: ignore[misc]
        use_hint = state.get("use_hint", self.use_hint)
        self.use_hint = use_hint if isinstance(use_hint, bool) else self.use_hint
        if replay is not None:
            seed, actions = replay
            end = time.monotonic() + MAX_REPLAY_S
            self.reset(seed=seed)
            for done, action in enumerate(actions):
                if time.monotonic() > end:
                    self.close()
                    raise EnvUnpicklingError(
                        f"pickled environment: replaying its episode took longer than {MAX_REPLAY_S:g} s "
                        f"({done} of {len(actions)} steps; spade_envs.gym_env.MAX_REPLAY_S): reset() before pickling")
                self.step(action)
        if state.get("rng") is not None:
            try:
                self.np_random.bit_generator.state = state["rng"]
            except (TypeError, ValueError, KeyError) as exc:
                raise EnvUnpicklingError(f"pickled environment: unusable random-generator state ({exc})") from None
        self.spec = _unpickled_spec(state.get("spec"), self, init["trust_remote_code"])


def _check_reserved_keywords() -> None:
    """``SpadeEnv``'s keywords are exactly :data:`~spade_envs.parameters.RESERVED_KEYWORDS`
    (what no stored params may name): a new keyword must be added there too."""
    import inspect

    own = {p.name for p in inspect.signature(SpadeEnv.__init__).parameters.values()
           if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    if own != RESERVED_KEYWORDS:
        raise ImportError(f"SpadeEnv's keywords {sorted(own)} differ from parameters.RESERVED_KEYWORDS "
                          f"{sorted(RESERVED_KEYWORDS)}: update RESERVED_KEYWORDS with the signature")


_check_reserved_keywords()


def _solution_form(metadata: dict[str, Any]) -> int:
    """The stored ``solution_form`` (which reading of ``solution()`` wins), 0 unless it is
    a non-negative int: registry metadata is data, never trusted to be well-formed."""
    form = metadata.get("solution_form")
    return form if isinstance(form, int) and not isinstance(form, bool) and form >= 0 else 0


def _unpickled_init(state: Any) -> tuple[dict[str, Any], tuple[int | None, list[str]] | None]:
    """Constructor kwargs and replay (seed, actions; None when not started) of a pickled
    state, checked before anything runs. Trust is the receiver's choice: in-process only
    inside :func:`~spade_envs.trust.trust_remote_code_on_unpickle` and only for an
    environment pickled with ``trust_remote_code=True``."""
    if not isinstance(state, dict) or not isinstance(state.get("init"), dict):
        raise EnvUnpicklingError("pickled environment: malformed state (expected the dict SpadeEnv.__getstate__ writes)")
    raw = state["init"]
    init = {k: raw[k] for k in _PICKLED_INIT if k in raw}
    for key, kinds in _PICKLED_TYPES.items():
        if init.get(key) is not None and (not isinstance(init[key], kinds) or isinstance(init[key], bool) is not (kinds == (bool,))):
            raise EnvUnpicklingError(f"pickled environment: {key!r} has the wrong type ({type(init[key]).__name__})")
    init["trust_remote_code"] = raw.get("trust_remote_code") is True and unpickle_trusted()
    if not state.get("started"):
        return init, None
    actions, seed = state.get("actions") or [], state.get("seed")
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise EnvUnpicklingError("pickled environment: the episode's actions must be a list of strings")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise EnvUnpicklingError("pickled environment: the episode's seed must be an int or None")
    if len(actions) > MAX_REPLAY_STEPS:
        raise EnvUnpicklingError(
            f"pickled environment holds an episode of {len(actions)} steps; unpickling replays at most "
            f"{MAX_REPLAY_STEPS} (spade_envs.gym_env.MAX_REPLAY_STEPS): reset() before pickling")
    if sum(len(a) for a in actions) > MAX_REPLAY_CHARS:
        raise EnvUnpicklingError(
            f"pickled environment holds more than {MAX_REPLAY_CHARS} characters of actions to replay "
            "(spade_envs.gym_env.MAX_REPLAY_CHARS): reset() before pickling")
    return init, (seed, actions)


def _unpickled_spec(spec: Any, env: SpadeEnv, trusted: bool) -> Any:
    """The spec of an unpickled env, rebuilt by the receiver: None unless the pickle had an
    ``EnvSpec`` and the env's id (resolved by this process's registry in ``__init__``) is
    registered here. Entry point, wrappers and kwargs come from this process's own
    registration and the env's checked constructor arguments, never from the pickle (whose
    spec may name any callable, ``"subprocess:run"`` included), and the trust is the one
    this process granted (``gym.make(env.spec)`` must neither run code nor switch trust on)."""
    from gymnasium.envs.registration import EnvSpec

    if not isinstance(spec, EnvSpec) or env.env_id is None or env.version is None:
        return None
    gym_id = f"{env.env_id}-v{env.version}"
    own = gym.envs.registration.registry.get(gym_id)
    if own is None:
        try:
            own = gym.spec(gym_id)  # a lazily registered store id
        except (gym.error.Error, LookupError, ValueError):
            return None
    kwargs = dict(own.kwargs or {})
    init = env._init_args
    if init.get("env_kwargs"):  # checked by the constructor (a variant's params included)
        kwargs["env_kwargs"] = dict(init["env_kwargs"])
    for key, plain in (("hint", False), ("render_mode", None), ("seat", 0)):
        if init.get(key) != plain:
            kwargs[key] = init[key]
    if trusted:
        kwargs["trust_remote_code"] = True
    steps = spec.max_episode_steps  # a number or None (data); anything else: the registered one
    if not (steps is None or (isinstance(steps, int) and not isinstance(steps, bool))):
        steps = own.max_episode_steps
    return dataclasses.replace(own, kwargs=kwargs, max_episode_steps=steps, order_enforce=spec.order_enforce is True,
                               disable_env_checker=spec.disable_env_checker is True)


def _capped(max_turns: Any, cap: int | None) -> Any:
    """``min(max_turns, cap)`` as SPADE's loader sets it (``cap`` when max_turns is no positive int)."""
    if cap is None:
        return max_turns
    ok = isinstance(max_turns, int) and not isinstance(max_turns, bool) and max_turns > 0
    return min(max_turns, cap) if ok else cap


def _default_max_turns(source: str) -> Any:
    """The program's ``max_turns`` default, read statically (``ToolUseBaseEnv``'s when a
    subclass inherits its constructor)."""
    value = constructor_default(source, None, "max_turns")
    if value is None and "ToolUseBaseEnv" in source:
        import inspect

        from .toolbase import ToolUseBaseEnv

        value = inspect.signature(ToolUseBaseEnv.__init__).parameters["max_turns"].default
    return value


def _open_game_view(source: str, runtime: EnvRuntime, kwargs: dict[str, Any] | None, filename: str,
                    opponent: Any, seat: int) -> EnvSession:
    from .games.gym_view import GameViewSession
    from .games.runtime import MultiPlayerSession, adapt_source
    from .games.format import inspect_game

    info = inspect_game(source, filename)
    session = runtime.open(adapt_source(source, info), kwargs=kwargs, filename=filename)
    try:
        return GameViewSession(MultiPlayerSession(session, runtime, info), opponent=opponent, seat=seat)
    except SpadeError:
        try:
            session.close()
        except SpadeError:
            pass
        raise


def step_many(envs: Sequence[SpadeEnv], actions: Sequence[str]) -> list[StepTuple]:
    """Step each env with its action, exactly as ``env.step`` would, but with the calls
    of envs that share a runtime sent through one ``EnvRuntime.step_batch`` (one round trip
    per runtime for a sandbox). Games and failed episodes step one by one."""
    out: list[StepTuple | None] = [None] * len(envs)
    groups: dict[int, tuple[EnvRuntime, list[int]]] = {}
    texts = [coerce_action(a) for a in actions]
    if any(env._failed or env._session.episode_over for env in envs):  # before any env is stepped
        raise EpisodeOverError("an episode in the batch is over: call reset() on it before step()")
    for i, env in enumerate(envs):
        if env.is_game or env._failed:
            out[i] = env.step(texts[i])
        else:
            groups.setdefault(id(env._runtime), (env._runtime, []))[1].append(i)
    for runtime, idx in groups.values():
        results = runtime.step_batch([(envs[i]._session, texts[i]) for i in idx])
        for i, result in zip(idx, results):
            out[i] = envs[i]._finish_step(texts[i], result)
    return [o for o in out if o is not None]
