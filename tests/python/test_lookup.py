"""lookup() along its four paths — exact hit, nearest tuned shape, the cost model's
pick, the op's default — plus a stale record, and from many threads at once; a
database it cannot read (a warning, and the answer without it) and one in a folder it
may not write. The records are committed by hand, so that each answer is known in
advance."""

import hashlib
import os
import threading
import warnings

import pytest

import pto_tune
from conftest import make_record

TUNED = {"cube": {"m": [128, 128], "k": [64, 256], "n": [256, 256], "split_k": False}, "nbuffer": 2}
SLOWER = {"cube": {"m": [64, 64], "k": [64, 128], "n": [64, 64], "split_k": False}}
OLD = {"vec": [64, 256]}


@pytest.fixture
def records_db(db):
    database = pto_tune.Database(db)
    database.commit([
        make_record("matmul|512,512,1024|fp16", TUNED, 1000.0),
        make_record("matmul|512,512,1024|fp16", SLOWER, 2000.0),
        make_record("add|256,256|fp16", OLD, 500.0, compiler="0.0.1"),
    ])
    return db


def test_exact_hit_is_the_fastest_record(records_db):
    cfg = pto_tune.lookup("matmul", [512, 512, 1024], db=records_db)
    assert cfg.source == "exact"
    assert cfg == pto_tune.Config(TUNED)
    assert not cfg.stale
    assert cfg == pto_tune.lookup("matmul", "512,512,1024", db=records_db)


def test_a_nearby_shape_gets_the_neighbours_config_or_the_default_as_the_model_ranks_them(records_db):
    # On 512,512,1000 the model predicts the op's default faster than the config tuned
    # for 512,512,1024: the default is served, and said so.
    cfg = pto_tune.lookup("matmul", [512, 512, 1000], db=records_db)
    assert cfg.source == "default"
    assert cfg != pto_tune.Config(TUNED)


def test_an_untuned_op_gets_the_cost_models_pick(records_db):
    cfg = pto_tune.lookup("softmax", [1000, 4096], db=records_db)
    assert cfg.source == "model"
    assert cfg.vec is not None


def test_without_a_record_or_the_models_pick_it_is_the_default(records_db, tmp_path):
    cfg = pto_tune.lookup("softmax", [1000, 4096], db=records_db, model=False)
    assert cfg.source == "default"
    assert cfg.vec is not None
    missing = str(tmp_path / "missing.db")
    assert pto_tune.lookup("matmul", [96, 96, 96], db=missing, model=False).source == "default"
    assert pto_tune.lookup("matmul", [96, 96, 96], db=missing).source == "model"
    assert not os.path.exists(missing)  # lookup never writes


def test_a_record_of_an_older_compiler_is_served_flagged_stale(records_db):
    # (only where no fresh record of the op is near: a fresh one wins wherever there is one)
    cfg = pto_tune.lookup("add", [256, 256], db=records_db)
    assert cfg.source == "exact"
    assert cfg.stale
    assert "0.0.1" in cfg.stale_reason
    assert cfg == pto_tune.Config(OLD)


def test_records_of_another_backend_are_not_served_when_one_is_asked_for(records_db):
    assert pto_tune.lookup("matmul", [512, 512, 1024], db=records_db, backend="sim").source == "exact"
    assert pto_tune.lookup("matmul", [512, 512, 1024], db=records_db, backend="model").source != "exact"


def test_new_records_are_seen_after_commit(records_db):
    faster = {"cube": {"m": [128, 128], "k": [64, 128], "n": [128, 128], "split_k": False}}
    pto_tune.Database(records_db).commit([make_record("matmul|512,512,1024|fp16", faster, 10.0)])
    assert pto_tune.lookup("matmul", [512, 512, 1024], db=records_db) == pto_tune.Config(faster)


def test_threads_calling_lookup_at_once_get_the_same_answers(records_db):
    queries = [("matmul", [512, 512, 1024]), ("matmul", [512, 512, 1000]), ("softmax", [1000, 4096]),
               ("add", [256, 256])]
    wrong = []

    def worker(seed):
        for i in range(300):
            q = (seed + i) % len(queries)
            got = pto_tune.lookup(*queries[q], db=records_db)
            if got != expected[q] or got.source != expected[q].source:
                wrong.append((queries[q], got))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    expected = [pto_tune.lookup(op, shape, db=records_db) for op, shape in queries]
    pto_tune.reload(records_db)  # the threads race to load the database, too
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_the_database_named_by_the_environment_is_the_one_asked(records_db, tmp_path, monkeypatch):
    # Answers are cached per call; the cache must follow $PTO_TUNE_DB, not the first path seen.
    monkeypatch.setenv("PTO_TUNE_DB", records_db)
    assert pto_tune.lookup("matmul", [512, 512, 1024]).source == "exact"
    monkeypatch.setenv("PTO_TUNE_DB", str(tmp_path / "empty.db"))
    assert pto_tune.lookup("matmul", [512, 512, 1024], model=False).source == "default"
    assert pto_tune.lookup("matmul", [512, 512, 1024]).source == "model"


