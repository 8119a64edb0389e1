"""Hostile programs that launder getattr/setattr/eval/exec through whitelisted libraries.

Each program tries, through one laundering path of issue 13, to reach the real ``os``
module, then to create a file outside any temporary folder of the worker and to read a
secret from the caller's environment. Each runs twice:

- **full sandbox**: the static layer must stop the laundering step itself, so the call
  raises an ``EnvExecutionError`` (``SpadeError``) and nothing escapes;
- **static layer off** (``SPADE_SANDBOX_STATIC=0``): the laundering works (it is plain
  Python), so only the process jail stands; the weaker property is checked: no file
  written, no secret in anything the caller gets, at most a ``SpadeError``. Without the
  jail (seccomp not applied) these variants are expected to fail (xfail, not strict).
"""

from __future__ import annotations

import os
import secrets
import textwrap

import pytest

from spade_envs.errors import EnvExecutionError, SpadeError
from spade_envs.sandbox import SandboxRuntime

SECRET_VAR = "SPADE_TEST_LAUNDER_SECRET"
SECRET = "s3cr3t-" + secrets.token_hex(8)

#: the end of every chain that yields ``osm`` (the os module or its globals dict)
EPILOGUE = """
def _get(o, n):
    return o[n] if isinstance(o, dict) else getattr(o, n)
fd = _get(osm, 'open')(MARKER, _get(osm, 'O_WRONLY') | _get(osm, 'O_CREAT'), 420)
_get(osm, 'write')(fd, b'pwned')
_get(osm, 'close')(fd)
return 'ESCAPED ' + str(_get(osm, 'environ').get(SECRET_VAR)), 0.0, True, False, {}
"""

#: chains, each leaving ``osm`` bound (kind "os") or returning text itself (kind "text")
CHAINS = {
    "update_wrapper_assigned": ("os", """
        class Box:
            pass
        b = Box()
        functools.update_wrapper(b, random.Random.shuffle, assigned=('__globals__',), updated=())
        osm = b.__dict__['__globals__']['_os']
    """),
    "wraps_assigned": ("os", """
        class Box:
            pass
        b = functools.wraps(random.Random.shuffle, assigned=('__globals__',), updated=())(Box())
        osm = b.__dict__['__globals__']['_os']
    """),
    "singledispatch_register_eval": ("text", """
        class Hint:
            x: PAYLOAD
        f = functools.singledispatch(lambda a: 0)
        try:
            f.register(Hint())
        except Exception as e:
            return 'ESCAPED ' + str(e), 0.0, True, False, {}
        return 'nothing', 0.0, True, False, {}
    """),
    "dataclass_field_name_exec": ("os", """
        box = []
        payload = ("a if self.__class__.box.append([c for c in ().__class__.__base__.__subclasses__() "
                   "if c.__name__ == '_wrap_close'][0].__init__.__globals__) else 0")
        K = type(int)('K', (), {'__annotations__': {payload: int}, 'box': box})
        dataclasses.dataclass(init=False, repr=False, eq=True)(K)
        K() == K()
        osm = box[0]
    """),
    "enum_module_global_enum": ("os", """
        class Yes(int):
            def __call__(self, *a):
                return True
            def __contains__(self, k):
                return True
        E = enum.Enum('E', {'_is_own': 1, '_INSTANCE_DUNDERS': 2, '_OWN_DUNDERS': 3},
                      module='spade_envs.sandbox.guards', type=Yes)
        enum.global_enum(E)
        osm = getattr(random.Random.shuffle, '__globals__')['_os']
    """),
    "userstring_format": ("text", """
        s = collections.UserString('{0.__globals__[_os].environ[' + SECRET_VAR + ']}')
        return 'ESCAPED ' + s.format(random.Random.shuffle), 0.0, True, False, {}
    """),
    "str_subclass_format": ("text", """
        class S(str):
            pass
        s = S('{0.__globals__[_os].environ[' + SECRET_VAR + ']}')
        return 'ESCAPED ' + s.format(random.Random.shuffle), 0.0, True, False, {}
    """),
    "str_subclass_class_format": ("text", """
        class S(str):
            pass
        out = S.format('{0.__globals__[_os].environ[' + SECRET_VAR + ']}', random.Random.shuffle)
        return 'ESCAPED ' + out, 0.0, True, False, {}
    """),
    "super_format": ("text", """
        class S(str):
            def fmt(self, *a):
                return super().format(*a)
        s = S('{0.__globals__[_os].environ[' + SECRET_VAR + ']}')
        return 'ESCAPED ' + s.fmt(random.Random.shuffle), 0.0, True, False, {}
    """),
    "super_format_map": ("text", """
        class S(str):
            def fmt(self, m):
                return super().format_map(m)
        s = S('{f.__globals__[_os].environ[' + SECRET_VAR + ']}')
        return 'ESCAPED ' + s.fmt({'f': random.Random.shuffle}), 0.0, True, False, {}
    """),
    "copy_reduce_ex_setattr": ("os", """
        import fractions
        def red(self, proto):
            return (lambda: fractions.Fraction, (), (None, {'__repr__': lambda s: 'PWNED'}))
        K = type(int)('K', (), {'__reduce_ex__': red})
        copy.copy(K())
        if repr(fractions.Fraction(1, 2)) != 'PWNED':
            return 'contained', 0.0, True, False, {}
        osm = getattr(random.Random.shuffle, '__globals__')['_os']
    """),
    "numpy_array_interface_getattr": ("os", """
        blob = b'RAWMEMORY-PROBE-' * 4
        class Mem:
            def __getattr__(self, name):
                if name == '__array_interface__':
                    return {'shape': (len(blob) + 64,), 'typestr': '|u1', 'data': (id(blob), False), 'version': 3}
                raise AttributeError(name)
        arr = np.asarray(Mem())
        if arr.dtype == object or b'RAWMEMORY' not in arr.tobytes():
            return 'contained', 0.0, True, False, {}
        osm = getattr(random.Random.shuffle, '__globals__')['_os']
    """),
    "numpy_array_interface_instance_dict": ("os", """
        blob = b'RAWMEMORY-PROBE-' * 4
        class Mem:
            def __init__(self):
                self.__dict__['__array_interface__'] = {
                    'shape': (len(blob) + 64,), 'typestr': '|u1', 'data': (id(blob), False), 'version': 3}
        arr = np.asarray(Mem())
        if arr.dtype == object or b'RAWMEMORY' not in arr.tobytes():
            return 'contained', 0.0, True, False, {}
        osm = getattr(random.Random.shuffle, '__globals__')['_os']
    """),
    "metaclass_from_type_int": ("os", """
        K = type(int)('K', (object,), {'__getattribute__': lambda s, n: n})
        osm = getattr(random.Random.shuffle, '__globals__')['_os']
    """),
    "metaclass_from_abc_subclass": ("os", """
        import abc
        class Base(abc.ABC):
            pass
        K = type(Base)('K', (object,), {'__reduce_ex__': lambda s, p: None})
        osm = getattr(random.Random.shuffle, '__globals__')['_os']
    """),
    "metaclass_from_enum_class": ("os", """
        from enum import Enum
        class Color(Enum):
            RED = 1
        M = type(Color)
        if 'Enum' not in repr(M):
            M('K', (), {})
        osm = getattr(random.Random.shuffle, '__globals__')['_os']
    """),
}


