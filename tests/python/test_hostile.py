"""Hostile input from Python reaches it as the documented exception classes, never a
bare RuntimeError: dims of 2**63 and up, NaN and infinity in Database.commit, a path
that loops through symbolic links; every path argument takes a pathlib.Path; and a
fork while other threads are inside lookup() or reload() leaves the child a working
lookup."""

import math
import os
import pathlib
import signal
import threading
import time

import pytest

import pto_tune
from conftest import make_record

TILES = {"cube": {"m": [64, 64], "k": [32, 64], "n": [64, 128]}, "nbuffer": 2}


@pytest.mark.parametrize("dims", [[2**63, 64, 64], [64, 2**64 + 5, 64], [-(2**63) - 1, 4, 4]])
def test_dims_past_64_bits_are_usage_errors(db, dims):
    with pytest.raises(pto_tune.UsageError, match="64 bits"):
        pto_tune.lookup("matmul", dims, db=db)
    with pytest.raises(pto_tune.UsageError, match="64 bits"):
        pto_tune.lookup("matmul", [64, 64, 64], attrs={"transpose_b": 2**70}, db=db)


@pytest.mark.parametrize("median", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_in_a_committed_record_are_usage_errors_and_nothing_is_stored(db, median):
    database = pto_tune.Database(db)
    record = make_record("matmul|256,256,256|fp16", TILES, median)
    with pytest.raises(pto_tune.UsageError):
        database.commit([record])
    huge = make_record("matmul|256,256,256|fp16", TILES, 100.0)
    huge["workload"] = f"matmul|{2**63},256,256|fp16"
    with pytest.raises(pto_tune.UsageError):
        database.commit([huge])
    assert list(database.records()) == []


def test_a_path_that_loops_is_a_database_error(tmp_path):
    loop = tmp_path / "loop.db"
    loop.symlink_to(loop)
    with pytest.raises(pto_tune.DatabaseError, match="symbolic links"):
        pto_tune.Database(loop)
    with pytest.warns(UserWarning, match="symbolic links"):
        assert pto_tune.lookup("matmul", [64, 64, 64], db=loop).source == "model"


def test_every_path_argument_takes_a_pathlib_path(tmp_path):
    db = tmp_path / "tune.db"
    database = pto_tune.Database(db)
    assert database.path == str(db)
    database.commit([make_record("matmul|256,256,256|fp16", TILES, 100.0)])
    assert pto_tune.lookup("matmul", [256, 256, 256], db=db).source == "exact"
    pto_tune.reload(db=db)
    assert database.export(tmp_path / "out.json") == 1
    other = pto_tune.Database(tmp_path / "copy.db")
    assert other.import_json(tmp_path / "out.json") == 1
    assert pto_tune.Database(tmp_path / "merged.db").merge([db, tmp_path / "copy.db"])["keys"] == 1
    result = pto_tune.tune("matmul", [64, 64, 64], backend="model", budget=2, db=tmp_path / "tuned.db")
    assert result.db == str(tmp_path / "tuned.db")
    with pytest.raises(pto_tune.UsageError, match="os.PathLike"):
        pto_tune.Database(42)


def assert_forked_child_passes(check, alarm_s):
    """Forks; the child runs check() and exits 0 when it returns true, 1 when false, 2 on
    any exception. A hang ends the child with SIGALRM after alarm_s, not the test run."""
    pid = os.fork()
    if pid == 0:
        signal.alarm(alarm_s)
        try:
            os._exit(0 if check() else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child hung or failed"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.filterwarnings("ignore:This process.*multi-threaded:DeprecationWarning")
def test_a_fork_while_threads_look_up_and_reload_leaves_the_child_a_working_lookup(tmp_path):
    db = tmp_path / "tune.db"
    pto_tune.Database(db).commit([make_record("matmul|256,256,256|fp16", TILES, 100.0)])
    stop = threading.Event()

    def hammer(seed):
        n = 0
        while not stop.is_set():
            n += 1
            # Misses (new shapes: the native path) and reloads (the provider dropped and
            # loaded again), so that a fork lands inside them.
            pto_tune.lookup("matmul", [256, 256, 256 + (seed * 100_000 + n) % 4096], db=str(db), model=False)
            if n % 7 == 0:
                pto_tune.reload(db=str(db))

    threads = [threading.Thread(target=hammer, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    try:
        for _ in range(10):
            time.sleep(0.01)
            # The child: one lookup must answer.
            assert_forked_child_passes(lambda: pto_tune.lookup("matmul", [256, 256, 256], db=str(db)).source == "exact",
                                       alarm_s=20)
    finally:
        stop.set()
        for t in threads:
            t.join()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
@pytest.mark.filterwarnings("ignore:This process.*multi-threaded:DeprecationWarning")
def test_a_child_forked_after_tunes_or_during_one_can_tune(tmp_path):
    # Found while reading the fork guard: libgomp's thread pool does not survive fork(),
    # so a child of a process that had tuned (multiprocessing's fork start method) hung
    # in its first tune's scoring, 10 of 10 times.
    pto_tune.tune("matmul", [256, 256, 256], backend="model", budget=4, db=tmp_path / "parent.db")
    stop = threading.Event()

    def tune_meanwhile():
        n = 0
        while not stop.is_set():
            n += 1
            pto_tune.tune("matmul", [128 + 16 * (n % 40), 256, 256], backend="model", budget=8, db=tmp_path / "bg.db")

    background = threading.Thread(target=tune_meanwhile)
    background.start()
    try:
        for k in range(4):
            time.sleep(0.02 * k)
            db = tmp_path / f"child{k}.db"
            assert_forked_child_passes(
                lambda: pto_tune.tune("matmul", [64, 64, 64], backend="model", budget=4, db=db)["best"], alarm_s=30)
    finally:
        stop.set()
        background.join()


def test_a_record_or_config_nested_past_what_json_dumps_takes_is_a_usage_error(db):
    # Found by scripts/probe_hostile.py: json.dumps' RecursionError came through as it was.
    deep = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(pto_tune.UsageError, match="nested too deep"):
        pto_tune.Database(db).commit([{"workload": deep}])
    with pytest.raises(pto_tune.UsageError, match="nested too deep"):
        pto_tune.Config({"vec": deep})
    assert list(pto_tune.Database(db).records()) == []


def test_committed_records_are_checked_as_imported_ones_are(db):
    # Found while reading: commit stored what import would refuse, and lookup served it.
    database = pto_tune.Database(db)
    huge = {"cube": {"m": [4096, 4096], "k": [4096, 4096], "n": [4096, 4096]}}
    good = make_record("matmul|256,256,256|fp16", TILES, 100.0)
    with pytest.raises(pto_tune.UsageError, match=r"records\[1\].*does not fit"):
        database.commit([good, make_record("matmul|512,512,512|fp16", huge, 50.0)])
    with pytest.raises(pto_tune.UsageError, match=r"records\[0\].*nosuch"):
        database.commit([make_record("matmul|256,256,256|fp16", TILES, 100.0, backend="nosuch")])
    assert list(database.records()) == []
    assert database.commit([good]) == 1
