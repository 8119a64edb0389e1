"""Each kernel layer of the jail stops its attacks on its own (applied alone in a forked
child, without the audit hook or the static layer), so the jail does not rest on any
single one; and the environment allow-list drops tokens."""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import subprocess
import sys
import sysconfig

import pytest

from spade_envs.sandbox import confine, landlock


def _in_child(fn) -> list[str]:
    """Run ``fn`` (returning a list of failures) in a forked child; its failures."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            failures = fn()
        except BaseException as exc:  # noqa: BLE001 - report anything to the parent
            failures = [f"raised {exc!r}"]
        os.write(w, "\n".join(failures).encode()[:60000])
        os._exit(0)
    os.close(w)
    out = b""
    while chunk := os.read(r, 65536):
        out += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return [line for line in out.decode().splitlines() if line]


def _expect_denied(failures: list[str], name: str, fn, errnos=(errno.EPERM, errno.EACCES)) -> None:
    try:
        fn()
    except OSError as exc:
        if exc.errno not in errnos:
            failures.append(f"{name}: wrong errno {exc!r}")
        return
    failures.append(f"{name}: was allowed")


def _no_new_privs() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(confine.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


@pytest.fixture()
def open_dir(tmp_path):
    d = tmp_path / "open"
    d.mkdir()
    d.chmod(0o777)
    (d / "secret.txt").write_text("secret")
    (d / "secret.txt").chmod(0o666)
    return d


def test_seccomp_alone(open_dir):
    pytest.importorskip("pyseccomp")
    from spade_envs.sandbox import syscalls

    sentinel = subprocess.Popen(["sleep", "30"])

    def child():
        failures: list[str] = []
        _no_new_privs()
        syscalls.install()
        _expect_denied(failures, "create", lambda: os.open(str(open_dir / "new"), os.O_WRONLY | os.O_CREAT, 0o644))
        _expect_denied(failures, "write-open", lambda: os.open(str(open_dir / "secret.txt"), os.O_RDWR))
        _expect_denied(failures, "unlink", lambda: os.unlink(str(open_dir / "secret.txt")))
        _expect_denied(failures, "mkdir", lambda: os.mkdir(str(open_dir / "d")))
        _expect_denied(failures, "fork", os.fork)
        _expect_denied(failures, "socket", socket.socket)
        _expect_denied(failures, "kill", lambda: os.kill(sentinel.pid, 9))
        _expect_denied(failures, "execve", lambda: os.execv("/bin/true", ["true"]))
        _expect_denied(failures, "unshare", lambda: _check(ctypes.CDLL(None, use_errno=True).unshare(0x20000)))
        if open(__file__).read(10) != '"""Each ke':  # reading still works
            failures.append("read failed")
        return failures

    try:
        assert _in_child(child) == []
        assert sentinel.poll() is None
        assert not (open_dir / "new").exists() and (open_dir / "secret.txt").exists()
    finally:
        sentinel.kill()
        sentinel.wait()


def _check(rc: int) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def test_landlock_alone(open_dir):
    if landlock.abi_version() < 1:
        pytest.skip("Landlock is not available on this kernel")
    stdlib = sysconfig.get_paths()["stdlib"]

    def child():
        failures: list[str] = []
        _no_new_privs()
        landlock.restrict([os.path.realpath(stdlib)])
        _expect_denied(failures, "create", lambda: open(open_dir / "new", "w"))
        _expect_denied(failures, "append", lambda: open(open_dir / "secret.txt", "a"))
        _expect_denied(failures, "read-secret", lambda: open(open_dir / "secret.txt").read())
        _expect_denied(failures, "read-etc", lambda: open("/etc/hostname").read())
        _expect_denied(failures, "unlink", lambda: os.unlink(open_dir / "secret.txt"))
        _expect_denied(failures, "mkdir", lambda: os.mkdir(open_dir / "d"))
        if not open(os.path.join(stdlib, "os.py")).read(1):
            failures.append("reading the allowed tree failed")
        return failures

    assert _in_child(child) == []
    assert sorted(p.name for p in open_dir.iterdir()) == ["secret.txt"]


@pytest.mark.skipif(os.geteuid() != 0, reason="distinct worker uids need a root zygote")
def test_distinct_uid_alone():
    sentinel = subprocess.Popen(["sleep", "30"])

    def child():
        failures: list[str] = []
        got = confine._distinct_uid()
        if not got.startswith("uid "):
            return [got]
        _expect_denied(failures, "signal", lambda: os.kill(sentinel.pid, 0))
        _expect_denied(failures, "environ", lambda: open(f"/proc/{sentinel.pid}/environ").read())
        return failures

    try:
        assert _in_child(child) == []
        assert sentinel.poll() is None
    finally:
        sentinel.kill()
        sentinel.wait()


def test_environment_allow_list():
    env = confine.clean_environment({"HF_TOKEN": "hf_x", "OPENAI_API_KEY": "sk", "AWS_SECRET_ACCESS_KEY": "a",
                                     "LANG": "C.UTF-8", "PYTHONPATH": "/x", "HOME": "/root", "PATH": "/secret/bin"})
    assert "HF_TOKEN" not in env and "OPENAI_API_KEY" not in env and "AWS_SECRET_ACCESS_KEY" not in env
    assert env["LANG"] == "C.UTF-8" and env["PYTHONPATH"] == "/x"
    assert env["HOME"] == "/nonexistent" and env["PATH"] == "/usr/bin:/bin"


def test_refused_layer_is_reported_and_warned(monkeypatch):
    """A kernel that refuses a layer: info() names it and the runtime warns once."""
    from spade_envs.sandbox import runtime as rt_mod

    layers = {"seccomp": "refused: EPERM (Operation not permitted)", "landlock": "applied (ABI 7)"}
    assert confine.refused_layers(layers) == ["seccomp"]
    monkeypatch.setattr(rt_mod, "_warned", [False])
    with pytest.warns(RuntimeWarning, match="seccomp"):
        rt_mod._warn_refused(layers)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rt_mod._warn_refused(layers)  # once only


def test_module_read_paths_are_narrow():
    paths = confine.module_read_paths()
    assert paths
    repo = os.path.dirname(os.path.dirname(os.path.abspath(confine.__file__)))
    assert os.path.dirname(repo) not in paths and "/" not in paths
    assert all(not p.startswith("/etc") and not p.startswith("/proc") for p in paths)
    assert sys.prefix not in paths
