"""The two-stage zygote (issue 13, first sandboxed environment in a fresh process): a
quick zygote without numpy/math_verify/jsonschema serves first, a full one loads in the
background and takes over; numpy/math_verify programs wait for the full one; what the
quick one leaves to its workers (jsonschema) they can import inside the jail."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from spade_envs.sandbox import SandboxRuntime
from spade_envs.sandbox.zygote import _module_path, needs_full

LIGHT = """
class LightEnv:
    def __init__(self):
        self.reset()
    def reset(self, seed=None):
        self._n = seed or 0
        return f"n={self._n}", {}
    def step(self, action):
        self._n += 1
        return f"n={self._n} {sorted({3, 1, 2})}", 1.0, False, False, {}
"""

HEAVY = """
from math_verify import parse, verify

class HeavyEnv:
    def reset(self, seed=None):
        return str(np.arange(5).sum()), {}
    def step(self, action):
        ok = verify(parse("$1/2$"), parse(action))
        return f"{np.array([1.0, 2.0]).mean()} {ok}", float(ok), True, False, {}
"""

TOOLS = r"""
class AddToolEnv(ToolUseBaseEnv):
    def __init__(self, max_turns=5, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None):
        self.turn_count = 0
        self._expected_answer = "3"
        self._tools = {"add": {"description": "Add one.",
                               "parameters": {"type": "object", "properties": {"a": {"type": "integer"}},
                                              "required": ["a"]}}}
        return "add one to two", {}

    def tool_add(self, a):
        return str(a + 1)
"""

_PROBE = """
import sys, json
sys.path[:] = json.loads(sys.argv.pop())
import importlib.util as u
for n in ("spade_envs", "spade_envs.sandbox"):
    sys.modules[n] = u.module_from_spec(u.find_spec(n))
from spade_envs.sandbox import confine, worker
from spade_envs.sandbox.restricted import RestrictedLoader
loader = RestrictedLoader()
worker._warm_up(loader, False)
worker._preload_jail()
paths = confine.module_read_paths(confine.LAZY_PACKAGES)
worker._prepare_lazy(paths)
quick = sorted(m for m in ("numpy", "math_verify", "sympy", "gymnasium", "jsonschema") if m in sys.modules)
before = set(sys.modules)
import sysconfig, os
std = os.path.realpath(sysconfig.get_paths()["stdlib"])
import jsonschema, numpy, math_verify
from spade_envs.sandbox import prelude
prelude.load_heavy()
def stdlib(m):
    f = getattr(sys.modules[m], "__file__", None)
    return f is None or os.path.realpath(f).startswith(std)
