"""Environment programs: one Python source file holding one public ``*Env`` class.

This module owns the *static* side of the format (DESIGN.md section 3): size and syntax,
finding the environment class, reading ``METADATA``, and the names that SPADE's designer
output may use without importing them (the *prelude*). Running a program is the job of
a runtime (:mod:`spade_envs.runtime`); this module never executes untrusted code.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from typing import Any

from . import pyast
from .errors import EnvProgramError, Stage
from .format_spec import required_methods

#: Largest accepted source, in bytes (a designer writing 200 kB is broken, not creative).
MAX_SOURCE_BYTES = 200_000

#: Modules SPADE's games use without importing them (in the order the designer's prompt lists them).
PRELUDE_MODULES = (
    "random re math json itertools collections functools string copy heapq operator statistics"
).split()

#: numpy, pre-loaded under both of these names.
NUMPY_NAMES = ("np", "numpy")

#: ``name -> (module, attribute)`` for the bare names SPADE's games use without imports.
PRELUDE_NAMES: dict[str, tuple[str, str]] = {
    **{n: ("collections", n) for n in ("deque", "defaultdict", "Counter", "OrderedDict", "namedtuple")},
    **{n: ("itertools", n) for n in ("combinations", "permutations", "product", "chain", "accumulate")},
    "reduce": ("functools", "reduce"),
    "lru_cache": ("functools", "lru_cache"),
    "deepcopy": ("copy", "deepcopy"),
    "heappush": ("heapq", "heappush"),
    "heappop": ("heapq", "heappop"),
    **{
        n: ("typing", n)
        for n in (
            "Tuple Dict List Optional Union Any Set FrozenSet Callable Iterable Sequence Mapping".split()
        )
    },
}


def preloaded_names() -> list[str]:
    """The names a program uses without importing them, as the designer's prompt lists them:
    the prelude modules, numpy's names, then the bare names (typing's are summed up there)."""
    bare = [n for n, (mod, _) in PRELUDE_NAMES.items() if mod != "typing"]
    return [*PRELUDE_MODULES, *NUMPY_NAMES, *bare]


@dataclass(frozen=True)
class ProgramInfo:
    """What can be learnt about a source without running it."""

    class_name: str
    metadata: dict[str, Any] = field(default_factory=dict)
    sha256: str = ""
    uses_tool_base: bool = False
    methods: frozenset[str] = frozenset()
    #: what the loader tolerated, for the verdict (e.g. several public ``*Env`` classes)
    notes: tuple[str, ...] = ()


def source_sha256(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def parse_source(source: Any, filename: str = "<env>") -> ast.Module:
    """Stage ``syntax``: the source is UTF-8 text within the size limit that parses."""
    if isinstance(source, bytes):
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EnvProgramError(f"{filename}: source is not UTF-8 ({exc.reason})", stage=Stage.SIZE_SYNTAX) from None
    if not isinstance(source, str):
        raise EnvProgramError(f"{filename}: source must be text, got {type(source).__name__}", stage=Stage.SIZE_SYNTAX)
    size = len(source.encode("utf-8"))
    if size > MAX_SOURCE_BYTES:
        raise EnvProgramError(f"{filename}: source is {size} bytes (limit {MAX_SOURCE_BYTES})", stage=Stage.SIZE_SYNTAX)
    if not source.strip():
        raise EnvProgramError(f"{filename}: source is empty", stage=Stage.SIZE_SYNTAX)
    try:
        return pyast.parse(source, filename)
    except SyntaxError as exc:
        raise EnvProgramError(f"{filename}: syntax error at line {exc.lineno}: {exc.msg}", stage=Stage.SIZE_SYNTAX) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise EnvProgramError(f"{filename}: source cannot be parsed ({type(exc).__name__})", stage=Stage.SIZE_SYNTAX) from None


def inspect_program(source: str, filename: str = "<env>") -> ProgramInfo:
    """Parse ``source`` and find its environment class; raise :class:`EnvProgramError`
    (stage ``syntax`` or ``interface``) naming the problem otherwise.

    The class is the FIRST public (no leading underscore) top-level class whose name ends
    in ``Env``, as SPADE's loader picks it; when there are several, ``notes`` names the
    others. It must define or inherit ``reset`` and ``step`` (inheriting is only
    possible from ``ToolUseBaseEnv``, whose subclasses supply ``reset`` themselves);
    ``solution`` is optional, as in SPADE (the list: :data:`spade_envs.format_spec.METHODS`).
    """
    tree = parse_source(source, filename)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    env_classes = [c for c in classes if c.name.endswith("Env") and not c.name.startswith("_")]
    if not env_classes:
        raise EnvProgramError(f"{filename}: no public class whose name ends in 'Env' (define one)")
    cls = env_classes[0]
    notes: tuple[str, ...] = ()
    if len(env_classes) > 1:
        others = ", ".join(c.name for c in env_classes[1:])
        notes = (f"{len(env_classes)} public *Env classes: playing the first, {cls.name} (as SPADE's loader); "
                 f"not played: {others}",)
    bases = {b.id for b in cls.bases if isinstance(b, ast.Name)} | {
        b.attr for b in cls.bases if isinstance(b, ast.Attribute)
    }
    uses_tool_base = "ToolUseBaseEnv" in bases
    methods = frozenset(
        n.name for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    )
    required = set(required_methods(tool_base=uses_tool_base))  # solution() is optional (SPADE)
    # a local base class may provide the methods; collect them too
    local = {c.name: c for c in classes}
    inherited: set[str] = set()
    for base in bases & set(local):
        inherited |= {n.name for n in local[base].body if isinstance(n, ast.FunctionDef)}
    missing = sorted(required - methods - inherited)
    if missing:
        raise EnvProgramError(f"{filename}: class {cls.name} lacks required method(s): {', '.join(m + '()' for m in missing)}")
    return ProgramInfo(
        class_name=cls.name,
        metadata=_read_metadata(tree, filename),
        sha256=source_sha256(source),
        uses_tool_base=uses_tool_base,
        methods=methods | inherited,
        notes=notes,
    )


#: the ``max_turns`` given to a class whose ``__init__`` requires it (SPADE's loader always
#: passes one; 25 is SPADE's agent-turn budget)
REQUIRED_MAX_TURNS = 25


def construct_env(cls: Any, kwargs: dict[str, Any]) -> Any:
    """``cls(**kwargs)``; when ``__init__`` requires a ``max_turns`` that ``kwargs`` lacks,
    ``cls(max_turns=REQUIRED_MAX_TURNS, **kwargs)``, as SPADE's loader builds every game
    with ``max_turns``. Other errors propagate."""
    try:
        return cls(**kwargs)
    except TypeError as exc:
        message = str(exc)
        if "max_turns" in kwargs or "'max_turns'" not in message or "missing" not in message:
            raise
    return cls(max_turns=REQUIRED_MAX_TURNS, **kwargs)


def _read_metadata(tree: ast.Module, filename: str) -> dict[str, Any]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "METADATA" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
                raise EnvProgramError(f"{filename}: METADATA must be a literal dict") from None
            if not isinstance(value, dict):
                raise EnvProgramError(f"{filename}: METADATA must be a dict")
            return value
    return {}


#: modules programs import that exist only as aliases: ``name -> exported names``.
#: ``tool_use_base_env`` is SPADE's (its loader puts its base-class module in
#: ``sys.modules`` under that name); ``spade_answers`` holds the seeds' shared answer
#: reader (:mod:`spade_envs.loose_answers`)
ALIAS_MODULES: dict[str, tuple[str, ...]] = {"tool_use_base_env": ("ToolUseBaseEnv",),
                                             "spade_answers": ("loose_answer",)}

#: where each alias module's names live (a module of this package)
_ALIAS_SOURCES = {"tool_use_base_env": "toolbase", "spade_answers": "loose_answers"}


def alias_module_attrs(name: str) -> dict[str, Any]:
    """The objects an alias module of :data:`ALIAS_MODULES` exports."""
    import importlib

    module = importlib.import_module(f".{_ALIAS_SOURCES[name]}", __package__)
    return {attr: getattr(module, attr) for attr in ALIAS_MODULES[name]}


def install_alias_modules() -> None:
    """Register the alias modules in ``sys.modules`` (trusted execution only; idempotent),
    so ``from tool_use_base_env import ToolUseBaseEnv`` works as under SPADE's loader."""
    import sys
    import types

    for name in ALIAS_MODULES:
        if name not in sys.modules:
            module = types.ModuleType(name, "spade-envs alias of SPADE's base-class module")
            module.__dict__.update(alias_module_attrs(name))
            sys.modules[name] = module


def trusted_prelude() -> dict[str, Any]:
    """The prelude as real modules and objects, for trusted (in-process) execution."""
    import importlib

    from .toolbase import ToolUseBaseEnv

    install_alias_modules()

    ns: dict[str, Any] = {m: importlib.import_module(m) for m in PRELUDE_MODULES}
    for name, (mod, attr) in PRELUDE_NAMES.items():
        ns[name] = getattr(ns.get(mod) or importlib.import_module(mod), attr)
    try:
        import numpy

        ns.update(dict.fromkeys(NUMPY_NAMES, numpy))
    except ImportError:  # pragma: no cover - numpy is a dependency
        pass
    ns["ToolUseBaseEnv"] = ToolUseBaseEnv
    return ns
