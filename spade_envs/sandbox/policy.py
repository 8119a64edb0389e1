"""Static layer of the sandbox: a RestrictedPython 9 policy for LLM-written programs.

Stock RestrictedPython rejects most ordinary code a designer model writes. This policy
(DESIGN.md section 5) is strict where it matters and practical elsewhere:

allowed
    single-underscore names (``_helper``, ``_cache``); single-underscore attribute
    *syntax* (``self._answer``: whether the object is the program's own is decided at
    run time by :mod:`.guards`); ``__x`` attributes inside a class (name-mangled like
    Python does); augmented assignment on names, attributes and items; annotated
    assignments; ``nonlocal``/``global``; definitions of common dunder methods
    (:data:`ALLOWED_DUNDER_DEFS`); reads of a few dunder attributes
    (:data:`ALLOWED_DUNDER_READS`, checked again at run time); ``super().__init__()``;
    decorators; lambdas, closures, comprehensions, f-strings, try/except/finally;
    ``__slots__`` in a class body as a literal tuple of plain attribute names;
    reading ``__name__`` (a module name, never ``"__main__"``, so demo blocks do not
    run); ``from __future__ import ...``; ``match`` statements (patterns checked:
    class-pattern keywords and dotted values must be public attributes).
refused at compile time (``EnvProgramError(stage="sandbox_compile")``)
    imports outside :data:`.prelude.IMPORTABLE`; star and relative imports; any other
    dunder name or attribute (``__class__.__mro__``, ``__globals__``, ``__builtins__``);
    frame, traceback, code and generator internals (``gi_frame``, ``tb_frame``,
    ``f_globals``...); names reserved for the guards (``_getattr_``, ``_write_``...);
    ``exec``/``eval``; ``async``; ``except*``; metaclass keywords.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from types import CodeType

from RestrictedPython.transformer import INSPECT_ATTRIBUTES, RestrictingNodeTransformer

from .. import pyast
from ..errors import EnvProgramError
from .dunders import ALLOWED_DUNDER_DEFS

#: Dunder attributes whose *syntax* is allowed; :mod:`.guards` decides per object.
ALLOWED_DUNDER_READS = ALLOWED_DUNDER_DEFS | {"__name__", "__qualname__", "__doc__", "__class__", "__dict__", "__module__"}

#: Names the guards and RestrictedPython's rewriting use; programs may not bind them.
_RESERVED = re.compile(r"^(_[a-z_]*_|_tmp\d+|_print|__.*)$")


@lru_cache(maxsize=1)
def _guarded_public_names() -> frozenset[str]:
    from .guards import GUARDED_PUBLIC_NAMES  # guards imports this module

    return GUARDED_PUBLIC_NAMES


def _is_own_instance(name: str) -> ast.expr:
    """``_type_(name) in _own_``: the real ``type`` and the guards' set of the program's own
    classes (both names are reserved, so a program cannot bind or read them)."""
    call = ast.Call(func=ast.Name("_type_", ast.Load()), args=[ast.Name(name, ast.Load())], keywords=[])
    return ast.Compare(left=call, ops=[ast.In()], comparators=[ast.Name("_own_", ast.Load())])


class SpadePolicy(RestrictingNodeTransformer):
    """RestrictedPython transformer with the practical policy described in the module doc."""

    def __init__(self, errors=None, warnings=None, used_names=None) -> None:
        super().__init__(errors, warnings, used_names)
        self._class_stack: list[str] = []
        self._scopes: list[str] = []  # "class" / "func", innermost last

    # -- names -------------------------------------------------------------------------
    def check_name(self, node, name, allow_magic_methods=False) -> None:  # noqa: D401
        if name is None:
            return
        if allow_magic_methods and name in ALLOWED_DUNDER_DEFS and self._class_stack:
            return
        if name.startswith("__") and not name.endswith("__") and self._class_stack:
            return  # private, mangled by the compiler
        if _RESERVED.match(name) and name != "_":
            self.error(node, f'"{name}" is a reserved name in the sandbox')
        else:
            super().check_name(node, "x" + name if name.startswith("_") else name)

    def visit_Name(self, node: ast.Name):
        # reading the module name (``if __name__ == "__main__":`` demo blocks) is fine:
        # programs run under a module name that is never "__main__", as in SPADE's loader
        if node.id == "__name__" and isinstance(node.ctx, ast.Load):
            return node
        return super().visit_Name(node)

    # -- attributes --------------------------------------------------------------------
    def _mangle(self, attr: str) -> str:
        if attr.startswith("__") and not attr.endswith("__") and self._class_stack:
            owner = self._class_stack[-1].lstrip("_")
            return f"_{owner}{attr}" if owner else attr
        return attr

    def visit_Attribute(self, node: ast.Attribute):
        attr = self._mangle(node.attr)
        node.attr = attr
        if attr in INSPECT_ATTRIBUTES:
            self.error(node, f'"{attr}" is a frame/generator internal and cannot be accessed in the sandbox')
        elif attr.startswith("__") and attr.endswith("__"):
            if attr not in ALLOWED_DUNDER_READS or not isinstance(node.ctx, ast.Load):
                self.error(node, f'dunder attribute "{attr}" cannot be accessed in the sandbox')
        if isinstance(node.ctx, ast.Load):
            node = self.node_contents_visit(node)
            if attr[:1] != "_" and attr not in _guarded_public_names():
                return node  # guarded_getattr would do exactly this read (see guards.GUARDED_PUBLIC_NAMES)
            new = ast.Call(func=ast.Name("_getattr_", ast.Load()), args=[node.value, ast.Constant(attr)], keywords=[])
            if isinstance(node.value, ast.Name) and attr[:1] == "_" and attr[:2] != "__":
                # ``self._x``: read natively when ``self`` is an instance of the program's own
                # classes, exactly the case guarded_getattr passes on unchecked (never a
                # guarded public name: ``self.format`` on an own ``str`` subclass is guarded)
                native = ast.Attribute(value=ast.Name(node.value.id, ast.Load()), attr=attr, ctx=ast.Load())
                new = ast.IfExp(test=_is_own_instance(node.value.id), body=native, orelse=new)
            ast.copy_location(new, node)
            return ast.fix_missing_locations(new)
        node = self.node_contents_visit(node)
        new_value = ast.Call(func=ast.Name("_write_", ast.Load()), args=[node.value], keywords=[])
        if isinstance(node.value, ast.Name):  # ``self._x = v``: own instances pass _write_ unchanged
            new_value = ast.IfExp(test=_is_own_instance(node.value.id), body=ast.Name(node.value.id, ast.Load()),
                                  orelse=new_value)
        ast.copy_location(new_value, node.value)
        node.value = ast.fix_missing_locations(new_value)
        return node

    # -- subscripts, iteration, unpacking: native ------------------------------------
    # RestrictedPython routes these through ``_getitem_``, ``_getiter_``,
    # ``_iter_unpack_sequence_``, ``_unpack_sequence_`` and ``_apply_``. This sandbox's
    # versions are ``operator.getitem``, ``iter``, the identity and a plain call: there
    # is nothing to check (whatever a program can subscript or iterate, it reached
    # through the guarded names and attributes), so the native opcodes do exactly the
    # same, without a call each. Item *writes* still go through ``_write_``.
    def visit_Subscript(self, node: ast.Subscript):
        if isinstance(node.ctx, ast.Load):
            return self.node_contents_visit(node)
        return super().visit_Subscript(node)

    def guard_iter(self, node):
        return self.node_contents_visit(node)

    def visit_Assign(self, node: ast.Assign):
        if self._is_slots(node.targets[0] if len(node.targets) == 1 else None):
            self._check_slots(node, node.value)
            node.value = self.visit(node.value)
            return node
        return self.node_contents_visit(node)

    def _is_slots(self, target: ast.AST | None) -> bool:
        """``__slots__ = ...`` directly in a class body (SPADE's loader runs it)."""
        return (isinstance(target, ast.Name) and target.id == "__slots__" and bool(self._scopes)
                and self._scopes[-1] == "class")

    def _check_slots(self, node: ast.AST, value: ast.AST | None) -> None:
        """``__slots__`` must be a literal string or tuple/list of strings naming plain
        attributes (no dunder slots such as ``__dict__``); :mod:`.guards` checks it again
        when the class is built."""
        items = value.elts if isinstance(value, (ast.Tuple, ast.List)) else [value]
        for item in items:
            name = item.value if isinstance(item, ast.Constant) and isinstance(item.value, str) else None
            if name is None or not name.isidentifier() or (name.startswith("__") and name.endswith("__")):
                self.error(node, "__slots__ must be a literal tuple of plain attribute names in the sandbox")
                return

    def visit_Call(self, node: ast.Call):
        """``f(*args, **kw)`` stays a native call (``_apply_`` only calls ``f``); ``exec``
        and ``eval`` are still refused by RestrictedPython's check."""
        node = super().visit_Call(node)
        if isinstance(node.func, ast.Name) and node.func.id == "_apply_":
            node.func = node.args.pop(0)
        return node

    # -- statements RestrictedPython refuses but LLM code needs -------------------------
    def visit_AugAssign(self, node: ast.AugAssign):
        """``x += 1``, ``self.turn += 1`` and ``counts[k] += 1`` stay native; attribute
        and item targets go through ``_write_`` (which only passes the program's own
        objects and plain containers)."""
        if isinstance(node.target, ast.Name):
            self.check_name(node.target, node.target.id)
            node.value = self.visit(node.value)
            return node
        return self.node_contents_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign):
        """``grid: list[list[int]] = []`` keeps its value; the annotation is dropped
        (annotations are never needed to run a program)."""
        if self._scopes and self._scopes[-1] == "class":
            # class bodies keep annotations: dataclasses and NamedTuple read them
            if self._is_slots(node.target) and node.value is not None:
                self._check_slots(node, node.value)
                node.value = self.visit(node.value)
                node.annotation = ast.Constant(None)
                return node
            if isinstance(node.target, ast.Name):
                self.check_name(node.target, node.target.id)
            return self.node_contents_visit(node)
        if node.value is None:
            if isinstance(node.target, ast.Name):
                self.check_name(node.target, node.target.id)
                return None
            return ast.copy_location(ast.Pass(), node)
        assign = ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node)
        return self.visit_Assign(assign)

    def visit_Nonlocal(self, node: ast.Nonlocal):
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_Global(self, node: ast.Global):
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_ClassDef(self, node: ast.ClassDef):
        self._class_stack.append(node.name)
        self._scopes.append("class")
        try:
            return super().visit_ClassDef(node)
        finally:
            self._class_stack.pop()
            self._scopes.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef):
        # methods see the class stack (for dunder definitions and mangling); functions
        # nested in methods keep it, as Python's own mangling does
        node.returns = None  # annotations are not needed to run a program
        for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs:
            a.annotation = None
        for a in (node.args.vararg, node.args.kwarg):
            if a is not None:
                a.annotation = None
        self._scopes.append("func")
        try:
            return super().visit_FunctionDef(node)
        finally:
            self._scopes.pop()

    # -- match statements --------------------------------------------------------------
    def visit_Match(self, node: ast.Match):
        """``match`` statements: patterns stay native (the compiler allows no calls in
        them) but every name they bind and every attribute they read is checked here:
        class-pattern keywords and dotted values must be public, non-denied names."""
        node.subject = self.visit(node.subject)
        for case in node.cases:
            self._check_pattern(case.pattern)
            pattern, case.pattern = case.pattern, None
            self.node_contents_visit(case)
            case.pattern = pattern
        return node

    def _check_pattern_attr(self, node, attr: str) -> None:
        from .guards import DENIED_ATTRS

        if attr.startswith("_") or attr in DENIED_ATTRS or attr in INSPECT_ATTRIBUTES:
            self.error(node, f'attribute "{attr}" cannot be matched in the sandbox')

    def _check_pattern_value(self, node) -> None:
        if isinstance(node, ast.Attribute):
            self._check_pattern_attr(node, node.attr)
            self._check_pattern_value(node.value)
        elif isinstance(node, ast.Name):
            self.check_name(node, node.id)
        elif isinstance(node, ast.UnaryOp):
            self._check_pattern_value(node.operand)
        elif isinstance(node, ast.BinOp):  # complex literals: 1 + 2j
            self._check_pattern_value(node.left)
            self._check_pattern_value(node.right)
        elif not isinstance(node, ast.Constant):
            self.error(node, f"{type(node).__name__} is not allowed in a match pattern")

    def _check_pattern(self, pattern) -> None:
        if isinstance(pattern, ast.MatchValue):
            self._check_pattern_value(pattern.value)
        elif isinstance(pattern, ast.MatchSingleton):
            pass
        elif isinstance(pattern, (ast.MatchSequence, ast.MatchOr)):
            for p in pattern.patterns:
                self._check_pattern(p)
        elif isinstance(pattern, ast.MatchMapping):
            for key in pattern.keys:
                self._check_pattern_value(key)
            for p in pattern.patterns:
                self._check_pattern(p)
            if pattern.rest:
                self.check_name(pattern, pattern.rest)
        elif isinstance(pattern, ast.MatchClass):
            self._check_pattern_value(pattern.cls)
            for attr in pattern.kwd_attrs:
                self._check_pattern_attr(pattern, attr)
            for p in pattern.patterns + pattern.kwd_patterns:
                self._check_pattern(p)
        elif isinstance(pattern, ast.MatchStar):
            if pattern.name:
                self.check_name(pattern, pattern.name)
        elif isinstance(pattern, ast.MatchAs):
            if pattern.name:
                self.check_name(pattern, pattern.name)
            if pattern.pattern is not None:
                self._check_pattern(pattern.pattern)
        else:  # pragma: no cover - a pattern type of a future Python
            self.error(pattern, f"{type(pattern).__name__} is not allowed in the sandbox")

    def visit_Module(self, node: ast.Module):
        doc = node.body[0] if node.body and isinstance(node.body[0], ast.Expr) and isinstance(
            getattr(node.body[0], "value", None), ast.Constant) and isinstance(node.body[0].value.value, str) else None
        node = super().visit_Module(node)
        # RestrictedPython puts its set-up (``_print = _print_(...)``) first; ``from
        # __future__`` imports (and the docstring) must stay at the beginning of the module
        futures = [n for n in node.body if isinstance(n, ast.ImportFrom) and n.module == "__future__"]
        if futures:
            head = ([doc] if doc is not None else []) + futures
            node.body = head + [n for n in node.body if all(n is not h for h in head)]
        return ast.fix_missing_locations(node)

    def check_import_names(self, node):
        from .prelude import IMPORTABLE

        module = node.module if isinstance(node, ast.ImportFrom) else None
        if isinstance(node, ast.ImportFrom):
            if node.level:
                self.error(node, "relative imports are not allowed in the sandbox")
            elif module == "os" and all(a.name in OS_NAMES for a in node.names):
                pass  # from os import path: the pure path functions
            elif module not in IMPORTABLE and module != "__future__":
                self.error(node, f'import of "{module}" is not allowed in the sandbox{_os_note(module)}')
        else:
            for alias in node.names:
                if alias.name not in IMPORTABLE:
                    self.error(node, f'import of "{alias.name}" is not allowed in the sandbox{_os_note(alias.name)}')
        return super().check_import_names(node)


#: what a program may take from ``os``: the pure path functions (``os.path``) and ``os.sep``
OS_NAMES = frozenset({"path", "sep"})


def _os_note(module: str | None) -> str:
    if module == "os":
        return (" (os reaches the file system, processes and the environment; only os.path's pure "
                "functions are offered: import os.path, or from os import path)")
    return ""


@lru_cache(maxsize=256)
def compile_program(source: str, filename: str = "<env>") -> CodeType:
    """Compile ``source`` under :class:`SpadePolicy`; raise
    ``EnvProgramError(stage="sandbox_compile")`` listing the violations otherwise."""
    try:
        tree = pyast.parse(source, filename, "exec")
        errors: list[str] = []
        SpadePolicy(errors, [], {}).visit(tree)
        code = None if errors else pyast.compile_tree(tree, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise EnvProgramError(f"{filename}: cannot compile ({type(exc).__name__}: {exc})", stage="sandbox_compile") from None
    if errors or code is None:
        shown = "; ".join(errors[:5])
        more = f" (+{len(errors) - 5} more)" if len(errors) > 5 else ""
        raise EnvProgramError(f"{filename}: refused by the sandbox policy: {shown}{more}", stage="sandbox_compile")
    return code
