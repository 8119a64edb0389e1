"""The process jail holds on its own: one hostile program per process-layer attack class,
each run with the full sandbox and with the static layer off (``SPADE_SANDBOX_STATIC=0``,
real builtins, real ``import os``/``ctypes`` inside the worker).

Checked from outside the worker, every time: no file appears outside a temporary folder
(targets are world-writable, so only the jail can stop the writes), no secret of the
caller's environment or files reaches the caller, no other process is signalled, the
deadline holds, the caller sees a ``SpadeError`` at most. With the static layer off the
observations also prove that each attack really ran and was refused by the kernel.
"""

from __future__ import annotations

import glob
import os
import subprocess
import time

import pytest

from spade_envs.errors import EnvExecutionError, EpisodeOverError, SpadeError
from spade_envs.sandbox import SandboxRuntime, load

SECRET = "hf_jailtestsecret_9f3k2"

TEMPLATE = '''
class AttackEnv:
    def __init__(self, **kw):
        self.kw = kw
        self.reset()

    def reset(self, seed=None):
        return "ready", {}

    def solution(self):
        return "x"

    def step(self, action):
        log = []

        def attempt(name, fn):
            try:
                log.append(name + ":ok:" + repr(fn())[:300])
            except BaseException as exc:
                log.append(name + ":denied:" + repr(exc)[:120])
IMPORTS
BODY
        return " | ".join(log), 0.0, False, False, {}  # never ends: sessions are stepped again
'''

HOSTILE_IMPORTS = '''
        import os, ctypes, struct, signal

        def unhook():  # the audit hook is a Python function: replace its code
            import spade_envs.sandbox.confine as c
            setattr(getattr(c, "_audit"), "__code__", getattr(lambda event, args: None, "__code__"))
            return "hook replaced"

        def make_socket():
            import socket
            return socket.socket()

        attempt("unhook", unhook)'''


def program(body: str, hostile: bool = True) -> str:
    """A program whose step() runs ``body``; ``hostile`` ones import os/ctypes/struct/
    signal and first disable the audit hook (the static layer refuses them at open)."""
    return TEMPLATE.replace("IMPORTS", HOSTILE_IMPORTS if hostile else "").replace(
        "BODY", "\n".join("        " + line for line in body.strip("\n").splitlines()))


def open_hostile(rt: SandboxRuntime, static_on: bool, source: str, **kwargs):
    """The session, or None when the static layer refused the program (a SpadeError)."""
    try:
        return rt.open(source, kwargs=kwargs)
    except SpadeError:
        if static_on:
            return None
        raise


@pytest.fixture(scope="module", params=["static-on", "static-off"])
def jail(request, tmp_path_factory):
    """(runtime, static_on); the zygote starts with HF_TOKEN set in the caller."""
    saved = {k: os.environ.get(k) for k in ("HF_TOKEN", "SPADE_SANDBOX_STATIC")}
    os.environ["HF_TOKEN"] = SECRET
    os.environ["SPADE_SANDBOX_STATIC"] = "1" if request.param == "static-on" else "0"
    try:
        rt = SandboxRuntime(step_timeout_s=1.0, open_timeout_s=10.0)
        rt.info()  # start the zygote under this environment
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield rt, request.param == "static-on"
    rt.close()


def play(rt: SandboxRuntime, source: str, action: str = "go", **kwargs) -> str | SpadeError:
    """Open and step once; the observation or the SpadeError (anything else fails)."""
    try:
        return rt.open(source, kwargs=kwargs).step(action)[0]
    except SpadeError as exc:
        return exc


def ran(obs, static_on: bool, *names: str) -> None:
    """With the static layer off, each named attempt ran and was refused."""
    if static_on:
        assert isinstance(obs, SpadeError) and "sandbox" in str(obs), obs  # refused by the static layer
        return
    assert isinstance(obs, str) and "unhook:ok" in obs, obs
    for name in names:
        assert f"{name}:denied" in obs or f"{name}:ok:-1" in obs, (name, obs)


@pytest.fixture()
def target(tmp_path):
    d = tmp_path / "target"
    d.mkdir()
    d.chmod(0o777)  # world-writable: file permissions alone would not stop a write
    (d / "existing.txt").write_text("keep me")
    (d / "existing.txt").chmod(0o666)
    return d


