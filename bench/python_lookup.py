"""Latency of pto_tune.lookup from Python: an exact hit, an untuned shape asked again
(served from the memo) and asked for the first time (a new shape each call: the
transfer ranks the neighbours' configs with the cost model), on a database holding one
simulated tuning run. Prints a Markdown report with the
command, the machine and the date (results/python_lookup.md keeps one).

    PYTHONPATH=build/python python3 bench/python_lookup.py [--calls N]
"""

import argparse
import itertools
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time

import pto_tune


def per_call_us(call, calls, batches=15):
    """Over batches of `calls` calls, the mean time of one call in microseconds: the
    median, min and max of the wall time, and the median of the process's CPU time
    (what the call costs whatever else the machine runs)."""
    call()  # the first call loads the target and the database's lookup provider
    wall, cpu = [], []
    for _ in range(batches):
        start, start_cpu = time.perf_counter_ns(), time.process_time_ns()
        for _ in range(calls):
            call()
        wall.append((time.perf_counter_ns() - start) / calls / 1e3)
        cpu.append((time.process_time_ns() - start_cpu) / calls / 1e3)
    return statistics.median(cpu), statistics.median(wall), min(wall), max(wall)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main():
    parser = argparse.ArgumentParser(description="pto_tune.lookup latency")
    parser.add_argument("--calls", type=int, default=20000, help="calls per batch")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        db = os.path.join(folder, "tune.db")
        pto_tune.tune("matmul", [4096, 4096, 4096], backend="sim", budget=8, db=db)
        fresh_n = itertools.count(5000)  # N = 5000, 5001, ...: never asked before
        first = "first lookup of an untuned shape (4096,4096,N, a new N each call)"
        cases = {
            "exact hit (4096,4096,4096)": lambda: pto_tune.lookup("matmul", [4096, 4096, 4096], db=db),
            "untuned (4096,4096,4000), asked again": lambda: pto_tune.lookup("matmul", [4096, 4096, 4000], db=db),
            first: lambda: pto_tune.lookup("matmul", [4096, 4096, next(fresh_n)], db=db),
            "Python call floor (len of a list)": lambda: len([4096, 4096, 4096]),
        }
        sources = {name: None for name in cases}
        sources["exact hit (4096,4096,4096)"] = pto_tune.lookup("matmul", [4096, 4096, 4096], db=db).source
        sources["untuned (4096,4096,4000), asked again"] = pto_tune.lookup("matmul", [4096, 4096, 4000], db=db).source
        sources[first] = pto_tune.lookup("matmul", [4096, 4096, 4999], db=db).source
        # A first lookup costs tens of microseconds: fewer calls per batch keep the run short.
        calls = {first: max(1, args.calls // 20)}
        rows = [(name, *per_call_us(call, calls.get(name, args.calls)), sources[name]) for name, call in cases.items()]

    print("# pto_tune.lookup latency from Python\n")
    print("Command (Release build):\n")
    print("```\nPYTHONPATH=build/python " + os.path.basename(sys.executable) + " bench/python_lookup.py " +
          " ".join(sys.argv[1:]) + "\n```\n")
    print(f"Machine: {cpu_model()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f} at the start of the run. "
          f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.\n")
    print(f"Each figure: the mean time per call over a batch of {args.calls} calls ({max(1, args.calls // 20)} for "
          f"the first lookups); the median over 15 batches "
          f"of CPU time and of wall time, and the wall time's min–max.\n")
    print("| lookup | CPU µs per call | wall µs per call | wall min–max | source |")
    print("|---|---|---|---|---|")
    for name, cpu, median, low, high, source in rows:
        print(f"| {name} | {cpu:.2f} | {median:.2f} | {low:.2f}–{high:.2f} | {source or '—'} |")


if __name__ == "__main__":
    main()
