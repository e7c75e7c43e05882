"""A stand-in for PyPTO in pto-tune's test of examples/npu/measure_pypto.py
(tests/cli/npu_bridge_test.cpp): a JIT that checks the call against the kernel's declared
parameters (pypto.Tensor(shape, dtype) annotations, as PyPTO traces by), runs the kernel
body on the stand-in torch's tensors and advances the stand-in torch_npu's device clock by a hidden cost of the cube
tiles set during the launch. The cost is least at TARGET_TILES, so the test knows the
best; some tiles misbehave as a device can: a wrong output, a failed launch, a hang.
A launch whose kernel computes a matmul without setting cube tiles first fails, so the
runner must apply each candidate's tiles."""

import math
import time

import torch
import torch_npu

DT_FP16, DT_BF16, DT_FP32, DT_INT8, DT_INT32 = torch.float16, torch.bfloat16, torch.float32, torch.int8, torch.int32
TARGET_TILES = {"m": [16, 32], "k": [16, 32], "n": [32, 32]}
_launch = {}


def Tensor(shape, dtype):
    """A parameter's declaration in a JIT function's signature: checked, not traced."""
    if not (isinstance(shape, list) and all(isinstance(d, int) and d > 0 for d in shape)):
        raise ValueError(f"pypto.Tensor: a list of positive sizes, got {shape!r}")
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"pypto.Tensor: an element type such as pypto.DT_FP16, got {dtype!r}")
    return (shape, dtype)


def set_cube_tile_shapes(m, k, n, enable_split_k=False):
    _launch["cube"] = {"m": list(m), "k": list(k), "n": list(n)}


def set_vec_tile_shapes(*shape):
    _launch["vec"] = list(shape)


def _sizes(cube, dim):
    """m and n as [L0, L1]; k as [kL0, kAL1, kBL1], whichever form it was given in."""
    sizes = cube[dim]
    return sizes + sizes[-1:] if dim == "k" and len(sizes) == 2 else sizes


def hidden_cost_s(cube):
    return 1e-5 * (1 + sum((math.log2(got) - math.log2(want)) ** 2 for dim in TARGET_TILES
                           for got, want in zip(_sizes(cube, dim), _sizes(TARGET_TILES, dim))))


def matmul(a, b, out_dtype, **options):
    cube = _launch.get("cube")
    if cube is None:
        raise RuntimeError("pypto.matmul without set_cube_tile_shapes")
    (m0, n0, k0) = cube["m"][0], cube["n"][0], cube["k"][0]
    if (m0, n0) == (32, 16):
        raise RuntimeError("stand-in: launch failed (aclnn error 507015)")
    if (m0, n0, cube["k"]) == (32, 32, [16, 16]):
        time.sleep(60)  # a hang: the runner's per-candidate alarm must end it
    out = torch.matmul(a.float(), b.float())
    if (m0, n0) == (16, 16):
        out = out + torch.Tensor(out.shape, [1.0] * len(out.data))  # off by one everywhere
    return out.to(out_dtype)


# The views and loops of an emitted kernel with an L2 grouping (core/pypto_module.h), on
# 2-D stand-in tensors.
min = min


def loop(start, stop=None, step=1, **options):
    return range(start, stop, step) if stop is not None else range(start)


def view(tensor, shape, offsets, valid_shape=None, **options):
    rows, cols = valid_shape or shape
    width = tensor.shape[1]
    data = [tensor.data[(offsets[0] + i) * width + offsets[1] + j] for i in range(rows) for j in range(cols)]
    return torch.Tensor([rows, cols], data, tensor.dtype, tensor.device)


def assemble(src, offsets, dst, parallel=False):
    rows, cols = src.shape
    for i in range(rows):
        for j in range(cols):
            dst.data[(offsets[0] + i) * dst.shape[1] + offsets[1] + j] = src.data[i * cols + j]


def _jit(func=None, **options):
    def decorate(kernel):
        declared = list(getattr(kernel, "__annotations__", {}).values())

        def launch(*tensors):
            if len(declared) != len(tensors) or any(t.shape != shape for t, (shape, _) in zip(tensors, declared)):
                raise ValueError(f"a JIT kernel declaring {declared} called with {[t.shape for t in tensors]}")
            _launch.clear()
            kernel(*tensors)
            torch_npu.advance(hidden_cost_s(_launch["cube"]))

        return launch

    return decorate(func) if func is not None else decorate


class frontend:
    jit = staticmethod(_jit)
