"""run() and tune() from Python: each backend, the CLI's JSON fields in the result,
tune -> lookup round trips through a temporary database, a second tune that measures
nothing new (retune=True measures again), and a cpu tune whose
candidates run in the spawned pto-tune-worker."""

import threading

import pytest

import pto_tune

CLI_JSON_FIELDS = {"workload", "target", "backend", "strategy", "best", "default", "speedup_vs_default",
                   "candidates", "elapsed_s", "db"}


def test_run_on_the_simulator_is_labelled_simulated():
    m = pto_tune.run("matmul", [256, 256, 512], {"cube": {"m": [128, 128], "k": [64, 256], "n": [128, 128]}},
                     backend="sim")
    assert m.status == "OK" and m.ok
    assert m.simulated
    assert m.time_ns > 0
    assert m["backend"] == "sim"


def test_run_on_this_cpu_is_measured_and_verified():
    m = pto_tune.run("softmax", [33, 100], {"vec": [8, 100]}, dtype="fp32", target="host", backend="cpu")
    assert m.status == "OK", m.get("error")
    assert not m.simulated
    assert m.verified
    assert m.time_ns > 0


@pytest.mark.parametrize("backend, provenance", [("model", "predicted"), ("sim", "simulated")])
def test_tune_then_lookup_is_an_exact_hit(db, backend, provenance):
    result = pto_tune.tune("matmul", [256, 512, 768], backend=backend, budget=6, db=db)
    assert CLI_JSON_FIELDS <= set(result)
    assert result.backend == backend
    # Neither backend measures: the times say simulated_ns or predicted_ns, never measured_ns.
    time = provenance + "_ns"
    for side in (result.best, result.default):
        assert side["provenance"] == provenance
        assert time in side and "measured_ns" not in side
    assert result.speedup_vs_default == pytest.approx(result.default[time] / result.best[time])
    stored = [r["measurement"] for r in pto_tune.Database(db).records() if r["workload"] == result.workload]
    assert result.best[time] == pytest.approx(min(m["stats"]["median_ns"] for m in stored if m["status"] == "OK"))
    assert result.candidates["measured"] >= 1
    cfg = pto_tune.lookup("matmul", [256, 512, 768], backend=backend, db=db)
    assert cfg.source == "exact"
    assert not cfg.stale
    assert cfg == result.config


def test_a_second_tune_takes_what_the_database_holds_and_retune_measures_again(db):
    first = pto_tune.tune("softmax", [64, 256], backend="model", budget=6, db=db)
    again = pto_tune.tune("softmax", [64, 256], backend="model", budget=6, db=db)
    assert again.candidates["measured"] == 0
    assert again.candidates["reused"] == first.candidates["measured"]
    assert again.config == first.config
    retuned = pto_tune.tune("softmax", [64, 256], backend="model", budget=6, db=db, retune=True)
    assert retuned.candidates["reused"] == 0
    assert retuned.candidates["measured"] == first.candidates["measured"]


def stored_best(db, op, shape, **kwargs):
    """The config of the database's best record. On a noisy backend (cpu) it can differ
    from the tuner's pick, which comes from its final interleaved re-measurement while the
    database ranks every record by its median: the tests compare lookup with the database."""
    return pto_tune.Config(pto_tune.Database(db).best(op, shape, **kwargs)["config"])


def test_a_small_cpu_tune_measures_in_the_worker_and_is_found(db):
    result = pto_tune.tune("add", [64, 96], dtype="fp32", target="host", backend="cpu", budget=3, db=db)
    assert result.backend == "cpu"
    assert result.candidates["measured"] >= 2
    assert result.best["provenance"] == "measured"
    assert result.best["measured_ns"] > 0
    cfg = pto_tune.lookup("add", [64, 96], dtype="fp32", target="host", backend="cpu", db=db)
    assert cfg.source == "exact"
    assert cfg == stored_best(db, "add", [64, 96], dtype="fp32", target="host", backend="cpu")


def test_tune_lets_other_python_threads_run(db):
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        before = len(ticks)
        pto_tune.tune("matmul", [384, 384, 384], backend="sim", budget=4, db=db)
        during = len(ticks) - before
    finally:
        done.set()
        thread.join()
    # Holding the GIL throughout, tune() would leave the ticker one switch at most.
    assert during >= 3


def test_flash_attention_tunes_runs_verified_on_this_cpu_and_prints_each_stage(db):
    shape, attrs = [1, 2, 96, 160, 32], {"causal": 1, "kv_heads": 1}
    result = pto_tune.tune("flash_attention", shape, dtype="fp32", target="host", backend="cpu", budget=4,
                           attrs=attrs, db=db)
    cfg = pto_tune.lookup("flash_attention", shape, dtype="fp32", target="host", backend="cpu", attrs=attrs, db=db)
    assert cfg.source == "exact"
    assert cfg == stored_best(db, "flash_attention", shape, dtype="fp32", target="host", backend="cpu", attrs=attrs)
    m = pto_tune.run("flash_attention", shape, cfg, dtype="fp32", target="host", backend="cpu", attrs=attrs)
    assert m.status == "OK" and m.verified, m.get("error")
    lines = cfg.pypto_calls().splitlines()
    stages = [line for line in lines if line.startswith("# stage ")]
    assert stages == ["# stage c1:", "# stage v1:", "# stage c2:", "# stage v2:"]
    compile("\n".join(lines), "<pasted>", "exec")