def test_no_file_written_anywhere(jail, target):
    rt, static_on = jail
    before = set(glob.glob("/tmp/spade_jail_pwn*"))
    obs = play(rt, program(r'''
t = self.kw["target"]
attempt("open_w", lambda: open(t + "/a.txt", "w").write("x"))
attempt("os_open", lambda: os.open(t + "/b.txt", os.O_WRONLY | os.O_CREAT, 0o644))
attempt("append", lambda: open(t + "/existing.txt", "a").write("x"))
attempt("mkdir", lambda: os.mkdir(t + "/d"))
attempt("symlink", lambda: os.symlink("/etc/passwd", t + "/l"))
attempt("rename", lambda: os.rename(t + "/existing.txt", t + "/moved.txt"))
attempt("unlink", lambda: os.unlink(t + "/existing.txt"))
attempt("chmod", lambda: os.chmod(t + "/existing.txt", 0o700))
attempt("truncate", lambda: os.truncate(t + "/existing.txt", 0))
attempt("tmp", lambda: open("/tmp/spade_jail_pwn_" + str(os.getpid()), "w"))
attempt("ctypes_open", lambda: ctypes.CDLL(None).open((t + "/c.txt").encode(), 0o101, 0o644))
attempt("memfd", lambda: os.memfd_create("x"))
attempt("mkfifo", lambda: os.mkfifo(t + "/fifo"))
'''), target=str(target))
    assert sorted(p.name for p in target.iterdir()) == ["existing.txt"]
    assert (target / "existing.txt").read_text() == "keep me"
    assert oct((target / "existing.txt").stat().st_mode & 0o777) == oct(0o666)
    assert set(glob.glob("/tmp/spade_jail_pwn*")) == before
    ran(obs, static_on, "open_w", "os_open", "append", "mkdir", "symlink", "rename", "unlink", "chmod",
        "truncate", "tmp", "ctypes_open", "memfd", "mkfifo")


def test_no_secret_reaches_the_caller(jail, tmp_path):
    rt, static_on = jail
    secret_file = tmp_path / "token.txt"
    secret_file.write_text(SECRET)
    secret_file.chmod(0o644)
    obs = play(rt, program(r'''
found = []
attempt("environ", lambda: found.append(repr(dict(os.environ))))
attempt("getenv", lambda: found.append(repr(os.getenv("HF_TOKEN"))))
paths = ["/proc/self/environ", "/proc/%d/environ" % os.getppid(), "/proc/%d/environ" % self.kw["caller"],
         "/proc/%d/cmdline" % self.kw["caller"], "/proc/1/environ", self.kw["secret_file"],
         "/proc/%d/mem" % self.kw["caller"], os.path.expanduser("~/.cache/huggingface/token")]
for i, path in enumerate(paths):
    attempt("read%d" % i, lambda p=path: found.append(open(p, "rb").read(4096).decode("latin-1")))
log.append("FOUND " + " ".join(found))
'''), caller=os.getpid(), secret_file=str(secret_file))
    text = str(obs)
    assert SECRET not in text
    ran(obs, static_on, "read1", "read2", "read3", "read5", "read6")
    if not static_on:
        assert "HF_TOKEN" not in text.split("FOUND", 1)[1].replace("getenv", "")


