"""A stand-in for PyPTO (github.com/hicann/pypto) in pto-tune's tests: it checks the
arguments of the calls a PyPTO kernel makes against PyPTO's documented rules, and raises
ValueError naming the rule where one is broken. It computes nothing: a tensor is a shape
and an element type.

It is not pto-tune code and imports none, so that it judges pto-tune's output by PyPTO's
rules rather than by pto-tune's own. Each rule cites the PyPTO file it was read from
(paths in the hicann/pypto repository):

  set_cube_tile_shapes  docs/zh/api/config/pypto-set_cube_tile_shapes.md (alignment, L0/L1
                        relations, the L0A/L0B/L0C/L1 capacity formulas, split-K limits) and
                        python/pypto/config.py, CubeTile (m and n of 2, k of 2 or 3 sizes).
                        Alignment, capacity and split-K depend on the operand element types,
                        so they are checked where PyPTO checks them: when pypto.matmul builds
                        the graph with the tiles set then.
  set_vec_tile_shapes   docs/zh/api/config/pypto-set_vec_tile_shapes.md (1 to 4 sizes, each > 0)
  set_pass_options      python/pypto/config.py (its keywords; sg_set_scope an int in -1 ..
                        2147483647 or (int, bool, bool)) and docs/zh/api/config/
                        pypto-set_pass_options.md: on A2/A3 (910B, 910_93) a scope holds only
                        Cube or only Vector ops, the 950 takes both
  frontend.jit          docs/zh/api/config/pypto-frontend-jit.md (runtime_options, device_sched_mode
                        0..3)
  loop, view, assemble  python/pypto/_controller.py, python/pypto/operation.py
  ops                   python/pypto/op/*.py: their signatures; shapes checked as numpy broadcasts

The target's capacities (TARGETS, from pto-tune's core/targets/*.json, which take them from
the CANN platform configs) are chosen by set_target(name) or $PYPTO_STANDIN_TARGET.
UB has no documented formula; the one check on it is the least any vector tile needs: one
tile of an op's widest operand fits.

What a test reads: `calls`, every setter and pass-option call as (name, args, kwargs);
`jit_options`, the keyword arguments of the last frontend.jit; `reset()` clears both.
"""

from __future__ import annotations

import builtins
import os
from types import SimpleNamespace


class DataType:
    def __init__(self, name: str, size: int) -> None:
        self.name, self.size = name, size

    def __repr__(self) -> str:
        return f"pypto.{self.name}"


DT_FP16 = DataType("DT_FP16", 2)
DT_BF16 = DataType("DT_BF16", 2)
DT_FP32 = DataType("DT_FP32", 4)
DT_INT8 = DataType("DT_INT8", 1)
DT_INT32 = DataType("DT_INT32", 4)
DT_BOOL = DataType("DT_BOOL", 1)

KIB = 1024
_A2_A3 = dict(l0a=64 * KIB, l0b=64 * KIB, l0c=128 * KIB, l1=512 * KIB, ub=192 * KIB, cv_mix=False)
TARGETS = {
    "ascend910b1": _A2_A3, "ascend910b2": _A2_A3, "ascend910b3": _A2_A3, "ascend910b4": _A2_A3,
    "ascend910_93": _A2_A3,
    "ascend950pr": dict(l0a=64 * KIB, l0b=64 * KIB, l0c=256 * KIB, l1=512 * KIB, ub=248 * KIB, cv_mix=True),
}

calls: list = []
jit_options: dict = {}
_state = SimpleNamespace(target=os.environ.get("PYPTO_STANDIN_TARGET", "ascend910b1"), cube=None, vec=None,
                         scope=-1, scope_kinds={})


def _fail(message: str) -> None:
    raise ValueError(f"pypto stand-in ({_state.target}): {message}")


def set_target(name: str) -> None:
    """Chooses the target whose capacities the checks use (not a PyPTO call)."""
    if name not in TARGETS:
        _fail(f"unknown target {name!r} (known: {', '.join(TARGETS)})")
    _state.target = name


def reset() -> None:
    """Forgets the calls, the tiles and the scopes (not a PyPTO call)."""
    calls.clear()
    jit_options.clear()
    _begin_function()


