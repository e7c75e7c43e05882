"""A stand-in for torch in pto-tune's test of examples/npu/measure_pypto.py
(tests/cli/npu_bridge_test.cpp): the few tensor operations the runner and the stand-in
pypto use, on flat lists of Python floats, so that the runner's whole path executes on a
machine without torch. Not pto-tune code; nothing here is used outside that test.
`torch.npu` appears when torch_npu is imported, as with the real one."""

import builtins
import random as _random


class dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


float16, bfloat16, float32, int8, int32 = (dtype(n) for n in ("float16", "bfloat16", "float32", "int8", "int32"))
_random_source = _random.Random(0)


class Tensor:
    def __init__(self, shape, data, dtype=float32, device="cpu"):
        self.shape, self.data, self.dtype, self.device = list(shape), list(data), dtype, device

    def to(self, where):
        if isinstance(where, dtype):
            return Tensor(self.shape, self.data, where, self.device)
        return Tensor(self.shape, self.data, self.dtype, where)

    def float(self):
        return self.to(float32)

    def half(self):
        return self.to(float16)

    def cpu(self):
        return self.to("cpu")

    def _zip(self, other, op):
        if self.shape != other.shape:
            raise ValueError(f"shapes {self.shape} and {other.shape} differ")
        return Tensor(self.shape, [op(a, b) for a, b in zip(self.data, other.data)], self.dtype, self.device)

    def __add__(self, other):
        return self._zip(other, lambda a, b: a + b)

    def __sub__(self, other):
        return self._zip(other, lambda a, b: a - b)

    def abs(self):
        return Tensor(self.shape, [builtins.abs(v) for v in self.data], self.dtype, self.device)

    def max(self):
        return Tensor([], [builtins.max(self.data)], self.dtype, self.device)

    def __float__(self):
        return builtins.float(self.data[0])

    def __setitem__(self, key, value):
        if key != slice(None) or value.shape != self.shape:
            raise ValueError(f"tensor[{key!r}] = a {value.shape} tensor: only [:] of the same shape")
        self.data = list(value.data)


def manual_seed(seed):
    _random_source.seed(seed)


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def randn(*shape, dtype=float32):
    return Tensor(shape, [_random_source.gauss(0, 1) for _ in range(_size(shape))], dtype)


def zeros(*shape, dtype=float32):
    return Tensor(shape, [0.0] * _size(shape), dtype)


def matmul(a, b):
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"matmul of {a.shape} and {b.shape}")
    out = [0.0] * (m * n)
    for i in range(m):
        row = a.data[i * k:(i + 1) * k]
        for j in range(n):
            out[i * n + j] = builtins.sum(x * b.data[p * n + j] for p, x in enumerate(row))
    return Tensor([m, n], out, a.dtype, a.device)
