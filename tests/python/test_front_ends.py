"""`pto-tune tune` and pto_tune.tune are one tuning job (search/tune_request.h): the same
workload, target, backend and seed store the same records, measured in the same order,
with a calibration of the cost model in $PTO_TUNE_HOME that both front-ends search with.
The CLI is the one ctest names in $PTO_TUNE_BIN (tests/CMakeLists.txt)."""

import json
import os
import subprocess

import pytest

import pto_tune

TARGET = "ascend910b1"
OP, SHAPES = "matmul", [1024, 1024, 1024]
COEFFICIENTS = {"hbm": 6.0, "l2": 3.0, "cube": 0.3, "vector": 1.0, "onchip": 2.0, "latency": 1.0, "spill": 1.0,
                "task": 2000.0, "instr": 1.0, "launch": 5000.0}


def calibrate(home, backend="sim"):
    """A calibration of the target's model for `backend` in `home`, as `pto-tune calibrate`
    saves one (cost_model/calibration_store.h), far from the datasheet figures."""
    folder = home / "calibration"
    folder.mkdir(parents=True)
    fingerprint = pto_tune.target_fingerprint(TARGET)
    fit = {"coefficients": COEFFICIENTS, "target": TARGET, "fingerprint": fingerprint, "backend": backend,
           "samples": 40, "rms_log_error": 0.1}
    (folder / f"{TARGET}.{fingerprint}.{backend}.coefficients.json").write_text(json.dumps(fit))


def stored(db):
    """What a run stored, in the order it was measured, less when and where."""
    return [(json.dumps(r["config"], sort_keys=True), r["strategy"], r["measurement"]["status"],
             r["measurement"].get("stats", {}).get("median_ns"), r["measurement"].get("predicted_ns"))
            for r in pto_tune.Database(db).records()]


def cli_tune(db, backend, seed):
    done = subprocess.run([os.environ["PTO_TUNE_BIN"], "tune", "--op", OP, "--shapes", ",".join(map(str, SHAPES)),
                           "--target", TARGET, "--backend", backend, "--strategy", "topk", "--budget", "10",
                           "--seed", str(seed), "--db", str(db), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def python_tune(db, backend, seed):
    return pto_tune.tune(OP, SHAPES, target=TARGET, backend=backend, strategy="topk", budget=10, seed=seed, db=db)


@pytest.mark.parametrize("backend", ["model", "sim"])
def test_cli_and_python_store_the_same_records(tmp_path, monkeypatch, backend):
    calibrate(tmp_path / "home")
    monkeypatch.setenv("PTO_TUNE_HOME", str(tmp_path / "home"))
    cli = cli_tune(tmp_path / "cli.db", backend, seed=7)
    python = python_tune(tmp_path / "python.db", backend, seed=7)
    assert cli["model_calibrated"]
    records = stored(tmp_path / "cli.db")
    assert len(records) == 10  # the budget, the default's included
    assert records == stored(tmp_path / "python.db")
    assert python.config == pto_tune.Config(cli["best"]["config"])


def test_the_calibration_changes_what_the_search_measures(tmp_path, monkeypatch):
    """Without this, a front-end that searched with the datasheet figures would store the
    same records as one that used the calibration, and the test above could not tell."""
    monkeypatch.setenv("PTO_TUNE_HOME", str(tmp_path / "datasheet"))
    python_tune(tmp_path / "datasheet.db", "sim", seed=7)
    calibrate(tmp_path / "home")
    monkeypatch.setenv("PTO_TUNE_HOME", str(tmp_path / "home"))
    python_tune(tmp_path / "calibrated.db", "sim", seed=7)
    configs = [[config for config, *_ in stored(tmp_path / db)] for db in ("datasheet.db", "calibrated.db")]
    assert configs[0] != configs[1]