def _begin_function() -> None:
    # Options are local to a jit function (pypto-set_pass_options.md, 作用范围).
    _state.cube, _state.vec, _state.scope, _state.scope_kinds = None, None, -1, {}


def _capacity(name: str) -> int:
    return TARGETS[_state.target][name]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _positive_ints(what: str, values) -> list:
    values = list(values)
    for v in values:
        if not _is_int(v) or v <= 0:
            _fail(f"{what}: every size must be a positive int, got {values}")
    return values


# ---- Setters ----------------------------------------------------------------------------------

def set_cube_tile_shapes(m, k, n, enable_split_k: bool = False) -> None:
    calls.append(("set_cube_tile_shapes", (list(m), list(k), list(n)), {"enable_split_k": enable_split_k}))
    if len(m) != 2 or len(n) != 2:
        _fail(f"set_cube_tile_shapes: m and n take [L0, L1], got m={list(m)} n={list(n)}")
    if len(k) not in (2, 3):
        _fail(f"set_cube_tile_shapes: k takes [kL0, kL1] or [kL0, kAL1, kBL1], got {list(k)}")
    m, k, n = (_positive_ints(f"set_cube_tile_shapes {axis}", v) for axis, v in (("m", m), ("k", k), ("n", n)))
    if not isinstance(enable_split_k, bool):
        _fail(f"set_cube_tile_shapes: enable_split_k must be a bool, got {enable_split_k!r}")
    k_l1 = k[1:] if len(k) == 3 else [k[1]]
    for axis, l0, l1s in (("m", m[0], [m[1]]), ("k", k[0], k_l1), ("n", n[0], [n[1]])):
        for l1 in l1s:
            if l0 > l1 or l1 % l0:
                _fail(f"set_cube_tile_shapes: {axis}L0 {l0} must divide {axis}L1 {l1} (L0 <= L1, L1 % L0 == 0)")
    _state.cube = SimpleNamespace(m=m, k0=k[0], ka=k_l1[0], kb=k_l1[-1], n=n, split_k=enable_split_k)


def set_vec_tile_shapes(*shapes) -> None:
    calls.append(("set_vec_tile_shapes", shapes, {}))
    if not 1 <= len(shapes) <= 4:
        _fail(f"set_vec_tile_shapes: 1 to 4 sizes, got {len(shapes)}")
    _state.vec = _positive_ints("set_vec_tile_shapes", shapes)


def _valid_scope(value) -> int:
    def check_id(scope_id):
        if not _is_int(scope_id) or not -1 <= scope_id <= 2147483647:
            _fail(f"set_pass_options: sg_set_scope id {scope_id!r} is not an int in -1..2147483647")
        return scope_id

    if isinstance(value, (tuple, list)):
        if len(value) != 3 or not all(isinstance(flag, bool) for flag in value[1:]):
            _fail(f"set_pass_options: sg_set_scope takes an int or (int, bool, bool), got {value!r}")
        return check_id(value[0])
    return check_id(value)


def set_pass_options(*, vec_nbuffer_setting=None, cube_l1_reuse_setting=None, cube_nbuffer_setting=None,
                     sg_set_scope=None, sg_set_ooo_scope=None, ooo_sched_mode=None, auto_mix_partition=None,
                     sg_set_tunevf_mode=None, enable_slice=None) -> None:
    given = {key: value for key, value in locals().items() if value is not None}
    calls.append(("set_pass_options", (), given))
    if sg_set_scope is not None:
        _state.scope = _valid_scope(sg_set_scope)


def _record_in_scope(kind: str) -> None:
    """A Cube or Vector op joins the open scope; A2/A3 refuse a scope holding both."""
    if _state.scope == -1:
        return
    kinds = _state.scope_kinds.setdefault(_state.scope, set())
    kinds.add(kind)
    if len(kinds) > 1 and not _capacity("cv_mix"):
        _fail(f"sg_set_scope={_state.scope} holds Cube and Vector ops: {_state.target} (A2/A3) takes a pure Cube or a "
              "pure Vector scope only; the CV-mixed scope is the 950's (pypto-set_pass_options.md)")


# ---- Tensors ---------------------------------------------------------------------------------

