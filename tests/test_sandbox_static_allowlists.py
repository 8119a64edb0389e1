"""The static layer's allow-lists and class guards, exercised in-process (fast).

The loader here is the worker's half (:class:`RestrictedLoader`) without the process
around it; every assertion is about what the static layer itself lets through.
"""

from __future__ import annotations

import textwrap

import pytest

from spade_envs.errors import EnvExecutionError, EnvProgramError
from spade_envs.sandbox import class_guards, guards, own, vetted
from spade_envs.sandbox.prelude import IMPORTABLE, build_modules
from spade_envs.sandbox.restricted import RestrictedLoader


@pytest.fixture(scope="module")
def loader():
    return RestrictedLoader(static=True)


def run(loader, body: str, module: str = "") -> str:
    src = (
        textwrap.dedent(module)
        + "\nclass TEnv:\n    def __init__(self):\n        self.reset()\n"
        + "    def reset(self, seed=None):\n        return 's', {}\n"
        + "    def step(self, action):\n" + textwrap.indent(textwrap.dedent(body), " " * 8) + "\n"
        + "    def solution(self):\n        return 'x'\n"
    )
    session = loader.open(src, "TEnv", module_name="spade_env_allowlist")
    try:
        return session.step("a")[0]
    finally:
        session.forget()


def test_module_copies_hold_exactly_their_allow_list():
    modules = build_modules()
    for name, names in vetted.ALLOW.items():
        if name == "__future__":
            continue
        exposed = {k for k in vars(modules[name]) if k != "__name__"}
        allowed = set(names.split()) | ({"abc"} if name == "collections" else set())
        assert exposed <= allowed, (name, exposed - allowed)
    # the laundering helpers of issue 13 are not there
    for mod, attr in [("functools", "singledispatch"), ("functools", "singledispatchmethod"), ("enum", "global_enum"),
                      ("enum", "EnumMeta"), ("enum", "EnumType"), ("abc", "ABCMeta"), ("collections", "UserString"),
                      ("typing", "get_type_hints"), ("typing", "no_type_check"), ("typing", "ForwardRef"),
                      ("dataclasses", "make_dataclass"), ("string", "Formatter"), ("json", "load"), ("json", "dump")]:
        assert not hasattr(modules[mod], attr), f"{mod}.{attr}"
    for attr in ("load", "save", "fromfile", "memmap", "loadtxt", "ctypeslib", "lib", "testing", "set_printoptions"):
        assert not hasattr(modules["numpy"], attr), attr
    assert {"calendar", "hashlib", "tool_use_base_env"} <= IMPORTABLE


@pytest.mark.parametrize("body,needle", [
    ("functools.update_wrapper(self, random.shuffle, assigned=('__globals__',))", "assigned"),
    ("functools.wraps(random.shuffle, updated=('__dict__',))", "assigned"),
    ("functools.total_ordering(int)", "own classes"),
    ("import dataclasses\ndataclasses.dataclass(int)", "own classes"),
    ("from enum import Enum\nEnum('E', 'A', module='os')", "functional API"),
    ("from enum import Enum\nEnum('E', [('__reduce_ex__', 1)])", "member name"),
    ("type(int)('X', (), {})", "three arguments"),
    ("type(type(1))('X', (), {})", "three arguments"),
])
def test_laundering_helpers_refuse(loader, body, needle):
    with pytest.raises(EnvExecutionError) as info:
        run(loader, body)
    assert needle in str(info.value)


def test_dataclass_refuses_crafted_field_names():
    """Defence in depth: even an own class with a crafted annotation key is refused."""
    crafted = type("Crafted", (), {"__annotations__": {"a=__import__('os')": int}})
    own.OWN_CLASSES.add(crafted)
    try:
        with pytest.raises(guards.SandboxViolation, match="plain identifier"):
            vetted.dataclass(crafted)
    finally:
        own.OWN_CLASSES.discard(crafted)


def test_class_namespace_may_not_bind_other_dunders():
    with pytest.raises(guards.SandboxViolation, match="__reduce_ex__"):
        class_guards.build_class("K", (object,), {"__module__": "m", "__qualname__": "K", "__reduce_ex__": lambda s, p: 0})


def test_sandbox_type_is_not_a_metaclass(loader):
    obs = run(loader, """
        class A:
            pass
        checks = [type(A()) is A, type(int) is type, isinstance(int, type), not isinstance(1, type),
                  issubclass(type(A), type), type(3) == int, isinstance(A, (int, type))]
        return str(checks) + type(int).__name__, 0.0, True, False, {}
    """)
    assert obs == str([True] * 7) + "type"


