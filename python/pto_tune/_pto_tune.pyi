# Type stubs of the _pto_tune extension (python/src/*.cpp); pto_tune/__init__.py wraps it.
import os
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

compiler_version: str
cost_model_version: str

class Error(Exception):
    """Any error pto-tune reports; .category names its kind."""
    category: str

class UsageError(Error, ValueError):
    """A bad argument: op, shape, dtype, target, backend or option."""

class InfeasibleConfig(UsageError):
    """A tile config that does not fit the target."""
    violations: list[str]  # every violated rule with its numbers

class DatabaseError(Error):
    """The tuning database is not usable."""

class IoError(Error, OSError):
    """A file or a process (the measurement worker) could not be used."""

class CubeTiles:
    """The arguments of pypto.set_cube_tile_shapes."""
    @property
    def m(self) -> list[int]: ...
    @property
    def k(self) -> list[int]: ...  # [kL0, kL1], or [kL0, kAL1, kBL1]
    @property
    def n(self) -> list[int]: ...
    @property
    def split_k(self) -> bool: ...

class Stage:
    """One stage's tiles: what a kernel sets before that stage's ops."""
    @property
    def cube(self) -> CubeTiles | None: ...
    @property
    def vec(self) -> list[int] | None: ...

class Config:
    """A tile config in PyPTO's vocabulary, with where it came from."""
    def __init__(self, json: str | Mapping[str, Any] | Config) -> None: ...
    @property
    def vec(self) -> list[int] | None: ...
    @property
    def cube(self) -> CubeTiles | None: ...
    @property
    def stages(self) -> dict[str, Stage]: ...  # in kernel order: c1, v1, c2, v2; or the one stage 'main'
    @property
    def nbuffer(self) -> int | None: ...
    @property
    def preload(self) -> int | None: ...  # flash_attention's QK preload; None for other ops
    @property
    def l2_group(self) -> list[int] | None: ...
    @property
    def fusion(self) -> list[list[int]] | None: ...
    @property
    def source(self) -> str: ...  # 'exact', 'transfer <shape>', 'model', 'default', 'given'
    @property
    def stale(self) -> bool: ...
    @property
    def stale_reason(self) -> str: ...
    def to_json(self) -> str: ...
    def pypto_calls(self) -> str: ...

Shapes = Sequence[int] | str

def lookup(op: str, shapes: Shapes, dtype: str = "fp16", target: str = "ascend910b1",
           backend: str | None = None, db: str | os.PathLike[str] | None = None, model: bool = True,
           attrs: Mapping[str, int] | None = None, expr: str | None = None) -> Config: ...
    # expr: the elementwise op's expression, as the CLI's --expr ("mul(add(a,b),2.0)")

def emit_pypto(op: str, shapes: Shapes, config: Config | Mapping[str, Any] | str, dtype: str = "fp16",
               target: str = "ascend910b1", attrs: Mapping[str, int] | None = None,
               expr: str | None = None) -> str: ...
    # the PyPTO module's source: TILES, STAGES, tiles_for, apply, JIT_OPTIONS, kernel

def target_fingerprint(target: str = "ascend910b1") -> str: ...

def reload(db: str | os.PathLike[str] | None = None) -> None: ...

def run(op: str, shapes: Shapes, config: Config | Mapping[str, Any] | str, dtype: str = "fp16",
        target: str = "ascend910b1", backend: str | None = None, seed: int = 1,
        attrs: Mapping[str, int] | None = None, expr: str | None = None) -> dict[str, Any]: ...

def tune(op: str, shapes: Shapes, dtype: str = "fp16", target: str = "ascend910b1",
         backend: str | None = None, strategy: str = "auto", budget: int | None = None,
         time_limit: float | None = None, seed: int = 1, db: str | os.PathLike[str] | None = None,
         attrs: Mapping[str, int] | None = None, expr: str | None = None,
         retune: bool = False, measure: Callable[[Config], float] | None = None) -> dict[str, Any]: ...

class Database:
    def __init__(self, path: str | os.PathLike[str] | None = None) -> None: ...
    @property
    def path(self) -> str: ...
    def best(self, op: str, shapes: Shapes, dtype: str = "fp16", target: str = "ascend910b1",
             backend: str | None = None, attrs: Mapping[str, int] | None = None,
             expr: str | None = None) -> dict[str, Any] | None: ...
    def records(self, op: str | None = None) -> Iterator[dict[str, Any]]: ...
    def export(self, path: str | os.PathLike[str]) -> int: ...
    def import_json(self, path: str | os.PathLike[str]) -> int: ...
    def commit(self, records: Iterable[Mapping[str, Any]]) -> int: ...
    def merge(self, paths: Iterable[str | os.PathLike[str]]) -> dict[str, Any]: ...