class Tensor:
    def __init__(self, shape=None, dtype: DataType | None = None, name: str = "") -> None:
        self.shape = _positive_ints(f"tensor {name!r} shape", shape or [])
        self.dtype = dtype or DT_FP32
        self.name = name

    def __setitem__(self, key, value: "Tensor") -> None:
        """`out[:] = value`: the whole output written (the only form the kernels use)."""
        if key not in (slice(None), Ellipsis):
            _fail(f"{self.name}[{key!r}] = ...: only [:] is supported by the stand-in")
        if value.shape != self.shape or value.dtype is not self.dtype:
            _fail(f"{self.name}[:] = a {value.dtype.name}{value.shape}: the tensor is {self.dtype.name}{self.shape}")

    # PyPTO's Tensor takes a scalar on the left through Python's reflected operators.
    def __rsub__(self, other) -> "Tensor":
        return _elementwise("sub", self, other)

    def __rtruediv__(self, other) -> "Tensor":
        return _elementwise("div", self, other)

    def __repr__(self) -> str:
        return f"Tensor({self.name!r}, {self.dtype.name}{self.shape})"


tensor = Tensor


def _tensor(what: str, value) -> Tensor:
    if not isinstance(value, Tensor):
        _fail(f"{what}: expected a Tensor, got {type(value).__name__}")
    return value


def _broadcast(what: str, a: list, b: list) -> list:
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            _fail(f"{what}: shapes {a} and {b} do not broadcast")
        out.insert(0, builtins.max(x, y))
    return out


def _vector_op(what: str, shape: list, dtype: DataType, operands) -> Tensor:
    widest = builtins.max([dtype.size] + [t.dtype.size for t in operands])
    if _state.vec is not None:
        elements = 1
        for size in _state.vec:
            elements *= size
        if elements * widest > _capacity("ub"):
            _fail(f"{what}: a vec tile {_state.vec} of {widest}-byte elements is {elements * widest} B > UB "
                  f"{_capacity('ub')} B")
    _record_in_scope("vector")
    return Tensor(shape, dtype, what)


def _elementwise(what: str, x, other) -> Tensor:
    x = _tensor(f"pypto.{what}", x)
    if isinstance(other, Tensor):
        if other.dtype is not x.dtype:
            _fail(f"pypto.{what}: operands of {x.dtype.name} and {other.dtype.name}")
        return _vector_op(f"pypto.{what}", _broadcast(f"pypto.{what}", x.shape, other.shape), x.dtype, [x, other])
    if not isinstance(other, (int, float)):
        _fail(f"pypto.{what}: the second operand is a Tensor or a number, got {type(other).__name__}")
    return _vector_op(f"pypto.{what}", x.shape, x.dtype, [x])


def add(input, other): return _elementwise("add", input, other)
def sub(input, other): return _elementwise("sub", input, other)
def mul(input, other): return _elementwise("mul", input, other)
def div(input, other): return _elementwise("div", input, other)
def maximum(input, other): return _elementwise("maximum", input, other)
def minimum(input, other): return _elementwise("minimum", input, other)


def _unary(what: str, x) -> Tensor:
    x = _tensor(f"pypto.{what}", x)
    return _vector_op(f"pypto.{what}", x.shape, x.dtype, [x])


def exp(input): return _unary("exp", input)
def log(input): return _unary("log", input)
def sqrt(input): return _unary("sqrt", input)
def rsqrt(input): return _unary("rsqrt", input)
def erf(input): return _unary("erf", input)
def erfc(input): return _unary("erfc", input)
def tanh(input): return _unary("tanh", input)
def neg(input): return _unary("neg", input)
def abs(input): return _unary("abs", input)


def cast(input, dtype: DataType) -> Tensor:
    x = _tensor("pypto.cast", input)
    if not isinstance(dtype, DataType):
        _fail(f"pypto.cast: dtype must be a pypto DataType, got {dtype!r}")
    return _vector_op("pypto.cast", x.shape, dtype, [x])