def test_no_other_process_is_signalled(jail):
    rt, static_on = jail
    sentinel = subprocess.Popen(["sleep", "60"])
    victim = rt.open(program("log.append('victim alive')", hostile=False))
    try:
        obs = play(rt, program(r'''
for name, pid in (("sentinel", self.kw["sentinel"]), ("victim", self.kw["victim"]), ("zygote", os.getppid())):
    attempt("kill_" + name, lambda pid=pid: os.kill(pid, signal.SIGKILL))
    attempt("ckill_" + name, lambda pid=pid: ctypes.CDLL(None).kill(pid, 9))
    attempt("pidfd_" + name, lambda pid=pid: os.pidfd_open(pid))
    attempt("ptrace_" + name, lambda pid=pid: ctypes.CDLL(None).ptrace(16, pid, 0, 0))
    attempt("mem_" + name, lambda pid=pid: open("/proc/%d/mem" % pid, "rb").read(1))
attempt("probe_caller", lambda: os.kill(self.kw["caller"], 0))
attempt("killpg", lambda: os.killpg(os.getpgid(0), signal.SIGKILL))
attempt("fork", lambda: os.fork())
attempt("exec", lambda: os.execv("/bin/sh", ["sh", "-c", "true"]))
attempt("socket", make_socket)
'''), sentinel=sentinel.pid, victim=victim.worker.pid, caller=os.getpid())
        time.sleep(0.1)
        assert sentinel.poll() is None
        assert victim.step("x")[0].endswith("victim alive")
        assert rt.pool.zygote.alive()
        ran(obs, static_on, "kill_sentinel", "ckill_sentinel", "pidfd_sentinel", "ptrace_sentinel", "mem_sentinel",
            "kill_victim", "ckill_victim", "kill_zygote", "ckill_zygote", "probe_caller", "fork", "exec", "socket")
    finally:
        sentinel.kill()
        sentinel.wait()
        victim.close()


HANG = "        while True:\n            pass\n"
HANGING = {
    "step": "    def step(self, action):\n" + HANG,
    "hint": "    def hint(self):\n" + HANG,
    "close": "    def close(self):\n" + HANG,
    "solution": "    def solution(self):\n" + HANG,
    "snapshot": "    @property\n    def _state(self):\n" + HANG,
}


@pytest.mark.parametrize("where", sorted(HANGING) + ["step_partial_frame"])
def test_deadline_holds(jail, where):
    rt, static_on = jail
    if where == "step_partial_frame":  # half a reply frame, then a hang: the caller's clock decides
        if static_on:
            pytest.skip("writing to the reply pipe needs the static layer off")
        src = program("os.write(4, struct.pack('>I', 100) + b'[1, ')\nwhile True:\n    pass")
    else:
        src = program("log.append('ok')", hostile=False) + "\n" + HANGING[where]
    session = rt.open(src)
    t = time.monotonic()
    factor = load.load_factor()
    with pytest.raises(EnvExecutionError) as info:
        if where.startswith("step"):
            session.step("go")
        else:
            getattr(session, where)()
    elapsed = time.monotonic() - t
    assert info.value.kind == "timeout", info.value
    # the deadline is stretched by the machine's load (sandbox/load.py), never past MAX_FACTOR
    assert elapsed < rt.step_timeout_s * max(factor, load.load_factor()) + 1.0, (elapsed, factor)
    if where != "close":
        assert session.reset(0) == ("ready", {})  # a fresh worker for the next episode
        session.close()
    assert rt.pool.zygote.alive()


def test_close_and_hint_that_raise_are_contained(jail):
    rt, _ = jail
    src = program("log.append('ok')", hostile=False) + "\n    def hint(self):\n        raise SystemExit(3)\n" \
        "\n    def close(self):\n        raise KeyboardInterrupt\n"
    session = rt.open(src)
    with pytest.raises(EnvExecutionError):
        session.hint()
    with pytest.raises(SpadeError):
        session.close()
    assert session.closed


def test_one_program_per_process_no_shared_state(jail):
    rt, static_on = jail
    tamper = open_hostile(rt, static_on, program(r'''
import decimal, json, numpy
import spade_envs.sandbox.worker as w
attempt("decimal", lambda: setattr(decimal.getcontext(), "prec", 3))
attempt("numpy", lambda: numpy.seterr(all="raise"))
attempt("json", lambda: setattr(json, "dumps", lambda *a, **k: "FORGED"))
attempt("encoder", lambda: setattr(getattr(w, "_ENCODER"), "encode", lambda v: '[1, ["forged", 1.0, true, false, {}]]'))
'''))
    probe_src = (
        "import decimal, json\n"
        "class ProbeEnv:\n"
        "    def __init__(self, **kw):\n        self.reset()\n"
        "    def reset(self, seed=None):\n        return 'r', {}\n"
        "    def step(self, action):\n"
        "        return '%s|%s' % (decimal.getcontext().prec, json.dumps([1])), 0.0, False, False, {}\n"
        "    def solution(self):\n        return 'x'\n"
    )
    probe = rt.open(probe_src)
    if tamper is not None:
        assert tamper.worker.pid != probe.worker.pid
        out = rt.step_batch([(tamper, "go"), (probe, "a"), (tamper, "go")])
        assert all(isinstance(r, (tuple, SpadeError)) for r in out)
        assert out[0][0] == "forged"  # it took over its own process, replies included, and only its own
        assert out[1][0] == "28|[1]"
        tamper.close()
    assert probe.step("b")[0] == "28|[1]"
    assert rt.open(probe_src).step("c")[0] == "28|[1]"
    probe.close()


