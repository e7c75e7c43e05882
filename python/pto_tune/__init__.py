"""pto_tune: tuned tile configs where PyPTO kernels are written.

A PyPTO kernel sets its tiles with ``pypto.set_vec_tile_shapes(...)`` and
``pypto.set_cube_tile_shapes([mL0,mL1],[kL0,kL1],[nL0,nL1])``. With this package the
kernel asks the tuning database instead of hard-coding numbers::

    import pypto, pto_tune

    @pypto.frontend.jit
    def matmul_kernel(a, b, out):
        pto_tune.apply(pto_tune.lookup("matmul", [a.shape[0], a.shape[1], b.shape[1]]), pypto)
        out.move(pypto.matmul(a, b, a.dtype))

A kernel of stages (flash_attention: c1, v1, c2, v2) calls apply(cfg, pypto, "c1") before
each stage's ops. emit_pypto() writes a config as a whole PyPTO module instead: its tiles
per stage, the same apply, and the op's kernel body with its fusion scopes and L2 loops.

lookup() answers from the database (exact hit, else the configs of the nearest tuned
shapes that still fit and the op's default, ranked by the cost model for this shape,
else the cost model's pick, else the op's default) and never tunes;
tune() fills the database; run() measures one config; Database reads, exports and
merges a database file. Errors are pto_tune.Error subclasses.
"""

from __future__ import annotations

import os
from typing import Any, Callable, Iterator, Mapping

from ._pto_tune import (
    Config,
    CubeTiles,
    DatabaseError,
    Error,
    InfeasibleConfig,
    Stage,
    IoError,
    UsageError,
    compiler_version,
    cost_model_version,
    emit_pypto,
    lookup,
    reload,
    target_fingerprint,
)
from ._pto_tune import Database as _Database
from ._pto_tune import run as _run
from ._pto_tune import tune as _tune

__all__ = [
    "Config", "CubeTiles", "Database", "DatabaseError", "Error", "InfeasibleConfig", "IoError",
    "Measurement", "Result", "Stage", "UsageError", "apply", "compiler_version", "cost_model_version", "emit_pypto",
    "lookup", "reload", "run", "target_fingerprint", "tune",
]


class _Fields(Mapping[str, Any]):
    """A JSON object from pto-tune, read as attributes (r.status) or as a mapping (r["status"])."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_fields"][name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def __getitem__(self, name: str) -> Any:
        return self._fields[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (what json.dumps takes)."""
        return dict(self._fields)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._fields!r})"


class Measurement(_Fields):
    """One measured config: status ('OK', 'WRONG_RESULT', 'TIMEOUT', ...), time_ns (the
    median), simulated (True for the sim and model backends: not a real measurement),
    verified, stats, predicted_ns, backend, host, error, workload, target, fingerprint
    (the target's), config."""

    @property
    def ok(self) -> bool:
        return self._fields["status"] == "OK"


class Result(_Fields):
    """A tuning run, with the fields of ``pto-tune tune --json``: workload, target,
    backend, strategy, best {config, provenance, time, predicted_ns}, default {config,
    provenance, time}, speedup_vs_default, candidates {total, feasible, measured,
    failed}, elapsed_s, db. A time's key is its provenance's: measured_ns only for a
    real measurement (cpu, npu, a measure function), simulated_ns for the sim backend,
    predicted_ns for the model backend (whose best has no other predicted_ns)."""

    @property
    def config(self) -> Config:
        """The winning config."""
        return Config(self._fields["best"]["config"])


def run(op: str, shapes: Any, config: Any, dtype: str = "fp16", target: str = "ascend910b1",
        backend: str | None = None, seed: int = 1, attrs: dict[str, int] | None = None,
        expr: str | None = None) -> Measurement:
    """Measures one config (a Config, a dict or JSON text) of one workload.

    backend: 'cpu' (real time on this host, target 'host'), 'sim' (the NPU simulator) or
    'model' (the cost model); default cpu for the host and sim for an NPU target. A cpu
    candidate runs in a spawned pto-tune-worker process; the GIL is released meanwhile.
    Raises InfeasibleConfig (with .violations) when the config does not fit; any other
    failure (a wrong result, a crash, a timeout) is the measurement's status.
    """
    return Measurement(_run(op, shapes, config, dtype, target, backend, seed, attrs, expr))


