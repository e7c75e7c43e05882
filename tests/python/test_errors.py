"""Every pto-tune error reaches Python as its pto_tune exception class, with the bad
value named, and the interpreter carries on."""

import pytest

import pto_tune

L0C_OVERFLOW = {"cube": {"m": [256, 256], "k": [64, 256], "n": [256, 256]}}  # 256 KiB of fp32 accumulators


def test_the_classes_form_one_hierarchy():
    assert issubclass(pto_tune.UsageError, pto_tune.Error)
    assert issubclass(pto_tune.UsageError, ValueError)
    assert issubclass(pto_tune.InfeasibleConfig, pto_tune.UsageError)
    assert issubclass(pto_tune.DatabaseError, pto_tune.Error)
    assert issubclass(pto_tune.IoError, OSError)
    assert pto_tune.InfeasibleConfig.__module__ == "pto_tune"


@pytest.mark.parametrize("call, named", [
    (lambda db: pto_tune.lookup("nosuchop", [4, 4], db=db), "nosuchop"),
    (lambda db: pto_tune.lookup("matmul", [4, -4, 4], db=db), "-4"),
    (lambda db: pto_tune.lookup("matmul", "4,,4", db=db), "4,,4"),
    (lambda db: pto_tune.lookup("matmul", [4, "x", 4], db=db), "'x'"),
    (lambda db: pto_tune.lookup("matmul", [4, 4, 4], dtype="fp12", db=db), "fp12"),
    (lambda db: pto_tune.lookup("matmul", [4, 4, 4], target="ascend999", db=db), "ascend999"),
    (lambda db: pto_tune.run("matmul", [64, 64, 64], {}, backend="gpu"), "gpu"),
    (lambda db: pto_tune.run("matmul", [64, 64, 64], '{"vec": [0]}', backend="model"), "vec[0]"),
    (lambda db: pto_tune.run("matmul", [64, 64, 64], 42, backend="model"), "int"),
    (lambda db: pto_tune.tune("matmul", [64, 64, 64], strategy="guessing", backend="model", db=db), "guessing"),
    (lambda db: pto_tune.tune("matmul", [64, 64, 64], budget=-1, backend="model", db=db), "budget"),
    (lambda db: pto_tune.tune("matmul", [64, 64, 64], budget=1, backend="model", db=db), "budget 1"),
])
def test_bad_arguments_are_usage_errors_naming_the_value(db, call, named):
    with pytest.raises(pto_tune.UsageError) as raised:
        call(db)
    assert named in str(raised.value)
    assert raised.value.category in ("usage", "infeasible")


def test_an_infeasible_config_lists_every_violated_rule():
    with pytest.raises(pto_tune.InfeasibleConfig) as raised:
        pto_tune.run("matmul", [1024, 1024, 1024], L0C_OVERFLOW, target="ascend910b1", backend="sim")
    violations = raised.value.violations
    assert violations and all(isinstance(v, str) for v in violations)
    assert any("L0C" in v for v in violations), violations
    assert raised.value.category == "infeasible"


def test_a_file_that_is_not_a_database_is_a_database_error(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(pto_tune.DatabaseError):
        pto_tune.Database(str(path))
    # The lookup degrades instead (a JIT must go on): a warning, and the model's pick.
    with pytest.warns(UserWarning, match="not a SQLite database"):
        assert pto_tune.lookup("matmul", [64, 64, 64], db=str(path)).source == "model"
    assert path.read_text().startswith("these are my notes")  # never written to


def test_a_missing_worker_is_an_io_error(monkeypatch):
    monkeypatch.setenv("PTO_TUNE_WORKER", "/nonexistent/pto-tune-worker")
    with pytest.raises(pto_tune.IoError) as raised:
        pto_tune.run("add", [64, 64], {"vec": [8, 64]}, dtype="fp32", target="host", backend="cpu")
    assert "/nonexistent/pto-tune-worker" in str(raised.value)


def test_the_interpreter_goes_on_after_each_error(db):
    for _ in range(20):
        with pytest.raises(pto_tune.Error):
            pto_tune.lookup("matmul", [1, 2], target="nowhere", db=db)
    assert pto_tune.Config({"vec": [8]}).vec == [8]