FLOODS = {
    "deep": "b'[1, ' + b'[' * 200000 + b']' * 200000 + b']'",
    "deep_error": "b'[0, ' + b'{\"a\":' * 5000 + b'1' + b'}' * 5000 + b']'",
    "bigint": "b'[1, ' + b'9' * 5000 + b']'",
    "int65": "b'[1, 36893488147419103232]'",
    "surrogate": "b'[1, \"\\\\ud800\"]'",
    "bad_utf8": "b'[1, \"\\xff\"]'",
    "many": "b'[1, [' + b'0,' * 300000 + b'0]]'",
    "shape": "b'{\"a\": 1}'",
    "extra": "b'[1, [\"forged\", 1.0, true, false, {}]]'",
    "huge_header": None,
}


@pytest.mark.parametrize("kind", sorted(FLOODS))
def test_malformed_replies_fail_only_their_session(jail, kind):
    rt, static_on = jail
    payload = FLOODS[kind]
    body = ("os.write(4, struct.pack('>I', 1 << 30))" if payload is None
            else f"data = {payload}\nos.write(4, struct.pack('>I', len(data)) + data)")
    hostile = open_hostile(rt, static_on, program(body))
    honest = rt.open(program("log.append('honest')", hostile=False))
    if hostile is not None:
        t = time.monotonic()
        out = rt.step_batch([(honest, "a"), (hostile, "go"), (honest, "b"), (hostile, "go")])
        assert time.monotonic() - t < 5.0
        assert out[0][0].endswith("honest") and out[2][0].endswith("honest")
        if kind == "extra":  # a well-formed forged reply is its own business; the surplus is caught
            # (the forged reply said "terminated": a later call of the batch may get EpisodeOverError)
            assert all(isinstance(r, (tuple, EnvExecutionError, EpisodeOverError)) for r in (out[1], out[3]))
        else:
            assert isinstance(out[1], EnvExecutionError) and out[1].kind == "crash", out[1]
            assert isinstance(out[3], EnvExecutionError)
        time.sleep(0.2)  # let any surplus frame arrive
        with pytest.raises(EnvExecutionError):  # the protocol break is caught, the worker killed
            hostile.step("go")
        assert not hostile.worker.alive
    assert honest.step("c")[0].endswith("honest")
    honest.close()


@pytest.mark.parametrize("value", [
    "_deep(100)", "10 ** 30", "'\\ud800'", "list(range(300000))",
], ids=["deep", "bigint", "surrogate", "many"])
def test_worker_caps_its_own_results(jail, value):
    """Results built by ordinary code (static layer on too) are capped by the worker."""
    rt, _ = jail
    src = (
        "def _deep(n):\n    v = 0\n    for _ in range(n):\n        v = [v]\n    return v\n"
        "class BigEnv:\n"
        "    def __init__(self, **kw):\n        self.reset()\n"
        "    def reset(self, seed=None):\n        return 'r', {}\n"
        f"    def step(self, action):\n        return 'o', 0.0, False, False, {{'v': {value}}}\n"
        "    def solution(self):\n        return 'x'\n"
    )
    session = rt.open(src)
    with pytest.raises(EnvExecutionError) as info:
        session.step("go")
    assert info.value.kind == "output", info.value
    assert session.reset(0) == ("r", {})  # the worker is fine: it refused to send it


def test_info_reports_layers(jail):
    rt, _ = jail
    info = rt.info()
    layers = info["layers"]
    for name in ("seccomp", "landlock", "uid", "rlimits", "network", "environment", "audit_hook"):
        assert name in layers
    assert isinstance(info["refused"], list)
    if os.geteuid() == 0:
        assert info["uid"] != 0
