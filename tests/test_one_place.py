"""The "one place" claims of docs/architecture.md, checked: ids are written and read only
in ``registry/ids.py``; accepted variants are stored only through
``registry.write.register_variant``; the designer prompt's list of names a program may
use without importing them is the prelude's table, and both runtimes pre-load exactly it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = [p for d in ("spade_envs", "registry", "designer", "agents", "evals") for p in (ROOT / d).rglob("*.py")
           if "seeds" not in p.parts]


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def test_ids_are_formatted_and_parsed_only_in_the_ids_module():
    # an id written by hand (f"spade/Env-{seq:05d}") or read by a regex of its own;
    # spade_envs/benches/registry.py writes them into a generated script's text, not code
    written = re.compile(r"""f["'][^"']*Env-\{""")
    regex = re.compile(r"""re\.compile\([^)]*Env-""")
    offenders = [_rel(p) for p in PRODUCT if _rel(p) not in ("registry/ids.py", "spade_envs/benches/registry.py")
                 and (written.search(p.read_text(encoding="utf-8")) or regex.search(p.read_text(encoding="utf-8")))]
    assert offenders == []


def test_variants_are_stored_only_through_the_variant_write_path():
    allowed = {"registry/write.py", "registry/store.py", "registry/variants.py"}
    offenders = [_rel(p) for p in PRODUCT if _rel(p) not in allowed and ".add_variant(" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_the_prompt_lists_exactly_what_both_runtimes_preload():
    from spade_envs.designer.prompts import CONTRACT
    from spade_envs.program import PRELUDE_NAMES, preloaded_names, trusted_prelude
    from spade_envs.sandbox.prelude import build_base_namespace

    line = CONTRACT[CONTRACT.index("Allowed without import:"):CONTRACT.index("typing names.")]
    listed = re.findall(r"[A-Za-z_]\w*", line.removeprefix("Allowed without import:"))
    assert listed == preloaded_names()
    typing_names = [n for n, (mod, _) in PRELUDE_NAMES.items() if mod == "typing"]
    for namespace in (trusted_prelude(), build_base_namespace()):
        assert set(listed) | set(typing_names) <= set(namespace)


def test_failure_kinds_are_typed_outside_the_enum_module():
    """A failure kind is a ``FailureKind`` member wherever code makes or compares one; the
    enum's module is the only place its values are written as text."""
    from spade_envs.errors import EnvExecutionError, FailureKind

    values = "|".join(k.value for k in FailureKind)
    literal = re.compile(rf"""(kind\s*(==|!=|=)\s*|"kind":\s*|kind in \([^)]*)["']({values})["']""")
    offenders = [f"{_rel(p)}:{i}" for p in PRODUCT if _rel(p) != "spade_envs/errors.py"
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if literal.search(line) and "``" not in line]
    assert offenders == []
    assert EnvExecutionError("x", kind="timeout").kind is FailureKind.TIMEOUT
    assert f"{FailureKind.TIMEOUT}" == "timeout"  # verdict texts keep the plain name


def test_every_error_class_is_in_the_errors_map():
    """An exception class defined outside ``errors.py`` is named in its docstring's map."""
    import ast

    import spade_envs.errors as errors

    doc = errors.__doc__
    missing = []
    for p in PRODUCT:
        if _rel(p) == "spade_envs/errors.py":
            continue
        for node in ast.parse(p.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error") and f"``{node.name}``" not in doc:
                missing.append(f"{_rel(p)}:{node.name}")
    assert missing == []
