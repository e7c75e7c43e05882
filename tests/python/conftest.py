"""Shared fixtures of the pto_tune tests. ctest runs them with PYTHONPATH at the build
tree's python/ folder (tests/CMakeLists.txt); every test gets its own database file and
$PTO_TUNE_DB points into its temporary folder, so no test touches ~/.cache."""

import pytest

import pto_tune


@pytest.fixture(autouse=True)
def private_default_db(tmp_path, monkeypatch):
    monkeypatch.setenv("PTO_TUNE_DB", str(tmp_path / "default.db"))


@pytest.fixture
def db(tmp_path):
    return str(tmp_path / "tune.db")


class StandIn:
    """Records the PyPTO setter calls apply() makes."""

    def __init__(self):
        self.calls = []

    def set_vec_tile_shapes(self, *shape):
        self.calls.append(("vec", list(shape)))

    def set_cube_tile_shapes(self, m, k, n, enable_split_k=False):
        self.calls.append(("cube", list(m), list(k), list(n), enable_split_k))


@pytest.fixture
def standin():
    return StandIn()


def make_record(workload, config, time_ns, backend="sim", target="ascend910b1", compiler=None):
    """A tuning record as Database.commit takes it: `workload` is the key
    ("matmul|512,512,1024|fp16"), the measurement OK with median `time_ns`."""
    return {
        "workload": workload,
        "config": config,
        "target_name": target,
        "target_fingerprint": pto_tune.target_fingerprint(target),
        "backend": backend,
        "measurement": {"status": "OK", "backend": backend, "simulated": backend != "cpu",
                        "stats": {"median_ns": time_ns, "p10_ns": time_ns, "p90_ns": time_ns, "repetitions": 1},
                        "timestamp": 1},
        "versions": {"compiler": compiler or pto_tune.compiler_version, "cost_model": pto_tune.cost_model_version},
        "strategy": "test",
    }


@pytest.fixture(scope="session")
def tuned_matmul(tmp_path_factory):
    """A database holding one simulated tuning run of a 512x512x1024 fp16 matmul."""
    path = str(tmp_path_factory.mktemp("tuned") / "tune.db")
    result = pto_tune.tune("matmul", [512, 512, 1024], backend="sim", budget=6, db=path)
    return path, result