new_std = sorted(m for m in set(sys.modules) - before if stdlib(m))
after = confine.module_read_paths()
uncovered = [p for p in after if not any(p == q or p.startswith(q + os.sep) for q in paths)]
print(json.dumps({"quick": quick, "uncovered": uncovered, "new_std": new_std}))
"""


def test_needs_full_finds_every_way_to_numpy_and_math_verify():
    assert needs_full("import numpy as xp") and needs_full("from math_verify import parse")
    assert needs_full("x = np.zeros(3)") and needs_full("import math_verify")
    assert not needs_full(LIGHT) and not needs_full("snp = 1\nnumpyish = 2\nmath_verifyx = 3")


def test_quick_zygote_loads_no_heavy_module_and_its_view_covers_them():
    out = subprocess.run([sys.executable, "-S", "-c", _PROBE, _module_path()], capture_output=True, text=True,
                         timeout=120, cwd="/", env={**os.environ, "SPADE_SANDBOX_STATIC": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["quick"] == [], got  # none of the heavy imports in the quick zygote
    # every package the heavy imports load lies inside the quick zygote's read view
    assert got["uncovered"] == [], got


def test_jsonschema_stdlib_list_is_complete():
    """What jsonschema loads from the standard library beyond the quick zygote is in
    LAZY_STDLIB (a distinct-uid worker cannot reach the standard library's files)."""
    code = _PROBE.replace("import jsonschema, numpy, math_verify\nfrom spade_envs.sandbox import prelude\n"
                          "prelude.load_heavy()\n", "import jsonschema\n")
    out = subprocess.run([sys.executable, "-S", "-c", code, _module_path()], capture_output=True, text=True,
                         timeout=120, cwd="/", env={**os.environ, "SPADE_SANDBOX_STATIC": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got["new_std"] == [], got


def test_quick_then_full_zygote_serve_the_right_programs(monkeypatch):
    monkeypatch.setenv("SPADE_SANDBOX_STATIC", "1")  # (with it off, only a full zygote serves)
    rt = SandboxRuntime()
    try:
        light = rt.open(LIGHT)
        first = light.worker
        assert rt.pool._zygote is not None
        served_by_quick = not rt.pool._zygote.full
        tooly = rt.open(TOOLS)  # jsonschema inside the worker, whichever zygote
        assert tooly.reset(0)[0] == "add one to two" and tooly.tools[0]["function"]["name"] == "add"
        # the worker checks the arguments against the schema (jsonschema inside the jail)
        bad = tooly.step('<tool_call>{"name": "add", "arguments": {"a": "two"}}</tool_call>')[0]
        good = tooly.step('<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>')[0]
        assert "3" in good and "3" not in bad and bad != good
        heavy = rt.open(HEAVY)  # waits for the full zygote
        assert rt.pool._zygote.full
        assert heavy.reset(0)[0] == "10"
        assert heavy.step("$0.5$")[:2] == ("1.5 True", 1.0)
        # the quick zygote's worker keeps running after the take-over
        assert light.worker is first and light.step("x")[0] == "n=1 [1, 2, 3]"
        assert rt.info()["layers"]["landlock"].startswith(("applied", "refused"))
        if os.geteuid() == 0:
            assert served_by_quick  # loading the full zygote takes far longer
        new = rt.open(LIGHT)  # from the full zygote now
        assert new.reset(2)[0] == "n=2"
    finally:
        rt.close()
    assert not rt.pool._retired and rt.pool._zygote is None


@pytest.mark.parametrize("static", ["1", "0"])
def test_heavy_program_in_a_fresh_process(static, tmp_path):
    code = (
        "import spade_envs\nfrom spade_envs.sandbox import SandboxRuntime\nimport sys\n"
        "rt = SandboxRuntime()\ns = rt.open(sys.argv[1])\nprint(s.reset(0)[0], s.step('$0.5$')[0])\n"
        "print(rt.pool._zygote.full)\nrt.close()\n"
    )
    env = {**os.environ, "SPADE_SANDBOX_STATIC": static}
    src = HEAVY if static == "1" else "import numpy as np\n" + HEAVY
    out = subprocess.run([sys.executable, "-c", code, src], capture_output=True, text=True, timeout=180, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["10", "1.5", "True", "True"]


def test_plain_attribute_reads_only_where_the_guard_would_pass_them():
    """The policy compiles ``a.b`` as a plain read only for public names that
    ``guarded_getattr`` passes to ``getattr`` for every object; that is sound because no
    opaque object (frame, traceback, code, generator...) has any such attribute."""
    import types

    from spade_envs.sandbox import guards
    from spade_envs.sandbox.policy import compile_program

    def getattr_names(src):
        code = compile_program(src, "<t>")
        names = set()
        stack = [code]
        while stack:
            c = stack.pop()
            names.update(c.co_names)
            stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
        return names

    assert "_getattr_" not in getattr_names("def f(x):\n    return x.append, x.items, x.sum\n")
    for name in ("format", "format_map", "close", "send", "throw", "replace", "clear", "dump", "tofile", "resize"):
        assert "_getattr_" in getattr_names(f"def f(x):\n    return x.{name}\n"), name
    assert "_getattr_" in getattr_names("class A:\n    def f(self):\n        return self._x\n")

    def gen():
        yield 1

    async def coro():
        pass

    async def agen():
        yield 1

    try:
        raise ValueError
    except ValueError as exc:
        tb = exc.__traceback__
    c = coro()
    opaque = [gen(), c, agen(), tb, tb.tb_frame, gen.__code__]
    for obj in opaque:
        public = {n for n in dir(obj) if not n.startswith("_")}
        assert public <= guards.GUARDED_PUBLIC_NAMES, (type(obj).__name__, public - guards.GUARDED_PUBLIC_NAMES)
    c.close()
