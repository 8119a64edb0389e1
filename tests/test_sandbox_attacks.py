"""Attack corpus: every hostile program is contained with a specific verdict.

Each case is a program (or a ``step`` body) plus the verdict the sandbox must give:
``("program", stage)`` for an ``EnvProgramError`` or ``("execution", kind)`` for an
``EnvExecutionError``, raised at ``open`` or at the named phase. After the corpus the
runtime must still serve a benign program, and no file may appear outside tmp dirs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from spade_envs.errors import EnvExecutionError, EnvProgramError
from spade_envs.sandbox import SandboxRuntime

PWN = "/tmp/spade_sandbox_pwned_marker"


def program(step_body: str = "pass", *, module: str = "", init: str = "", reset: str = "", close: str = "") -> str:
    body = textwrap.indent(textwrap.dedent(step_body), " " * 8)
    return (
        textwrap.dedent(module)
        + "\nclass AttackEnv:\n"
        + "    def __init__(self, **kwargs):\n"
        + textwrap.indent(textwrap.dedent(init or "pass"), " " * 8) + "\n"
        + "        self.reset()\n"
        + "    def reset(self, seed=None):\n"
        + textwrap.indent(textwrap.dedent(reset or "pass"), " " * 8) + "\n"
        + "        return 'start', {}\n"
        + "    def step(self, action):\n"
        + body + "\n"
        + "        return 'done', 0.0, True, False, {}\n"
        + "    def solution(self):\n        return 'x'\n"
        + ("    def close(self):\n" + textwrap.indent(textwrap.dedent(close), " " * 8) + "\n" if close else "")
    )


S = "sandbox_compile"
# (name, source, phase, expected verdict, text the message must contain or "")
CASES = [
    # imports
    ("import_os", program(module="import os"), "open", ("program", S), "os"),
    # sys is a vetted copy holding constants only (SPADE's games read sys.maxsize)
    ("import_sys_modules", program(module="from sys import modules"), "open", ("program", "compile"), "modules"),
    ("sys_modules", program("import sys\nsys.modules['os']"), "step", ("execution", "error"), "modules"),
    # sys.setrecursionlimit is offered capped (tests/test_spade_pools_r9.py checks the cap)
    ("import_subprocess", program("import subprocess"), "open", ("program", S), "subprocess"),
    ("from_os_system", program(module="from os import system"), "open", ("program", S), "os"),
    ("import_importlib", program(module="import importlib"), "open", ("program", S), "importlib"),
    ("import_ctypes", program(module="import ctypes"), "open", ("program", S), "ctypes"),
    ("import_socket", program("import socket\nsocket.create_connection(('127.0.0.1', 1))"), "open", ("program", S), "socket"),
    ("import_threading", program(module="import threading"), "open", ("program", S), "threading"),
    ("import_multiprocessing", program(module="import multiprocessing"), "open", ("program", S), "multiprocessing"),
    ("import_pickle", program(module="import pickle"), "open", ("program", S), "pickle"),
    ("import_builtins", program(module="import builtins"), "open", ("program", S), "builtins"),
    ("relative_import", program(module="from . import x"), "open", ("program", S), "relative"),
    ("star_import", program(module="from math import *"), "open", ("program", S), "*"),
    ("dunder_import_call", program("__import__('os').system('true')"), "open", ("program", S), "__import__"),
    ("eval_call", program("eval('1+1')"), "open", ("program", S), "Eval"),
    ("exec_call", program("exec('x=1')"), "open", ("program", S), "Exec"),
    # dunder walks
    ("subclasses_walk", program("().__class__.__bases__[0].__subclasses__()"), "open", ("program", S), "__bases__"),
    ("mro_walk", program("self.__class__.__mro__"), "open", ("program", S), "__mro__"),
    ("func_globals", program("f = lambda: 0\nf.__globals__"), "open", ("program", S), "__globals__"),
    ("builtins_name", program("__builtins__['open']"), "open", ("program", S), "__builtins__"),
    ("rebind_guard", program("_getattr_ = lambda *a: None"), "open", ("program", S), "_getattr_"),
    ("metaclass_kw", program(module="class M(metaclass=type):\n    pass"), "open", ("program", S), "metaclass"),
    ("async_def", program(module="async def f():\n    pass"), "open", ("program", S), "AsyncFunctionDef"),
    ("getattr_subclasses", program("c = getattr(self, '__class__')\ngetattr(c, '__subclasses__')()"), "step", ("execution", "security"), "__subclasses__"),
    ("getattr_int_subclasses", program("getattr(int, '__sub' + 'classes__')()"), "step", ("execution", "security"), "__subclasses__"),
    ("getattr_private_module", program("getattr(re, '_' + 'compile')"), "step", ("execution", "security"), "_compile"),
    ("type_three_args", program("type('X', (object,), {})"), "step", ("execution", "security"), "three arguments"),
    ("bad_base_class", program(module="class Evil(type(re)):\n    pass"), "open", ("execution", "security"), "derive"),
    ("vars_module", program("vars(math)"), "step", ("execution", "security"), "vars"),
    # module reach through public attributes
    ("re_to_sys", program("re.sys.modules['os']"), "step", ("execution", "error"), "sys"),
    ("json_to_codecs", program("json.codecs.open('/etc/passwd')"), "step", ("execution", "error"), "codecs"),
    ("random_to_os", program("random._os.system('true')"), "step", ("execution", "security"), "_os"),
    ("typing_get_type_hints", program("import typing\ntyping.get_type_hints"), "step", ("execution", "error"), "get_type_hints"),
    ("math_verify_internals", program("from math_verify import parse\nparse('$1$')._items[0].subs"), "step", ("execution", "security"), "_items"),
    # format-string walks
    ("format_class_walk", program("'{0.__class__.__mro__}'.format(1)"), "step", ("execution", "security"), "__class__"),
    ("format_map_globals", program("'{x.__init__.__globals__}'.format_map({'x': self})"), "step", ("execution", "security"), "__globals__"),
    ("str_format_unbound", program("str.format('{0.__class__}', 1)"), "step", ("execution", "security"), "__class__"),
    ("string_formatter", program("string.Formatter().get_field('0.__class__', [1], {})"), "step", ("execution", "error"), "Formatter"),
    ("attrgetter_walk", program("operator.attrgetter('__class__')(1)"), "step", ("execution", "security"), "__class__"),
    ("methodcaller_walk", program("operator.methodcaller('__reduce_ex__', 2)(self)"), "step", ("execution", "security"), "__reduce_ex__"),
    # frames, tracebacks, generators
    ("generator_frame", program("g = (i for i in [1])\ng.gi_frame.f_globals"), "open", ("program", S), "gi_frame"),
    ("traceback_frame", program("try:\n    1/0\nexcept Exception as e:\n    e.__traceback__.tb_frame"), "open", ("program", S), "__traceback__"),
    ("dynamic_gi_frame", program("g = (i for i in [1])\ngetattr(g, 'gi_' + 'frame')"), "step", ("execution", "security"), "gi_frame"),
    ("dynamic_gi_code", program("g = (i for i in [1])\ngetattr(g, 'gi_' + 'running')"), "step", ("execution", "security"), "gi_running"),
    # writes to shared modules and classes
    ("write_module_attr", program("random.random = lambda: 0.0"), "step", ("execution", "security"), "cannot be modified"),
    ("setattr_module", program("setattr(math, 'pi', 3)"), "step", ("execution", "security"), "cannot be modified"),
    ("write_trusted_base", program("ToolUseBaseEnv.step = lambda *a: None"), "step", ("execution", "security"), "cannot be modified"),
    ("delete_module_attr", program("del json.dumps"), "step", ("execution", "security"), "cannot be modified"),
    # resources
    ("infinite_loop", program("while True:\n    pass"), "step", ("execution", "timeout"), "deadline"),
    ("module_body_loop", program(module="while True:\n    pass"), "open", ("execution", "timeout"), "deadline"),
    ("memory_bomb_str", program("x = 'a' * (10 ** 10)"), "step", ("execution", "memory"), ""),
    ("memory_bomb_list", program("x = [0] * (10 ** 9)"), "step", ("execution", "memory"), ""),
    ("huge_int_shift", program("x = 1 << (10 ** 11)"), "step", ("execution", "memory"), ""),
    ("huge_int_pow", program("x = 2 ** (10 ** 11)"), "step", ("execution", "timeout"), "deadline"),
    ("huge_int_str", program("x = str(10 ** 5000)"), "step", ("execution", "error"), "ValueError"),
    ("recursion", program("def f(n):\n    return f(n + 1)\nf(0)"), "step", ("execution", "recursion"), ""),
    # files
    ("file_read", program("open('/etc/passwd').read()"), "step", ("execution", "error"), "NameError"),
    ("file_write", program(f"open({PWN!r}, 'w').write('x')"), "step", ("execution", "error"), "NameError"),
    ("numpy_save", program(f"np.save({PWN!r}, np.zeros(3))"), "step", ("execution", "error"), "save"),
    ("numpy_tofile", program(f"np.zeros(3).tofile({PWN!r})"), "step", ("execution", "security"), "tofile"),
    ("numpy_load", program("np.load('/etc/passwd', allow_pickle=True)"), "step", ("execution", "error"), "load"),
    # contract: outputs
    ("oversized_observation", program("return 'x' * 10 ** 6, 0.0, True, False, {}"), "step", ("program", "interface"), "characters"),
    ("oversized_info", program("return 'x', 0.0, True, False, {'blob': 'y' * (3 * 10 ** 6)}"), "step", ("execution", "output"), "exceeds"),
    ("nan_reward", program("return 'x', float('nan'), True, False, {}"), "step", ("program", "interface"), "non-finite"),
    ("inf_reward", program("return 'x', float('inf'), True, False, {}"), "step", ("program", "interface"), "non-finite"),
    ("string_reward", program("return 'x', 'lots', True, False, {}"), "step", ("program", "interface"), "number"),
    # hangs in other methods
    ("hanging_reset", program(reset="if seed == 7:\n    while True:\n        pass"), "reset", ("execution", "timeout"), "deadline"),
    ("hanging_close", program(close="while True:\n    pass"), "close", ("execution", "timeout"), "deadline"),
    ("hanging_init", program(init="while True:\n    pass"), "open", ("execution", "timeout"), "deadline"),
]


@pytest.fixture(scope="module")
def runtime():
    rt = SandboxRuntime(max_workers=2, step_timeout_s=1.0, open_timeout_s=1.5, memory_mb=300)
    yield rt
    rt.close()


def verdict(exc: BaseException) -> tuple[str, str]:
    if isinstance(exc, EnvProgramError):
        return ("program", exc.stage)
    if isinstance(exc, EnvExecutionError):
        return ("execution", exc.kind)
    return ("other", type(exc).__name__)


def test_corpus_is_large_enough():
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("name,source,phase,expected,needle", CASES, ids=[c[0] for c in CASES])
def test_attack_is_contained(runtime, name, source, phase, expected, needle):
    with pytest.raises((EnvProgramError, EnvExecutionError)) as info:
        session = runtime.open(source, filename=f"{name}.py")
        if phase == "step":
            session.step("go")
        elif phase == "reset":
            session.reset(seed=7)
        elif phase == "close":
            session.close()
    assert verdict(info.value) == expected, str(info.value)
    assert needle in str(info.value)
    assert not os.path.exists(PWN)


def test_non_finite_info_is_replaced_with_a_note(runtime):
    """SPADE's loader tolerates NaN/inf inside info: replaced by None, with a note (issue 29)."""
    session = runtime.open(program("return 'x', 0.0, True, False, {'v': float('nan'), 'w': [1.0, float('inf')]}"))
    try:
        session.reset(0)
        _obs, _reward, _term, _trunc, info = session.step("go")
    finally:
        session.close()
    assert info["v"] is None and info["w"] == [1.0, None]
    assert "non-finite" in info["spade_note"] and "info['v']" in info["spade_note"]