NUMPY_PROBE = """
seen = []
class Probe:
    def __getattr__(self, name):
        seen.append(name)
        if name == '__array__':
            return lambda *a, **k: np.arange(3)
        if name in ('__array_ufunc__', '__array_function__'):
            return lambda *a, **k: 'hijacked'
        if name == '__array_priority__':
            return 1000.0
        if name == '__array_interface__':
            return {'shape': (8,), 'typestr': '|u1', 'data': (id(seen), False), 'version': 3}
        raise AttributeError(name)
p = Probe()
results = [np.asarray(p).dtype == object, np.array([p]).dtype == object]
for call in (lambda: np.add(p, 1), lambda: np.concatenate([[p], [p]]), lambda: np.arange(3) + p,
             lambda: np.sum([p]), lambda: np.frombuffer(p)):
    try:
        results.append(str(call()) != 'hijacked')
    except Exception as e:
        results.append(type(e).__name__ != 'SandboxViolation')
return str(results) + '|' + ','.join(n for n in seen if n.startswith('__')), 0.0, True, False, {}
"""


def test_numpy_array_protocols_are_not_answered_by_program_objects(loader):
    obs = run(loader, NUMPY_PROBE)
    checks, _, asked = obs.partition("|")
    assert checks == str([True] * 7), obs
    assert asked == "", f"numpy protocol lookups reached the program: {asked}"


def test_numpy_array_protocols_via_instance_dict_and_setattr(loader):
    obs = run(loader, """
        class M:
            pass
        m = M()
        m.__dict__['__array_interface__'] = {'shape': (8,), 'typestr': '|u1', 'data': (id(m), False), 'version': 3}
        m.__dict__['__array_priority__'] = 99.0
        return str(np.asarray(m).dtype), 0.0, True, False, {}
    """)
    assert obs == "object"
    with pytest.raises(EnvExecutionError):
        run(loader, "class M:\n    pass\nsetattr(M(), '__array_interface__', {})")


def test_numpy_unsafe_array_methods_refused(loader):
    for body in ("np.zeros(3).resize(10, refcheck=False)", "np.zeros(3).ctypes", "np.zeros(3).tofile('/x')",
                 "np.zeros(3).__array_interface__", "np.zeros(3).dumps()"):
        with pytest.raises((EnvExecutionError, EnvProgramError)):
            run(loader, body)


def test_format_guard_covers_subclasses_and_super(loader):
    for body in (
        "class S(str):\n    pass\nS('{0.__class__}').format(1)",
        "class S(str):\n    def f(self):\n        return super().format(1)\nS('{0.__class__}').f()",
        "class S(str):\n    pass\nS.format('{0.__class__}', 1)",
        "class S(str):\n    def f(self):\n        return self.format(1)\nS('{0.__class__}').f()",
        "class S(str):\n    def f(self):\n        m = self.format_map\n        return m({'a': 1})\nS('{a.__class__}').f()",
        "class S(str):\n    def f(self):\n        return super().format_map({'a': 1})\nS('{a.__class__}').f()",
        "f = functools.partial(str.format, '{0.__class__}')\nf(1)",
    ):
        with pytest.raises(EnvExecutionError) as info:
            run(loader, body)
        assert "__class__" in str(info.value)
    # ordinary formatting still works, subclasses included
    assert run(loader, "class S(str):\n    pass\nreturn S('{} {x}').format(1, x=2) + '{0[0]}'.format([3]), 0.0, True, False, {}") == "1 23"


def test_sandbox_import_answers_c_lazy_imports_only():
    from spade_envs.sandbox.prelude import safe_import

    modules = build_modules()
    imp = safe_import(modules)
    # what PyImport_Import (numpy's and datetime's C code) sends: fromlist a list
    assert imp("numpy._core._methods", {}, {}, [], 0) is None
    assert imp("time", {}, {}, ["__doc__"], 0) is None
    # import statements (tuple or empty fromlist) get copies or ImportError
    assert imp("math", {}, {}, None, 0) is modules["math"]
    assert imp("collections.abc", {}, {}, None, 0) is modules["collections"]
    assert imp("__future__", {}, {}, ("annotations",), 0) is modules["__future__"]
    constants = {"maxsize", "float_info", "int_info", "version_info", "version", "hexversion", "maxunicode", "byteorder",
                 "getrecursionlimit", "setrecursionlimit"}  # the setter capped (vetted.setrecursionlimit)
    assert set(vars(imp("sys", {}, {}, (), 0))) <= constants | {"__name__"}
    # os: a copy holding only the pure os.path functions and os.sep (the static layer refuses plain import os)
    assert set(vars(imp("os", {}, {}, ("path",), 0))) == {"__name__", "path", "sep"}
    assert not {"exists", "getsize", "abspath", "realpath", "expanduser"} & set(vars(modules["os.path"]))
    for name, fromlist in (("gc", ()), ("numpy.lib", None), ("antigravity", [])):
        with pytest.raises(ImportError):
            imp(name, {}, {}, fromlist, 0)
    with pytest.raises(ImportError):
        imp("math", {}, {}, None, 1)


