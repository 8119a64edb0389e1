"""Registry store under concurrent writers and a writer killed mid-transaction."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import threading
import time

from registry_helpers import synthetic_source

from spade_envs.registry.migrations import FIRST_STORE_SEQ
from spade_envs.registry.store import Registry

N_PROCS, PER_PROC = 8, 500


def _writer(path: str, worker: int, barrier, results) -> None:
    reg = Registry.open(path)
    barrier.wait()
    ids = []
    for k in range(PER_PROC):
        # every worker also adds 20 sources shared with all others: dedup under contention
        i = k if k < 20 else worker * PER_PROC + k
        ids.append((i, str(reg.add(synthetic_source(i)).env_id)))
    reg.close()
    results.put((worker, ids))


def test_eight_processes_adding_500_each(tmp_path):
    path = str(tmp_path / "registry.sqlite3")
    Registry.open(path).close()
    ctx = mp.get_context("fork")
    barrier, results = ctx.Barrier(N_PROCS), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, w, barrier, results)) for w in range(N_PROCS)]
    t = time.perf_counter()
    for p in procs:
        p.start()
    got = dict(results.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    elapsed = time.perf_counter() - t
    by_source: dict[int, set[str]] = {}
    for ids in got.values():
        for i, eid in ids:
            by_source.setdefault(i, set()).add(eid)
    expected = 20 + N_PROCS * (PER_PROC - 20)
    assert len(by_source) == expected
    assert all(len(v) == 1 for v in by_source.values())  # one id per source, whoever added it
    with Registry.open(path) as reg:
        seqs = sorted(r.env_id.seq for r in reg.list())
        assert seqs == list(range(FIRST_STORE_SEQ, FIRST_STORE_SEQ + expected))  # no loss, no dup, dense
        assert {str(r.env_id) for r in reg.list()} == {e for v in by_source.values() for e in v}
        assert reg.integrity_check() == "ok"
    print(f"{N_PROCS}x{PER_PROC} adds in {elapsed:.1f} s")


def _killed_writer(path: str, ready) -> None:
    reg = Registry.open(path)
    with reg.transaction() as conn:
        for i in range(1000, 3000):
            from spade_envs.registry.rows import row_values

            reg._insert(conn, FIRST_STORE_SEQ + 10 + i, 0, row_values(source=synthetic_source(i), generation=1))
            if i == 2000:
                ready.set()
        time.sleep(60)  # SIGKILLed here, transaction open, WAL frames written


def _looping_writer(path: str) -> None:
    reg = Registry.open(path)
    for i in range(5000, 100000):
        reg.add(synthetic_source(i))


def test_sigkill_mid_transaction_leaves_a_sound_store(tmp_path):
    path = str(tmp_path / "registry.sqlite3")
    with Registry.open(path) as reg:
        for i in range(10):
            reg.add(synthetic_source(i))
    ctx = mp.get_context("fork")
    ready = ctx.Event()
    p = ctx.Process(target=_killed_writer, args=(path, ready))
    p.start()
    assert ready.wait(60)
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    with Registry.open(path) as reg:
        assert reg.integrity_check() == "ok"
        assert [r.env_id.seq for r in reg.list()] == list(range(FIRST_STORE_SEQ, FIRST_STORE_SEQ + 10))
        assert reg.add(synthetic_source(10)).env_id.seq == FIRST_STORE_SEQ + 10
    # and killed at an arbitrary moment of a stream of committed adds
    q = ctx.Process(target=_looping_writer, args=(path,))
    q.start()
    time.sleep(1.0)
    os.kill(q.pid, signal.SIGKILL)
    q.join()
    with Registry.open(path) as reg:
        assert reg.integrity_check() == "ok"
        seqs = [r.env_id.seq for r in reg.list()]
        assert seqs == list(range(FIRST_STORE_SEQ, FIRST_STORE_SEQ + len(seqs))) and len(seqs) > 11
        assert reg.add(synthetic_source(999_999)).new


def _first_opener(path: str, barrier, results) -> None:
    barrier.wait()
    try:
        Registry.open(path).close()
        results.put(None)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        results.put(f"{type(exc).__name__}: {exc}")


def test_processes_creating_one_new_store_at_once_all_open_it(tmp_path):
    """Ranks of one job open a store that does not exist yet at the same instant: each
    gets the store, none mistakes the winner's half-seen initialisation for a foreign
    database (the identity is read in one snapshot)."""
    ctx = mp.get_context("fork")
    errors = []
    for attempt in range(6):
        path = str(tmp_path / f"r{attempt}.sqlite3")
        barrier, results = ctx.Barrier(N_PROCS), ctx.Queue()
        procs = [ctx.Process(target=_first_opener, args=(path, barrier, results)) for _ in range(N_PROCS)]
        for p in procs:
            p.start()
        errors += [e for e in (results.get(timeout=60) for _ in procs) if e]
        for p in procs:
            p.join(timeout=60)
        with Registry.open(path) as reg:
            assert reg.integrity_check() == "ok"
    assert not errors, errors[:3]


def test_a_store_initialised_between_two_identity_reads_is_not_foreign(tmp_path, monkeypatch):
    """The race above made deterministic: another opener initialises the new store right
    after this one has read its application_id. The identity is one snapshot, so this
    opener sees the empty file (or the finished store), never a half of each."""
    path = tmp_path / "registry.sqlite3"
    real, other, errors = Registry._pragma, [], []

    def other_opener() -> None:
        try:
            Registry.open(path).close()
        except Exception as exc:  # noqa: BLE001 - reported to the test
            errors.append(exc)

    def pragma(self, name):
        value = real(self, name)
        if name == "application_id" and not other:
            other.append(threading.Thread(target=other_opener))
            other[0].start()
            other[0].join(0.5)  # long enough for it to commit, were it not held off
        return value

    monkeypatch.setattr(Registry, "_pragma", pragma)
    with Registry.open(path) as reg:
        assert reg.integrity_check() == "ok"
    other[0].join(30)
    assert not other[0].is_alive() and not errors, errors


def test_the_switch_to_wal_waits_for_a_reader_of_the_new_store(tmp_path):
    """Another opener of a store still in rollback mode holds its lock for a moment:
    the WAL switch (for which SQLite does not wait) is retried, not one "locked" error."""
    path = tmp_path / "registry.sqlite3"
    Registry.open(path).close()
    raw = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    raw.execute("PRAGMA journal_mode = DELETE")  # as just initialised, before any WAL switch
    raw.execute("BEGIN IMMEDIATE")  # a write lock, held: another opener mid-initialisation
    release = threading.Timer(0.5, lambda: raw.execute("COMMIT"))
    release.start()
    try:
        with Registry.open(path) as reg:
            assert reg._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        release.join()
        raw.close()