def _reduce(what: str, x, dim: int, keepdim: bool) -> Tensor:
    x = _tensor(f"pypto.{what}", x)
    if not _is_int(dim) or not -len(x.shape) <= dim < len(x.shape):
        _fail(f"pypto.{what}: dim {dim!r} out of range for {x.shape}")
    shape = list(x.shape)
    if keepdim:
        shape[dim] = 1
    else:
        del shape[dim]
    return _vector_op(f"pypto.{what}", shape or [1], x.dtype, [x])


def sum(input, dim, keepdim=False): return _reduce("sum", input, dim, keepdim)
def amax(input, dim, keepdim=False): return _reduce("amax", input, dim, keepdim)
def amin(input, dim, keepdim=False): return _reduce("amin", input, dim, keepdim)


def full(size, fill_value, dtype: DataType, *, valid_shape=None) -> Tensor:
    if not isinstance(fill_value, (int, float)):
        _fail(f"pypto.full: fill_value is a number, got {fill_value!r}")
    return _vector_op("pypto.full", list(size), dtype, [])


def triu(input, diagonal=0) -> Tensor:
    x = _tensor("pypto.triu", input)
    if len(x.shape) < 2 or not _is_int(diagonal):
        _fail(f"pypto.triu: needs a matrix and an int diagonal, got {x.shape} and {diagonal!r}")
    return _vector_op("pypto.triu", x.shape, x.dtype, [x])


# ---- Cube --------------------------------------------------------------------------------------

def _align(value: int, to: int) -> int:
    return (value + to - 1) // to * to


def _check_cube_tiles(a: DataType, b: DataType, out_dtype: DataType, extend_params) -> None:
    c = _state.cube
    if c is None:
        _fail("pypto.matmul: call pypto.set_cube_tile_shapes first")
    # 32-byte alignment of every size; fp32 inputs 16 elements.
    element = 32 if a.size == 1 else 16
    sizes = {"mL0": c.m[0], "mL1": c.m[1], "kL0": c.k0, "kAL1": c.ka, "kBL1": c.kb, "nL0": c.n[0], "nL1": c.n[1]}
    for name, size in sizes.items():
        if size % element:
            _fail(f"pypto.matmul: {name} {size} is not a multiple of {element} {a.name} elements (32-byte alignment)")
    # The capacity formulas: fractals of 16 (32 for 1-byte inputs), an fp32 (int32) L0C.
    f = element
    need = {
        "L0A": _align(c.m[0], f) * _align(c.k0, f) * a.size,
        "L0B": _align(c.n[0], f) * _align(c.k0, f) * b.size,
        "L0C": _align(c.m[0], f) * _align(c.n[0], f) * 4,
        "L1": _align(c.m[1], f) * _align(c.ka, f) * a.size + _align(c.n[1], f) * _align(c.kb, f) * b.size,
    }
    for buffer, used in need.items():
        if used > _capacity(buffer.lower()):
            _fail(f"pypto.matmul: cube tiles {sizes} need {used} B of {buffer} > {_capacity(buffer.lower())} B")
    if c.split_k and (out_dtype not in (DT_FP32, DT_INT32) or extend_params is not None):
        _fail(f"pypto.matmul: enable_split_k needs an fp32/int32 output and no bias or fixpipe, got out_dtype "
              f"{out_dtype.name}, extend_params {extend_params!r}")


def matmul(input, mat2, out_dtype, *, a_trans=False, b_trans=False, c_matrix_nz=False, extend_params=None) -> Tensor:
    a, b = _tensor("pypto.matmul", input), _tensor("pypto.matmul", mat2)
    if not 2 <= len(a.shape) <= 4 or len(a.shape) != len(b.shape):
        _fail(f"pypto.matmul: operands of rank 2 to 4, the same, got {a.shape} and {b.shape}")
    if a.dtype is not b.dtype or not isinstance(out_dtype, DataType):
        _fail(f"pypto.matmul: operands of one element type and a DataType out_dtype, got {a.dtype.name}, "
              f"{b.dtype.name}, {out_dtype!r}")
    m, k = (a.shape[-1], a.shape[-2]) if a_trans else (a.shape[-2], a.shape[-1])
    kb, n = (b.shape[-1], b.shape[-2]) if b_trans else (b.shape[-2], b.shape[-1])
    if k != kb:
        _fail(f"pypto.matmul: K of {a.shape} (a_trans={a_trans}) and {b.shape} (b_trans={b_trans}) differ")
    batch = _broadcast("pypto.matmul", a.shape[:-2], b.shape[:-2])
    _check_cube_tiles(a.dtype, b.dtype, out_dtype, extend_params)
    _record_in_scope("cube")
    return Tensor(batch + [m, n], out_dtype, "matmul")