def tune(op: str, shapes: Any, dtype: str = "fp16", target: str = "ascend910b1",
         backend: str | None = None, strategy: str = "auto", budget: int | None = None,
         time_limit: float | None = None, seed: int = 1, db: str | os.PathLike[str] | None = None,
         attrs: dict[str, int] | None = None, expr: str | None = None, retune: bool = False,
         measure: Callable[[Config], float] | None = None) -> Result:
    """Tunes one workload and stores every measurement in the database.

    db: the database file, a str or a pathlib.Path (default: $PTO_TUNE_DB, else
    ~/.cache/pto-tune/tune.db).
    expr: the elementwise op's expression, as --expr spells it ("mul(add(a,b),2.0)").
    budget: measurements, the default config's included, at least 2 (None or 0: the
    strategy decides).
    What the database already holds for the workload (same target, backend and
    versions) is taken as measured and counts against the budget, so a second call
    measures nothing new; retune=True measures it again.
    The GIL is released while it measures; Ctrl-C stops it after the measurement in
    flight (what was measured is kept) and raises KeyboardInterrupt. lookup() sees the
    result at once.
    measure: your own measurement, e.g. your PyPTO kernel on an NPU: measure(config)
    gets each candidate as a Config (its tiles, config.pypto_calls(); apply(config,
    pypto) sets them) and returns the seconds of one run, or raises (the candidate
    fails with the exception's text; a TimeoutError is a timeout). It is called once per
    repeat wanted (finalists in rounds), with the GIL held; infeasible configs never
    reach it. The records say backend "command" (or backend="npu", for an Ascend NPU)
    and name the function.
    """
    return Result(_tune(op, shapes, dtype, target, backend, strategy, budget, time_limit, seed, db, attrs, expr,
                        retune, measure))


class Database(_Database):
    """A tuning database file (created when missing).

    best(op, shapes, ...) -> dict | None: the best record of a workload.
    records(op=None) -> iterator of dicts: every record, of one op or all.
    export(path): the best record per key as versioned JSON, with the default's and the
    near-best records the lookup learns from; import_json(path) adds such a file's
    records; commit(records) stores record dicts; merge(paths): adds every record of
    other databases (shards of a batch job).
    """


def apply(cfg: Config, pypto_module: Any, stage: str | None = None) -> None:
    """Calls the module's tile setters with the config's tiles, stage by stage in kernel
    order (cfg.stages), or for one stage: set_cube_tile_shapes(m, k, n,
    enable_split_k=...) where the stage has a cube tile, then set_vec_tile_shapes(*vec)
    where it has a vec tile. The same calls as apply() of emit_pypto()'s module.

    Duck-typed: pypto_module is pypto itself, or anything with those two functions
    (a test's stand-in). Choices PyPTO has no setter for (n-buffering, L2 grouping,
    fusion) are not applied; cfg.pypto_calls() shows them as comments and emit_pypto()
    writes the kernel structure that expresses the L2 grouping and the fusion.
    """
    if not isinstance(cfg, Config):
        raise UsageError(f"apply: expected a pto_tune.Config, got {type(cfg).__name__}")
    stages = cfg.stages
    if stage is not None and stage not in stages:
        raise UsageError(f"apply: unknown stage {stage!r} (the config's stages: {', '.join(stages) or 'none'})")
    for name in stages if stage is None else (stage,):
        cube, vec = stages[name].cube, stages[name].vec
        if cube is not None:
            pypto_module.set_cube_tile_shapes(cube.m, cube.k, cube.n, enable_split_k=cube.split_k)
        if vec is not None:
            pypto_module.set_vec_tile_shapes(*vec)
