"""A PyPTO-style matmul kernel that takes its tile shapes from the tuning database.

    PYTHONPATH=build/python python3 examples/python/matmul_kernel.py [--db PATH] [--tune]

Without PyPTO installed it runs on a stand-in module (pypto_standin.py) that records
the setter calls, and prints them. --tune first tunes the shape on the NPU simulator
(a few seconds), so that the lookup is an exact hit; without it the lookup falls back
(the nearest tuned shape, the cost model's pick, or the default) and says which.
"""

import argparse
import os
import sys

import pto_tune

try:
    import pypto
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pypto_standin as pypto


def make_kernel(db):
    @pypto.frontend.jit
    def matmul_kernel(a, b, out):
        m, k = a.shape
        n = b.shape[1]
        # Traced once per shape: the lookup is cheap (a few microseconds) and never tunes.
        cfg = pto_tune.lookup("matmul", [m, k, n], dtype="fp16", target="ascend910b1", db=db)
        pto_tune.apply(cfg, pypto)
        out.move(pypto.matmul(a, b, a.dtype))
        return cfg

    return matmul_kernel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="tuning database (default $PTO_TUNE_DB or ~/.cache/pto-tune/tune.db)")
    parser.add_argument("--tune", action="store_true", help="tune the shape first (simulated)")
    parser.add_argument("--shape", default="1024,1024,2048", help="M,K,N")
    args = parser.parse_args()
    m, k, n = (int(x) for x in args.shape.split(","))
    if args.tune:
        result = pto_tune.tune("matmul", [m, k, n], backend="sim", budget=12, db=args.db)
        print(f"tuned: {result.speedup_vs_default:.2f}x the default (simulated)")

    kernel = make_kernel(args.db)
    cfg = kernel(pypto.Tensor([m, k]), pypto.Tensor([k, n]), pypto.Tensor([m, n]))
    print(f"config from {cfg.source}{' (stale)' if cfg.stale else ''}: {cfg.to_json()}")
    print("as PyPTO lines:\n" + cfg.pypto_calls())
    if hasattr(pypto, "calls"):
        print("setter calls the kernel made:\n" + "\n".join("  pypto." + c for c in pypto.calls))


if __name__ == "__main__":
    main()
