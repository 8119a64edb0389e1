"""Thread-safe parsing and compiling of Python ASTs.

CPython 3.11 keeps the recursion counter of its AST converters in per-interpreter
state, so two threads converting ASTs at once (``ast.parse`` builds Python AST
objects, ``compile(tree)`` reads them back) can fail with ``SystemError: AST
constructor recursion depth mismatch`` (CPython gh-106905). The OpenEnv server
and the designer pool parse environment programs from many threads, so every
AST conversion in spade-envs goes through this module, which holds one lock for
the conversion only. ``compile(str)`` does not build AST objects and needs no lock.
"""

from __future__ import annotations

import ast
import threading
from types import CodeType

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse`` serialised against every other AST conversion in the process."""
    with _LOCK:
        return ast.parse(source, filename, mode)


def compile_tree(tree: ast.AST, filename: str, mode: str = "exec") -> CodeType:
    """``compile`` of an AST object, serialised like :func:`parse`."""
    with _LOCK:
        return compile(tree, filename, mode, dont_inherit=True)