# ---- Views, loops, the JIT --------------------------------------------------------------------

def min(a, b):
    return builtins.min(a, b)


def view(input, shape, offsets, *, valid_shape=None, dtype=None) -> Tensor:
    x = _tensor("pypto.view", input)
    extent = list(valid_shape if valid_shape is not None else shape)
    if not len(shape) == len(offsets) == len(extent) == len(x.shape):
        _fail(f"pypto.view: shape {shape}, offsets {offsets} and valid_shape {valid_shape} must each have "
              f"{len(x.shape)} sizes")
    for dim, (size, offset, valid) in enumerate(zip(shape, offsets, extent)):
        if not 0 <= offset < x.shape[dim] or not 0 < valid <= size or offset + valid > x.shape[dim]:
            _fail(f"pypto.view of {x.shape}: dim {dim} offset {offset} shape {size} valid {valid} leaves the tensor")
    return Tensor(extent, x.dtype, f"{x.name}_view")


def assemble(src, offsets, dst, parallel: bool = False) -> None:
    src, dst = _tensor("pypto.assemble", src), _tensor("pypto.assemble", dst)
    if len(offsets) != len(dst.shape) or len(src.shape) != len(dst.shape) or src.dtype is not dst.dtype:
        _fail(f"pypto.assemble: a {src.dtype.name}{src.shape} at {offsets} into {dst.dtype.name}{dst.shape}")
    for dim, (size, offset) in enumerate(zip(src.shape, offsets)):
        if not 0 <= offset or offset + size > dst.shape[dim]:
            _fail(f"pypto.assemble: {src.shape} at {offsets} leaves {dst.shape} in dim {dim}")


_LOOP_KEYWORDS = {"name", "idx_name", "unroll_list", "submit_before_loop", "parallel"}


def loop(*args, **kwargs):
    if not 1 <= len(args) <= 3 or not all(_is_int(a) for a in args):
        _fail(f"pypto.loop: 1 to 3 int bounds (start, stop, step), got {args}")
    unknown = set(kwargs) - _LOOP_KEYWORDS
    if unknown:
        _fail(f"pypto.loop: unknown keywords {sorted(unknown)}")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args + (1,))[:3]
    if step <= 0:
        _fail(f"pypto.loop: step {step} must be positive")
    calls.append(("loop", (start, stop, step), kwargs))
    return iter(range(start, stop, step))


_RUNTIME_OPTIONS = {"device_sched_mode", "stitch_function_max_num", "max_workspace_kb", "run_mode",
                    "valid_shape_optimize", "ready_on_host_tensors", "device_sched_parallelism",
                    "launch_sched_aicpu_num", "launch_early_mode"}


def _jit(func=None, *, host_options=None, runtime_options=None, codegen_options=None, pass_options=None,
         verify_options=None, debug_options=None):
    given = {key: value for key, value in locals().items() if key != "func" and value is not None}
    for key, value in given.items():
        if not isinstance(value, dict):
            _fail(f"frontend.jit: {key} is a dict, got {value!r}")
    runtime = runtime_options or {}
    unknown = set(runtime) - _RUNTIME_OPTIONS
    if unknown:
        _fail(f"frontend.jit: unknown runtime_options {sorted(unknown)}")
    if runtime.get("device_sched_mode", 0) not in (0, 1, 2, 3):
        _fail(f"frontend.jit: device_sched_mode is 0, 1, 2 or 3, got {runtime['device_sched_mode']!r}")

    def decorate(kernel):
        def run(*args, **kwargs):
            jit_options.clear()
            jit_options.update(given)
            _begin_function()
            kernel(*args, **kwargs)

        return run

    return decorate(func) if func is not None else decorate


frontend = SimpleNamespace(jit=_jit)
jit = _jit
