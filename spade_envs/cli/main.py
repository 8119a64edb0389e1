"""The ``spade`` command line (DESIGN.md section 10).

Each command group lives in its own module of this package and registers itself with
``register(app)``; heavy libraries are imported inside the commands, so ``spade --help``
stays fast. Every :class:`~spade_envs.errors.SpadeError` and usage error becomes one line
on stderr and a non-zero exit, never a traceback (set ``SPADE_DEBUG=1`` to see one).
"""

from __future__ import annotations

import importlib
import os
import sys

import click
import typer

from ..errors import SpadeError

app = typer.Typer(
    name="spade",
    help="spade-envs: a Gymnasium registry of LLM-synthesized environments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"spade-envs {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
) -> None:
    """spade-envs: a Gymnasium registry of LLM-synthesized environments."""

#: command modules, each with a ``register(app)`` function
COMMAND_MODULES = [
    "spade_envs.cli.validate",
    "spade_envs.cli.registry_cmd",
    "spade_envs.cli.design",
    "spade_envs.cli.selfplay",
    "spade_envs.cli.eval_cmd",
    "spade_envs.cli.leaderboard",
    "spade_envs.cli.bench",
    "spade_envs.cli.demo",
    "spade_envs.cli.serve",
]


def _load_commands() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that command group is not built yet
                continue
            raise
        module.register(app)


_load_commands()


def fail(message: str, code: int = 1) -> "typer.Exit":
    """Print one error line on stderr and return the Exit to raise."""
    from ..textsafe import safe_text  # messages may quote a program or a registry row

    typer.echo(f"spade: error: {safe_text(message)}", err=True)
    return typer.Exit(code)


try:  # typer 0.2x parses with a vendored copy of click, whose exceptions are distinct classes
    from typer._click import exceptions as _vendored
except ImportError:  # pragma: no cover - older typer uses click itself
    _vendored = click.exceptions
_EXIT = (click.exceptions.Exit, *[c for c in (getattr(_vendored, "Exit", None),) if c])
_ABORT = (click.exceptions.Abort, *[c for c in (getattr(_vendored, "Abort", None),) if c])
_USAGE = (click.UsageError, *[c for c in (getattr(_vendored, "UsageError", None),) if c])
_CLICK = (click.ClickException, *[c for c in (getattr(_vendored, "ClickException", None),) if c])


#: top-level module of an optional dependency -> the extra that brings it (pyproject.toml)
EXTRAS = {
    **dict.fromkeys(("torch", "transformers", "gguf", "lmformatenforcer", "httpx", "safetensors"), "agents"),
    **dict.fromkeys(("trl", "accelerate", "datasets", "tensorboard"), "train"),
    **dict.fromkeys(("mpmath", "openpyxl", "reasoning_gym", "verifiers", "matplotlib"), "evals"),
    "openenv": "openenv", "vllm": "gpu",
}


#: commands whose whole dependency set is one extra: a missing module of it names that
#: extra at once (``selfplay`` needs ``[train]``, which brings ``[agents]`` too), so the
#: user installs once instead of meeting one extra after the other
COMMAND_EXTRAS = {"selfplay": ("train", {"agents", "train"})}


def missing_extra(module: str, command: str | None = None) -> str | None:
    """The install line for a missing optional module, or None when it is not one of ours."""
    top = module.split(".")[0]
    if top == "bfcl_eval":
        return "pip install --no-deps bfcl-eval mpmath"
    if top not in EXTRAS:
        return None
    whole, covers = COMMAND_EXTRAS.get(command or "", (None, set()))
    return f"pip install 'spade-envs[{whole if EXTRAS[top] in covers else EXTRAS[top]}]'"


def _command(argv: list[str] | None) -> str | None:
    import sys

    args = sys.argv[1:] if argv is None else argv
    return next((a for a in args if not a.startswith("-")), None)


#: commands that load TRL/accelerate, which import DeepSpeed where it is installed
_TRAINING_COMMANDS = frozenset({"selfplay", "bench", "design"})


def _deepspeed_logs_to_stderr(argv: list[str] | None) -> None:
    """DeepSpeed's logger writes to the ``sys.stdout`` of its import (an accelerator
    warning at import, info lines later): under ``--json`` stdout holds one JSON object,
    so DeepSpeed is imported first with ``sys.stdout`` pointing at stderr."""
    args = sys.argv[1:] if argv is None else argv
    if "--json" not in args or not args or args[0] not in _TRAINING_COMMANDS or "deepspeed" in sys.modules:
        return
    import importlib.util

    if importlib.util.find_spec("deepspeed") is None:
        return
    real, sys.stdout = sys.stdout, sys.stderr
    try:
        import deepspeed  # noqa: F401  (its handlers now hold stderr)
    except Exception:  # a broken DeepSpeed install is the command's own error to report
        pass
    finally:
        sys.stdout = real


def main(argv: list[str] | None = None) -> int:
    _deepspeed_logs_to_stderr(argv)
    try:
        rv = app(args=argv, standalone_mode=False)
        return rv if isinstance(rv, int) else 0  # typer.Exit(n) comes back as n here
    except _EXIT as exc:
        return exc.exit_code
    except _ABORT:
        typer.echo("spade: aborted", err=True)
        return 130
    except _USAGE as exc:
        message = exc.format_message().strip()
        if not message:  # a bare command or group: click printed its usage already
            return 0
        typer.echo(f"spade: usage error: {message}", err=True)
        return 2
    except _CLICK as exc:
        typer.echo(f"spade: error: {exc.format_message()}", err=True)
        return exc.exit_code or 1
    except SpadeError as exc:
        fail(str(exc))
        return 1
    except ModuleNotFoundError as exc:  # an optional dependency of this command is not installed
        hint = missing_extra(exc.name or "", _command(argv))
        if hint is None:
            return _internal_error(exc)
        fail(f"this command needs {(exc.name or '').split('.')[0]}: {hint}")
        return 1
    except KeyboardInterrupt:
        typer.echo("spade: interrupted", err=True)
        return 130
    except Exception as exc:  # last resort: one line, not a traceback
        return _internal_error(exc)


def _internal_error(exc: Exception) -> int:
    if os.environ.get("SPADE_DEBUG"):
        raise exc
    from ..textsafe import safe_text

    typer.echo(safe_text(f"spade: internal error: {type(exc).__name__}: {exc} (set SPADE_DEBUG=1 for a traceback)"),
               err=True)
    return 1


def entrypoint() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entrypoint()