def test_every_spelling_of_a_request_gets_the_same_answer(records_db):
    spellings = [[512, 512, 1024], (512, 512, 1024), "512,512,1024"]
    first = [pto_tune.lookup("matmul", shape, db=records_db) for shape in spellings]
    again = [pto_tune.lookup("matmul", shape, db=records_db) for shape in spellings]  # cached now
    assert all(a == pto_tune.Config(TUNED) and a.source == "exact" for a in first + again)
    with pytest.raises(pto_tune.UsageError):
        pto_tune.lookup("matmul", [512, 512, True], db=records_db)


def test_arguments_in_any_form_get_the_answer_or_the_error_of_the_full_lookup(records_db):
    # A cached answer is served before pybind11 converts the arguments: every form of
    # call must still get what the full lookup gives, errors included.
    first = pto_tune.lookup("matmul", [512, 512, 1024], db=records_db)
    all_positional = pto_tune.lookup("matmul", [512, 512, 1024], "fp16", "ascend910b1", None, records_db, True, None)
    all_named = pto_tune.lookup(op="matmul", shapes=[512, 512, 1024], db=records_db, model=True, attrs={})
    assert first.source == all_positional.source == all_named.source == "exact"
    assert first == all_positional == all_named
    for bad in [lambda: pto_tune.lookup("matmul", [512, 512, 1024], db=records_db, nosuch=1),
                lambda: pto_tune.lookup("matmul", [512, 512, 1024], op="matmul", db=records_db),
                lambda: pto_tune.lookup("matmul", db=records_db),
                lambda: pto_tune.lookup("matmul", [512, 512, 1024], dtype=16, db=records_db)]:
        with pytest.raises(TypeError):
            bad()


def test_text_python_cannot_encode_is_an_error_not_a_crash(records_db):
    # The cached path reads str arguments as UTF-8 outside pybind11: a lone surrogate
    # must fall through to the full lookup's error.
    for call in [lambda: pto_tune.lookup("matmul", "\ud800", db=records_db),
                 lambda: pto_tune.lookup("matmul", [4, 4, 4], attrs={"\ud800": 1}, db=records_db),
                 lambda: pto_tune.lookup("matmul", [4, 4, 4], attrs={"x": 2**70}, db=records_db)]:
        with pytest.raises((pto_tune.Error, RuntimeError, TypeError)):
            call()
    assert pto_tune.lookup("matmul", [512, 512, 1024], db=records_db).source == "exact"


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_a_database_that_cannot_be_read_serves_the_model_with_a_warning(records_db):
    with open(records_db, "r+b") as f:  # garbage over the schema page, after the header
        f.seek(100)
        f.write(bytes((0xA5 ^ i) & 0xFF for i in range(100, 4096)))
    before = sha256_of(records_db)
    with pytest.warns(UserWarning, match=r"tuning database '.*tune\.db' not used: .*corrupt"):
        assert pto_tune.lookup("matmul", [512, 512, 1024], db=records_db).source == "model"
    with pytest.warns(UserWarning):
        assert pto_tune.lookup("matmul", [512, 512, 1024], db=records_db, model=False).source == "default"
    pto_tune.reload(records_db)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the strict lookup of Python
        with pytest.raises(UserWarning, match="corrupt"):
            pto_tune.lookup("matmul", [512, 512, 1024], db=records_db)
    assert sha256_of(records_db) == before


def test_a_database_in_a_folder_the_reader_cannot_write_is_read(tmp_path):
    # A deployed WAL database: SQLite cannot create its -wal and -shm beside it there.
    folder = tmp_path / "deployed"
    folder.mkdir()
    path = str(folder / "tune.db")
    pto_tune.Database(path).commit([make_record("matmul|512,512,1024|fp16", TUNED, 1000.0)])
    os.chmod(folder, 0o555)
    try:
        assert pto_tune.lookup("matmul", [512, 512, 1024], db=path).source == "exact"
        assert os.listdir(folder) == ["tune.db"]
    finally:
        os.chmod(folder, 0o755)
