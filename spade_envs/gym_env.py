"""``SpadeEnv``: the Gymnasium face of an environment program.

Observations and actions are Unicode text (:class:`~spade_envs.spaces.UnicodeText`).
``reset`` returns ``info`` with ``tools`` (OpenAI function specs), ``env_id`` and
``version``; the privileged hint is added (to the first observation and to ``info``) only
when the environment was made with ``hint=True``. Environment code runs through a
runtime: in-process for the shipped seed suite, the sandbox for anything else unless
``trust_remote_code=True``. A program that raises or hangs ends its episode
(``truncated=True``, ``info["error"]``) instead of raising into the caller.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from .actions import solution_to_actions
from .errors import EnvExecutionError, EnvProgramError, SpadeError
from .runtime import EnvRuntime, EnvSession, get_runtime
from .spaces import UnicodeText


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
        **kwargs: Any,
    ) -> None:
        if (env_id is None) == (source is None):
            raise ValueError("give exactly one of env_id= or source=")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        trusted = False
        if env_id is not None:
            from .registry.catalog import resolve

            record = resolve(env_id, version)
            source, trusted = record.source, record.trusted
            if record.params:  # a registry variant: its fixed kwargs, under any given ones
                env_kwargs = {**record.params, **(env_kwargs or {})}
            self.env_id, self.version = record.env_id.base, record.env_id.version
            self.spade_metadata = dict(record.metadata)
            from .multiplayer import is_multiplayer

            if is_multiplayer(record):
                raise EnvProgramError(
                    f"{record.env_id.base} is a multi-player game: use spade_envs.make_aec({record.env_id.base!r})"
                )
        else:
            self.env_id, self.version, self.spade_metadata = None, None, {}
        self.render_mode = render_mode
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.use_hint = hint
        self._runtime = runtime or get_runtime(trusted=trusted, trust_remote_code=trust_remote_code)
        # the program's own parameters: gym.make(id, difficulty=3) or env_kwargs={...};
        # the runtime validates them against the program's PARAMETERS (spade_envs.parameters)
        env_kwargs = self.env_kwargs = {**(env_kwargs or {}), **kwargs}
        self._session: EnvSession = self._runtime.open(
            source, kwargs=env_kwargs, filename=self.spade_metadata.get("file", "<env>")
        )
        self._last_obs = ""
        self._failed = False

    # -- Gymnasium API --------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        obs, info = self._session.reset(seed)
        info = dict(info)
        info.update(tools=self._session.tools, env_id=self.env_id, version=self.version)
        if self.use_hint:
            hint = self.hint()
            if hint:
                obs = f"{obs}\n\nHint: {hint}"
                info["hint"] = hint
        self._failed = False
        self._last_obs = obs
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        if self._failed:
            return self._last_obs, 0.0, False, True, {"error": "episode already failed; call reset()"}
        try:
            obs, reward, terminated, truncated, info = self._session.step(str(action))
        except (EnvExecutionError, EnvProgramError) as exc:
            self._failed = True
            kind = getattr(exc, "kind", None) or getattr(exc, "stage", "error")
            obs = f"Environment error ({kind}): {exc}"
            self._last_obs = obs
            return obs, 0.0, False, True, {"error": str(exc), "verdict": kind}
        self._last_obs = obs
        return obs, reward, terminated, truncated, dict(info)

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

    def solution(self) -> str:
        """Replayable winning action text of the current episode, one action per line."""
        return "\n".join(solution_to_actions(self._session.solution()))

    def solution_actions(self) -> list[str]:
        return solution_to_actions(self._session.solution())

    def hint(self) -> str | None:
        """The privileged hint of the current episode (None if the program has none)."""
        return self._session.hint()

    def snapshot(self) -> Any:
        return self._session.snapshot()
