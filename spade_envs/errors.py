"""Exception classes of spade-envs.

Every error a user can cause has its own class and a message that says what to do.
The CLI turns any :class:`SpadeError` into one line on stderr and a non-zero exit.
Failure kinds (:class:`FailureKind`) and stage names (:class:`Stage`) are written here
and nowhere else as text.

The classes below are the shared ones; these live with the module whose idea they name
(the map, checked by ``tests/test_one_place.py``):

- ``spade_envs.parameters``: ``ParametersSchemaError`` (an ``EnvProgramError``: a bad
  ``PARAMETERS``), ``InvalidParametersError`` (kwargs outside the schema; a ``ValueError``);
- ``spade_envs.schema_bounds``: ``SchemaDeadlineError`` (judging a schema overran its deadline),
  ``SchemaJudgementError`` (a schema, or an instance under it, cannot be judged) and its
  ``SchemaRefusedError`` (a schema handed to validation breaks a cap);
- ``spade_envs.episode``: ``InvalidActionError`` (an action that is not text; a ``TypeError``);
- ``spade_envs.gym_env``: ``EnvUnpicklingError`` (a pickle refused; an ``UnpicklingError``);
- ``spade_envs.integrations.openenv_server``: ``NoEpisodeError`` (step before reset over HTTP);
- ``spade_envs.selfplay``: ``SelfPlayConfigError`` (``config``), ``PlanError`` (``plan``: a
  layout that does not fit), ``CheckpointError`` (``checkpoint``);
- ``spade_envs.registry``: ``VariantError`` (``variants``), ``PoolError`` (``pool_layout``),
  both ``RegistryError``;
- ``spade_envs.designer``: ``NoParentsError`` (``params_mode``), ``CorpusError`` (``corpus``);
- ``spade_envs.evals``: ``BFCLUnavailableError`` (``bfcl_exec``), ``AceCallError`` (``acebench_calls``);
- internal, never reaching a user (caught where raised): ``ProtocolError``
  (``sandbox.protocol``), ``LandlockError`` (``sandbox.landlock``) and ``WorkerStartError``
  (``sandbox.zygote``), both ``OSError``; ``AnswerError`` (``designer.params_prompts``) and
  ``CallParseError`` (``evals.bfcl_exec``), both ``ValueError``.
"""

from __future__ import annotations

from enum import Enum, StrEnum


class SpadeError(Exception):
    """Base class of every error spade-envs raises on purpose."""


class Stage(StrEnum):
    """The acceptance stages (DESIGN.md section 6), and the designer's checks around them,
    by name: a verdict's ``name`` and an :class:`EnvProgramError`'s ``stage`` (the stage
    a format problem belongs to). A str
    enum: each member equals, formats and serializes as its value (``"size_syntax"``).
    Their order in a pipeline is the acceptance package's stage lists, not this one."""

    SIZE_SYNTAX = "size_syntax"
    COMPILE = "compile"
    INTERFACE = "interface"
    TOOL_SPECS = "tool_specs"
    SMOKE = "smoke"
    DETERMINISM = "determinism"
    SEED_VARIETY = "seed_variety"
    SOLUTION_REPLAY = "solution_replay"
    GARBAGE = "garbage"
    NO_LEAK = "no_leak"
    NOVELTY = "novelty"
    RANDOM_PLAY = "random_play"  #: games
    SCRIPTED_PLAY = "scripted_play"  #: games
    INFORMATION = "information"  #: games
    PARAMETERS = "parameters"  #: programs that declare PARAMETERS
    # the designer's own checks, before (and around) the pipeline: a proposal's verdicts
    # start with these (``extract``/``parse`` then the pipeline's, or one failed ``propose``)
    PROPOSE = "propose"  #: the designer model gave an answer at all
    EXTRACT = "extract"  #: code mode: a Python program was found in the answer
    PARSE = "parse"  #: params mode: the answer names an offered parent and a JSON object of knobs
    PARAMS = "params"  #: params mode: the point is valid under the parent's PARAMETERS
    INCOMPLETE = "incomplete"  #: not every stage the pipeline expected ran
    INTERNAL = "internal"  #: the judge itself failed (a bug or a lost worker, not the program)

    @classmethod
    def named(cls, value: object) -> Stage | None:
        """The stage named by ``value``, or None when it names none (an error label such as
        the sandbox policy's ``sandbox_compile``, which fails the stage that runs it)."""
        try:
            return cls(str(value))
        except ValueError:
            return None


class EnvProgramError(SpadeError):
    """An environment source does not follow the program format (DESIGN.md section 3).

    ``stage`` names the acceptance stage the problem belongs to (a :class:`Stage`:
    ``size_syntax``, ``interface``, ``tool_specs``...), so validators can report it as a
    verdict; it crosses the sandbox boundary as its string.
    """

    def __init__(self, message: str, stage: str = Stage.INTERFACE) -> None:
        super().__init__(message)
        self.stage = stage


#: ``EnvProgramError.stage`` of a program that defines no ``solution()`` (the stage travels
#: across the sandbox boundary; the class does not)
NO_SOLUTION_STAGE = "no_solution"


