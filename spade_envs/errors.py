"""Exception classes of spade-envs.

Every error a user can cause has its own class and a message that says what to do.
The CLI turns any :class:`SpadeError` into one line on stderr and a non-zero exit.
"""

from __future__ import annotations


class SpadeError(Exception):
    """Base class of every error spade-envs raises on purpose."""


class EnvProgramError(SpadeError):
    """An environment source does not follow the program format (DESIGN.md section 3).

    ``stage`` names the acceptance stage the problem belongs to (``syntax``,
    ``interface``, ``tool_specs``...), so validators can report it as a verdict.
    """

    def __init__(self, message: str, stage: str = "interface") -> None:
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
        super().__init__(message, stage="tool_specs")


class EnvExecutionError(SpadeError):
    """Environment code raised, hung or broke a limit while running.

    ``kind`` is a short machine-readable verdict: ``error``, ``timeout``, ``memory``,
    ``output``, ``crash``, ``security``...
    """

    def __init__(self, message: str, kind: str = "error") -> None:
        super().__init__(message)
        self.kind = kind


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