def test_runtime_survives_the_corpus(runtime):
    session = runtime.open(program("return action, 1.0, True, False, {}"))
    assert session.step("still alive")[:2] == ("still alive", 1.0)
    session.close()


def test_violation_caught_by_program_stays_denied(runtime):
    src = program("try:\n    getattr(re, '_cache')\nexcept Exception as e:\n    return str(e), 0.0, True, False, {}")
    obs = runtime.open(src).step("go")[0]
    assert "not allowed" in obs


def test_worker_confinement_facts(runtime):
    info = runtime.info()
    assert info["network"] in ("netns", "audit-hook")
    if os.geteuid() == 0:
        assert info["uid"] != 0


_CONFINED_CONNECT = """
import socket, sys
from spade_envs.sandbox import confine
mode = confine.isolate_network()
confine.install_audit_hook()
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
    print("CONNECTED", mode)
except Exception as exc:
    print("BLOCKED", mode, type(exc).__name__)
"""


def test_loopback_listener_gets_no_connection():
    """The confinement the zygote applies (network namespace and/or audit hook) stops a
    connection to a listener on the host's 127.0.0.1."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    out = subprocess.run([sys.executable, "-c", _CONFINED_CONNECT, str(port)], capture_output=True, text=True, timeout=60)
    server.settimeout(0.2)  # a connection made would wait in the backlog
    accepted = []
    try:
        accepted.append(server.accept())
    except OSError:
        pass
    server.close()
    assert out.stdout.startswith("BLOCKED"), out.stdout + out.stderr
    assert not accepted


def test_timeout_kills_only_that_call_and_runtime_recovers(runtime):
    hang = runtime.open(program("if action == 'hang':\n    while True:\n        pass"))
    with pytest.raises(EnvExecutionError) as info:
        hang.step("hang")
    assert info.value.kind == "timeout"
    with pytest.raises(EnvExecutionError):
        hang.step("again")  # the episode is over
    obs, _ = hang.reset(seed=1)  # a new episode on a fresh worker
    assert obs == "start"
    assert hang.step("fine")[0] == "done"