#: with the static layer on, reaching ``osm`` at all is the failure: report it at once
PROOF = """
return 'ESCAPED reached os', 0.0, True, False, {}
"""


def hostile_source(name: str, marker: str, *, prove_only: bool = False) -> str:
    kind, chain = CHAINS[name]
    body = textwrap.dedent(chain).replace("PAYLOAD", repr(
        f"[__import__('os').open({marker!r}, 65, 420), __import__('os').environ.get({SECRET_VAR!r})]"
    ))
    reach = "osm = getattr(random.Random.shuffle, '__globals__')['_os']"
    if prove_only:  # the primitive worked if this line is reached at all
        body = body.replace(reach, PROOF.strip())
    if kind == "os":
        body += PROOF if prove_only else EPILOGUE
    module = f"import functools, random, copy, collections, dataclasses, enum\nMARKER = {marker!r}\nSECRET_VAR = {SECRET_VAR!r}\n"
    return (
        module
        + "class HostileEnv:\n"
        + "    def __init__(self):\n        self.reset()\n"
        + "    def reset(self, seed=None):\n        return 'start', {}\n"
        + "    def step(self, action):\n" + textwrap.indent(body, " " * 8) + "\n"
        + "    def solution(self):\n        return 'x'\n"
    )


def _jail_applied(rt: SandboxRuntime) -> bool:
    layers = rt.info().get("layers") or {}
    return str(layers.get("seccomp", "")).startswith("applied")


@pytest.fixture(scope="module", params=["static", "jail-only"])
def mode_runtime(request):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(SECRET_VAR, SECRET)
        mp.setenv("SPADE_SANDBOX_STATIC", "1" if request.param == "static" else "0")
        rt = SandboxRuntime(max_workers=2, step_timeout_s=5.0, open_timeout_s=10.0)
        rt.info()  # the zygote starts now, with this environment
    yield request.param, rt
    rt.close()


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_laundering_is_contained(mode_runtime, name, tmp_path, request):
    mode, rt = mode_runtime
    if mode == "jail-only" and not _jail_applied(rt):
        request.applymarker(pytest.mark.xfail(reason="needs jail branch", strict=False))
    marker = str(tmp_path / f"pwned_{name}")
    got: list[str] = []
    raised: BaseException | None = None
    try:
        session = rt.open(hostile_source(name, marker, prove_only=mode == "static"), filename=f"{name}.py")
        got.append(repr(session.step("go")))
        session.close()
    except SpadeError as exc:
        raised = exc
        got.append(str(exc))
    # every mode: no file, no secret, nothing but a SpadeError
    assert not os.path.exists(marker), f"{name}: a file was written"
    assert all(SECRET not in text for text in got), f"{name}: the caller's secret leaked: {got}"
    if mode == "static":
        # the static layer stops the laundering itself, before any effect
        assert isinstance(raised, EnvExecutionError) or "contained" in got[0], got
        assert "ESCAPED" not in " ".join(got)


def test_chains_escape_in_plain_python(tmp_path, monkeypatch):
    """The chains are real: with the real interpreter (no sandbox at all) each reaches os
    (or raw memory) — so a contained run above is the sandbox's doing."""
    from spade_envs.runtime import InProcessRuntime

    monkeypatch.setenv(SECRET_VAR, SECRET)
    rt = InProcessRuntime()
    for name in ("update_wrapper_assigned", "singledispatch_register_eval", "dataclass_field_name_exec",
                 "userstring_format", "super_format", "metaclass_from_type_int", "numpy_array_interface_getattr"):
        marker = str(tmp_path / f"plain_{name}")
        obs = rt.open(hostile_source(name, marker)).step("go")[0]
        assert "ESCAPED" in obs and SECRET in obs, (name, obs)
        assert os.path.exists(marker) or CHAINS[name][0] == "text"
