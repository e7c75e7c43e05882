"""tune(measure=fn): a Python function measures each candidate, the Triton / Kernel
Tuner way. fn answers from a hidden cost function with one best config, and raises,
times out and returns nonsense on the way; the tuner must find that function's best
over the whole space (exhaustive: fn sees every feasible candidate), give each failure
its status, store records that name the function, and lookup() must serve the best."""

import json
import math
import zlib

import pytest

import pto_tune

SHAPE = [64, 32, 64]
TARGET_TILES = {"m": [32, 64], "k": [16, 32], "n": [32, 64]}


def crc(config):
    return zlib.crc32(config.to_json().encode())


def distance(config):
    got = {"m": config.cube.m, "k": config.cube.k, "n": config.cube.n}
    return sum((math.log2(g[0]) - math.log2(w[0])) ** 2 + (math.log2(g[-1]) - math.log2(w[-1])) ** 2
               for g, w in ((got[name], TARGET_TILES[name]) for name in TARGET_TILES))


def hidden_cost_s(config):
    return 1e-4 * (1.0 + distance(config) + (crc(config) % 1000) / 1e5)


class Measurer:
    """The hidden cost, and a failure now and then, never on the target tiles."""

    def __init__(self):
        self.seen = {}

    def __call__(self, config):
        assert isinstance(config, pto_tune.Config)
        assert "set_cube_tile_shapes" in config.pypto_calls()
        self.seen[config.to_json()] = hidden_cost_s(config)
        if distance(config) > 0:
            mischief = crc(config) % 11
            if mischief == 0:
                raise RuntimeError("stand-in kernel failed to launch")
            if mischief == 1:
                raise TimeoutError("stand-in kernel over its time")
            if mischief == 2:
                return "fast"
            if mischief == 3:
                return -1.0
        return hidden_cost_s(config)


def test_tune_with_a_measure_function_finds_its_best(db):
    fn = Measurer()
    result = pto_tune.tune("matmul", SHAPE, strategy="exhaustive", db=db, measure=fn)
    assert len(fn.seen) > 20
    best = min(fn.seen, key=fn.seen.get)
    assert distance(pto_tune.Config(best)) == 0
    assert pto_tune.Config(result.best["config"]).to_json() == best
    assert result.best["measured_ns"] == pytest.approx(fn.seen[best] * 1e9)
    assert result.backend == "command"
    failed = result.candidates["failed_by_status"]
    assert failed.get("TIMEOUT", 0) > 0 and failed.get("RUNTIME_ERROR", 0) > 0, failed

    records = list(pto_tune.Database(db).records("matmul"))
    errors = " ".join(r["measurement"]["error"] for r in records)
    for why in ("stand-in kernel failed to launch", "TimeoutError", "'fast', not a number of seconds",
                "not a positive finite number"):
        assert why in errors
    measured_by = {r["measurement"]["detail"]["measured_by"] for r in records if "detail" in r["measurement"]}
    assert measured_by == {"python function Measurer"}

    served = pto_tune.lookup("matmul", SHAPE, backend="command", db=db)
    assert served.source == "exact"
    assert served.to_json() == best


def test_a_measure_function_may_record_npu_times(db):
    result = pto_tune.tune("matmul", SHAPE, backend="npu", budget=3, db=db, measure=hidden_cost_s)
    assert result.backend == "npu"
    assert pto_tune.lookup("matmul", SHAPE, backend="npu", db=db).source == "exact"


def test_a_measure_function_is_checked_before_anything_runs(db):
    with pytest.raises(pto_tune.UsageError, match="a function"):
        pto_tune.tune("matmul", SHAPE, db=db, measure=42)
    with pytest.raises(pto_tune.UsageError, match="'sim'"):
        pto_tune.tune("matmul", SHAPE, backend="sim", db=db, measure=hidden_cost_s)