def test_copy_of_own_objects_still_works(loader):
    obs = run(loader, """
        class P:
            def __init__(self, v):
                self.v = [v]
        class D(dict):
            pass
        class L(list):
            def __deepcopy__(self, memo):
                return L(['deep'])
        class Q:
            def __copy__(self):
                return 'copied'
        p = P(1); q = copy.deepcopy(p); q.v.append(2)
        d = D(a=[1]); e = copy.deepcopy(d); e['a'].append(2)
        out = [p.v, q.v, type(q).__name__, d, e, type(e).__name__, copy.deepcopy(L([1])), copy.copy(Q()), copy.copy(p).v is p.v]
        return str(out), 0.0, True, False, {}
    """)
    assert obs == "[[1], [1, 2], 'P', {'a': [1]}, {'a': [1, 2]}, 'D', ['deep'], 'copied', True]"


def test_private_reads_and_writes_on_a_name_are_native_only_for_own_instances(loader):
    """``x._y`` / ``x._y = v`` compile to an inline check (the policy's fast path): an
    instance of the program's own class is read and written natively, anything else
    still goes through the guards, including a method called with a foreign ``self``."""
    assert run(loader, "self._n = 4\nself._n += 1\nreturn str(self._n), 0.0, True, False, {}") == "5"
    body_foreign = """
    import random
    other = random.Random(3)
    return str(other._randbelow(5)), 0.0, True, False, {}
    """
    with pytest.raises(EnvExecutionError, match="not allowed"):
        run(loader, body_foreign)
    module = """
    import random
    class Peek:
        def read(self):
            return self._randbelow(5)
        def write(self):
            self._inst = None
    """
    with pytest.raises(EnvExecutionError, match="not allowed"):
        run(loader, "return str(Peek.read(random.Random(1))), 0.0, True, False, {}", module=module)
    with pytest.raises(EnvExecutionError, match="cannot be modified"):
        run(loader, "Peek.write(random.Random(1))\nreturn 'w', 0.0, True, False, {}", module=module)


def test_subscripts_iteration_unpacking_and_star_calls_are_native_and_behave_like_python(loader):
    """Item reads, ``for``/comprehension iteration, tuple unpacking and ``f(*a, **k)``
    compile to the native opcodes (their guards were identities); item *writes* still
    pass ``_write_``."""
    from spade_envs.sandbox.policy import compile_program

    body = """
    grid = [[1, 2, 3], [4, 5, 6]]
    d = {"a": (1, 2), "b": (3, 4)}
    first, *rest = grid[1][::-1]
    (x, y), z = d["a"], grid[-1][-1]
    pairs = [(k, v1 + v2) for k, (v1, v2) in sorted(d.items())]
    total = 0
    for i, (k, v) in enumerate(d.items()):
        total += i * v[0]
    grid[0][1:3] = [7, 8]
    d["c"] = grid[0][:2]
    del d["b"]
    counts = {}
    for ch in "abca":
        counts[ch] = counts.get(ch, 0) + 1
    counts["a"] += 10
    def f(*args, **kw):
        return sum(args) + kw["k"]
    args, kw = [1, 2], {"k": 3}
    out = [first, rest, x, y, z, pairs, total, grid, d, counts, f(*args, **kw), "abcdef"[1:5:2]]
    return str(out), 0.0, True, False, {}
    """
    want = "[6, [5, 4], 1, 2, 6, [('a', 3), ('b', 7)], 3, [[1, 7, 8], [4, 5, 6]], {'a': (1, 2), 'c': [1, 7]}, " \
           "{'a': 12, 'b': 1, 'c': 1}, 6, 'bd']"
    assert run(loader, body) == want
    src = "class E:\n    def step(self, a):\n" + textwrap.indent(textwrap.dedent(body), " " * 8)
    stack, code_names = [compile_program(src)], set()
    while stack:
        c = stack.pop()
        if hasattr(c, "co_names"):
            code_names |= set(c.co_names)
            stack.extend(c.co_consts)
    assert not code_names & {"_getitem_", "_getiter_", "_iter_unpack_sequence_", "_unpack_sequence_", "_apply_"}
    assert "_write_" in code_names  # item writes are still guarded
    with pytest.raises(EnvExecutionError, match="cannot be modified"):
        run(loader, "import random\nr = random.Random(1)\nr['x'] = 1\nreturn 'w', 0.0, True, False, {}")