class NoSolutionError(EnvProgramError):
    """The program defines no ``solution()`` (SPADE requires only ``reset`` and ``step``):
    it plays, but nothing can replay a win, so acceptance marks it unverified."""

    def __init__(self, message: str = "the program defines no solution()") -> None:
        super().__init__(message, stage=NO_SOLUTION_STAGE)


class ToolSpecError(EnvProgramError):
    """A tool specification is not a valid OpenAI function definition."""

    def __init__(self, message: str) -> None:
        super().__init__(message, stage=Stage.TOOL_SPECS)


class EnvExecutionError(SpadeError):
    """Environment code raised, hung or broke a limit while running.

    ``kind`` is a :class:`FailureKind` (a str enum: it equals, formats and serializes as
    its value, ``"timeout"``); a name that is not one raises ``ValueError``.
    """

    def __init__(self, message: str, kind: "FailureKind | str" = "error") -> None:
        super().__init__(message)
        self.kind = FailureKind(kind)


class EpisodeOverError(SpadeError, RuntimeError):
    """``step`` after the episode ended, without ``reset`` in between. An episode ends
    when a step returns ``terminated`` or ``truncated`` (or, in ``SpadeEnv``, when the
    program failed). Every environment answers this way: the runtime enforces it
    (:class:`spade_envs.runtime.EnvSession`), the program is not called."""

    def __init__(self, message: str = "the episode is over (a step returned terminated or truncated): "
                                      "call reset() before step()") -> None:
        super().__init__(message)


class UnknownEnvironmentError(SpadeError):
    """An id does not name an environment in the active registry."""


class InvalidEnvIdError(SpadeError):
    """A string is not a well-formed spade environment id."""


class RegistryError(SpadeError):
    """The registry store cannot be opened or written."""


class UntrustedCodeError(SpadeError):
    """In-process execution of code that is not shipped with the package was requested
    without ``trust_remote_code=True``."""


class AgentError(SpadeError):
    """An agent or generation backend cannot be built or cannot generate (bad agent spec,
    missing model, unreachable server...)."""


class RegistryFormatError(RegistryError):
    """A registry store file cannot be used as is: ``kind`` is ``corrupt``, ``foreign``
    (an SQLite file of another application) or ``newer_schema`` (written by a newer
    spade-envs). The file is never modified."""

    def __init__(self, message: str, kind: str = "corrupt") -> None:
        super().__init__(message)
        self.kind = kind


class IntegrationError(SpadeError):
    """A framework integration (TRL adapter, OpenEnv server) cannot be set up: a missing
    optional dependency, a dataset row that does not match its environment class, a tool
    spec that cannot be expressed in the framework."""


class QuarantinedError(UnknownEnvironmentError):
    """The id names an entry whose every matching version is quarantined (see
    ``spade registry show ID`` for the reason; ``spade registry remove`` or a new version
    brings it back). A subclass of :class:`UnknownEnvironmentError`: it cannot be made."""


class FailureKind(StrEnum):
    """What went wrong in an episode, as a value callers branch on (never message text).

    The execution kinds are those of :class:`EnvExecutionError`; ``open`` is an
    environment that could not be made (unknown id, bad parameters, a program refused at
    load)."""

    ERROR = "error"  #: the program raised
    TIMEOUT = "timeout"  #: a call overran its wall-clock deadline (the worker was killed)
    MEMORY = "memory"  #: the worker ran out of its memory limit
    RECURSION = "recursion"  #: the program recursed too deep
    OUTPUT = "output"  #: a reply broke the message caps (size, JSON, finite floats)
    CRASH = "crash"  #: the worker died
    SECURITY = "security"  #: the jail refused an operation
    CLOSED = "closed"  #: the session was already closed
    OPEN = "open"  #: the environment could not be made or reset

    @classmethod
    def of(cls, value: object) -> FailureKind:
        """The kind named by ``value``; an unknown name is :attr:`ERROR`."""
        try:
            return cls(str(getattr(value, "value", value)))
        except ValueError:
            return cls.ERROR


class EnvFailure(str):
    """Why an episode failed: its message (it *is* that ``str``, so logs, reports and JSON
    keep showing it) plus a :class:`FailureKind` in ``kind`` for code to branch on.

    >>> failure = EnvFailure("timeout", "step() exceeded its 5 s deadline")
    >>> failure.kind is FailureKind.TIMEOUT, str(failure)
    (True, 'step() exceeded its 5 s deadline')
    """

    kind: FailureKind

    def __new__(cls, kind: FailureKind | str, message: str) -> EnvFailure:
        failure = super().__new__(cls, message)
        failure.kind = FailureKind.of(kind)
        return failure

    @classmethod
    def from_exception(cls, exc: BaseException, *, default: FailureKind | str = FailureKind.ERROR,
                       prefix: str = "") -> EnvFailure:
        """The failure an exception stands for (:class:`EnvExecutionError` keeps its kind)."""
        kind = exc.kind if isinstance(exc, EnvExecutionError) else default
        return cls(kind, f"{prefix}{exc}")

    def __reduce__(self) -> tuple:
        return (EnvFailure, (self.kind.value, str(self)))

    def __repr__(self) -> str:
        return f"EnvFailure({self.kind.value!r}, {str(self)!r})"
