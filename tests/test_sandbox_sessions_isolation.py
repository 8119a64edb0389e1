"""Attacks on session isolation inside one caller process (issue 27, points 3, 4, 8).

- a thread that opened the first environment (and so started the zygotes) finishes:
  nobody's worker may die with it (``PR_SET_PDEATHSIG`` fires on the *thread* that
  started a process);
- a hostile env's slow step holds its own worker only: another session's 1 ms step in
  another thread is not delayed;
- sessions opened, stepped and closed from many threads at once all work;
- a script whose sandboxed env hung (timed out) and that never calls ``close()`` exits
  at once; so does one whose daemon thread is still inside a hung step.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

import pytest

from spade_envs.errors import EnvExecutionError
from spade_envs.sandbox import SandboxRuntime

#: ``step("hang")`` loops forever, anything else answers at once
HANG_SRC = (
    "class HangEnv:\n"
    "    def __init__(self, **kw):\n        self.reset()\n"
    "    def reset(self, seed=None):\n        return 'r', {}\n"
    "    def step(self, action):\n"
    "        while action == 'hang':\n            pass\n"
    "        return action, 0.0, False, False, {}\n"
    "    def solution(self):\n        return 'x'\n"
)


@pytest.fixture(params=["1", "0"], ids=["static-on", "static-off"])
def static(request, monkeypatch):
    monkeypatch.setenv("SPADE_SANDBOX_STATIC", request.param)
    return request.param


def test_a_finished_thread_takes_no_session_with_it(static):
    rt = SandboxRuntime(step_timeout_s=5.0)
    try:
        box: dict = {}

        def first_user() -> None:  # opens the first env: the zygotes start from here
            box["a"] = rt.open(HANG_SRC)
            box["a"].step("in the thread")

        t = threading.Thread(target=first_user)
        t.start()
        t.join()
        assert "a" in box
        b = rt.open(HANG_SRC)  # opened after the thread ended
        time.sleep(0.3)  # a parent-death signal would have landed by now
        assert box["a"].step("main")[0] == "main"  # opened in the finished thread
        assert b.step("main")[0] == "main"

        # the same with a second short-lived thread opening (and stepping) while main steps
        def second_user() -> None:
            s = rt.open(HANG_SRC)
            s.step("x")

        t2 = threading.Thread(target=second_user)
        t2.start()
        t2.join()
        time.sleep(0.3)
        assert b.step("again")[0] == "again" and box["a"].step("again")[0] == "again"
        assert rt.pool.zygote.alive()
    finally:
        rt.close()


def test_a_slow_hostile_step_does_not_stall_another_session():
    rt = SandboxRuntime(step_timeout_s=3.0)
    try:
        hostile, fast = rt.open(HANG_SRC), rt.open(HANG_SRC)
        fast.step("warm")
        started = threading.Event()
        out: dict = {}

        def attacker() -> None:
            started.set()
            try:
                hostile.step("hang")
            except EnvExecutionError as exc:
                out["hostile"] = exc.kind

        t = threading.Thread(target=attacker)
        t.start()
        started.wait()
        time.sleep(0.3)  # the hostile step is now in flight
        times = []
        for i in range(5):
            t0 = time.perf_counter()
            assert fast.step(f"quick {i}")[0] == f"quick {i}"
            times.append(time.perf_counter() - t0)
        t.join()
        assert out.get("hostile") == "timeout"
        assert max(times) < 1.5, times  # waiting on a shared lock took the rest of the 3 s deadline
        # a batch that names the hostile session's worker and the fast one: only the
        # hostile slot times out, and the fast session still answers at once afterwards
        hostile.reset(0)
        t0 = time.perf_counter()
        got = rt.step_batch([(fast, "a"), (hostile, "hang"), (fast, "b")])
        assert got[0][0] == "a" and got[2][0] == "b" and got[1].kind == "timeout"
        assert time.perf_counter() - t0 < 6.0
    finally:
        rt.close()


def test_many_threads_open_step_and_close_their_own_sessions():
    rt = SandboxRuntime(step_timeout_s=10.0)
    errors: list = []

    def user(k: int) -> None:
        try:
            for j in range(3):
                s = rt.open(HANG_SRC)
                for i in range(5):
                    assert s.step(f"{k}-{j}-{i}")[0] == f"{k}-{j}-{i}"
                if j % 2:
                    s.close()  # the others are simply dropped
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    try:
        threads = [threading.Thread(target=user, args=(k,)) for k in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not errors, errors
        assert not any(t.is_alive() for t in threads)
    finally:
        rt.close()


def test_closing_a_session_from_another_thread_mid_step_fails_only_that_call():
    rt = SandboxRuntime(step_timeout_s=30.0)
    try:
        victim, other = rt.open(HANG_SRC), rt.open(HANG_SRC)
        out: dict = {}

        def stepper() -> None:
            try:
                victim.step("hang")
            except EnvExecutionError as exc:
                out["kind"] = exc.kind

        t = threading.Thread(target=stepper)
        t.start()
        time.sleep(0.5)
        t0 = time.perf_counter()
        victim._detach()  # what close() does after the program's close(): the worker ends
        t.join(timeout=10)
        assert not t.is_alive() and out.get("kind") == "crash"
        assert time.perf_counter() - t0 < 5.0  # not the 30 s deadline
        assert other.step("ok")[0] == "ok"
        assert victim.reset(0) == ("r", {})  # a new episode in a fresh worker
    finally:
        rt.close()


_EXIT_SCRIPT = textwrap.dedent("""
    import sys, threading, time
    from spade_envs.gym_env import SpadeEnv
    from spade_envs.trust import get_runtime
    src = sys.argv[1]
    get_runtime().step_timeout_s = float(sys.argv[3])
    env = SpadeEnv(source=src)
    env.reset(seed=0)
    if sys.argv[2] == "timed-out":
        print(env.step("hang")[4].get("verdict"), flush=True)  # the step ran past its deadline
    else:  # a daemon thread is still inside the hung step when the script ends
        threading.Thread(target=env.step, args=("hang",), daemon=True).start()
        time.sleep(1.0)
        print("in flight", flush=True)
    print("END", time.monotonic(), flush=True)
""")


@pytest.mark.parametrize("how,deadline", [("timed-out", "4"), ("in-flight", "120")])
def test_a_script_with_a_hung_env_and_no_close_exits_within_5_s(how, deadline, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", _EXIT_SCRIPT, HANG_SRC, how, deadline], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the interpreter did not exit ({how}): {out!r} {err[-2000:]!r}")
    end = time.monotonic()
    lines = out.splitlines()
    assert proc.returncode == 0, err[-2000:]
    assert lines[0] == ("timeout" if how == "timed-out" else "in flight")
    ended_at = float(lines[-1].split()[1])
    assert end - ended_at < 5.0, end - ended_at


def test_no_worker_or_zygote_outlives_a_script_that_never_closes(tmp_path):
    code = textwrap.dedent("""
        import sys
        from spade_envs.sandbox import SandboxRuntime
        rt = SandboxRuntime()
        s = rt.open(sys.argv[1])
        s.step("x")
        print(rt.pool.zygote.proc.pid, s.worker.pid, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code, HANG_SRC], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    pids = [int(p) for p in out.stdout.split()]
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
