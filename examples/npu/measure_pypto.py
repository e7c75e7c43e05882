#!/usr/bin/env python3
"""Measures pto-tune's candidates on an Ascend NPU: the measure command of `--backend npu`.

    pto-tune tune --op matmul --shapes 4096,4096,4096 --target ascend910b1 --backend npu \\
        --measure-cmd 'python3 examples/npu/measure_pypto.py --kernel my_matmul.py'

pto-tune writes a request of the measure protocol (docs/measure_protocol.md) on stdin: the
workload, and per candidate its id, config and PyPTO module (what `--emit pypto` writes).
For each candidate this runner loads that module, builds the kernel with the candidate's
tiles applied (the module's apply(pypto): pypto.set_cube_tile_shapes /
pypto.set_vec_tile_shapes, as the emitted code makes them) inside @pypto.frontend.jit,
runs it on the NPU through torch_npu, checks the first run's output against a torch
reference, then times warm-up and timed runs between NPU events, and prints the answer
on stdout: per candidate the seconds of each timed run, or failed / wrong_result /
timeout with a message. Finalists (`interleaved`) are timed in rounds A B C A B C.

Your kernel module (--kernel PATH, or $PTO_TUNE_KERNEL) says what to run; each name is
optional:

    kernel(pypto, *tensors)   the kernel body, inputs then outputs, without tile setters
                              (the candidate's are set first); default: the emitted
                              module's kernel of the op
    inputs(torch, workload)   the input tensors, on the CPU (workload: the request's dict
                              with op, shape, dtype, attrs); default: random tensors of the
                              emitted module's TENSORS
    reference(torch, *inputs) the expected output, or a tuple of them (CPU tensors);
                              default: the built-in reference of matmul and add

Without torch, torch_npu or pypto it exits at once, saying which is missing; pto-tune
then reports that message for the batch.
"""

import argparse
import importlib.util
import json
import math
import os
import signal
import sys
import types

PROTOCOL, VERSION = "pto-tune-measure", 1
TORCH_DTYPES = {"DT_FP16": "float16", "DT_BF16": "bfloat16", "DT_FP32": "float32", "DT_INT8": "int8",
                "DT_INT32": "int32", "DT_BOOL": "bool"}
# op -> (its input count, its reference); the result is compared in fp32.
REFERENCES = {
    "matmul": (2, lambda torch, a, b: torch.matmul(a.float(), b.float())),
    "add": (2, lambda torch, a, b: a.float() + b.float()),
}
ATOL, RTOL = 1e-2, 1e-2  # of fp16 results accumulated in fp32


class CandidateTimeout(Exception):
    pass


def import_device_modules():
    """torch, torch_npu and pypto, or an exit naming the one missing."""
    modules = []
    for name in ("torch", "torch_npu", "pypto"):
        try:
            modules.append(importlib.import_module(name))
        except ImportError as e:
            sys.exit(f"measure_pypto.py: cannot import {name} ({e}): this runner measures on an Ascend NPU and "
                     "needs torch, torch_npu and pypto (with CANN) in the Python that runs it; without an NPU "
                     "tune with --backend sim")
    return modules


def load_module(name, source, path=None):
    """A module from source text (a candidate's PyPTO module) or a file (the user's kernel)."""
    if path is not None:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up there
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


class Workload:
    """The tensors, reference and kernel of the request's workload, from the user's module
    where it has them, else from the first candidate's module and the built-in references."""

    def __init__(self, torch, request, user, tuned):
        self.torch, self.request, self.user = torch, request["workload"], user
        op = self.request["op"]
        builtin = REFERENCES.get(op) if not self.request["attrs"] else None
        self.reference = getattr(user, "reference", None) or (builtin[1] if builtin else None)
        if self.reference is None:
            raise SystemExit(f"measure_pypto.py: no built-in reference for {op} with attrs {self.request['attrs']}; "
                             "define reference(torch, *inputs) in your --kernel module")
        torch.manual_seed(0)
        if hasattr(user, "inputs"):
            self.inputs = list(user.inputs(torch, self.request))
        elif builtin:
            self.inputs = [self.random(*tuned.TENSORS[name]) for name in list(tuned.TENSORS)[:builtin[0]]]
        else:
            raise SystemExit(f"measure_pypto.py: no built-in inputs for {op}; define inputs(torch, workload) in your "
                             "--kernel module")
        expected = self.reference(torch, *self.inputs)
        self.expected = list(expected) if isinstance(expected, (tuple, list)) else [expected]
        self.out_specs = [tuned.TENSORS[name] for name in list(tuned.TENSORS)[len(self.inputs):]]

    def random(self, shape, pypto_dtype):
        dtype = getattr(self.torch, TORCH_DTYPES[pypto_dtype])
        return self.torch.randn(*shape, dtype=self.torch.float32).to(dtype)

    def device_tensors(self):
        """The inputs on the NPU and fresh outputs there, in the kernel's order."""
        outs = [self.torch.zeros(*shape, dtype=getattr(self.torch, TORCH_DTYPES[dt])) for shape, dt in self.out_specs]
        return [t.to("npu") for t in self.inputs + outs]

    def max_error(self, tensors):
        """The largest |output - reference|, and the tolerance it is held to."""
        outputs = tensors[len(tensors) - len(self.expected):]
        worst, allowed = 0.0, float("inf")
        for got, want in zip(outputs, self.expected):
            want = want.float()
            error = float((got.cpu().float() - want).abs().max())
            worst = max(worst, error) if not math.isnan(error) else float("inf")
            allowed = min(allowed, ATOL + RTOL * float(want.abs().max()))
        return worst, allowed


def build(pypto, user, tuned):
    """The candidate's kernel, as the emitted module's docstring writes it: a JIT function
    whose parameters declare TENSORS (PyPTO traces it by them), setting the candidate's
    tiles (tuned.apply), then running the kernel body."""
    body = getattr(user, "kernel", tuned.kernel)
    names = list(tuned.TENSORS)
    declared = ", ".join(f"{name}: pypto.Tensor({list(shape)}, pypto.{dtype})"
                         for name, (shape, dtype) in tuned.TENSORS.items())
    source = (f"def candidate_kernel({declared}):\n"
              f"    _tuned.apply(pypto)\n"
              f"    _body(pypto, {', '.join(names)})\n")
    scope = {"pypto": pypto, "_tuned": tuned, "_body": body}
    exec(compile(source, f"<{tuned.__name__} kernel>", "exec"), scope)
    return pypto.frontend.jit(**tuned.JIT_OPTIONS)(scope["candidate_kernel"])


class Candidate:
    def __init__(self, entry, torch, workload):
        self.id, self.source, self.torch, self.workload = entry["id"], entry["pypto"], torch, workload
        self.times, self.answer, self.max_abs_err = [], None, 0.0

    def prepare(self, pypto, user):
        """Its module loaded, its kernel built with its tiles, its tensors on the NPU."""
        tuned = load_module(f"pto_tune_candidate_{self.id}", self.source)
        self.kernel = build(pypto, user, tuned)
        self.tensors = self.workload.device_tensors()

    def launch(self):
        self.kernel(*self.tensors)

    def verify(self):
        """The first run, checked against the reference: the answer's verdict if wrong."""
        self.launch()
        self.torch.npu.synchronize()
        error, allowed = self.workload.max_error(self.tensors)
        self.max_abs_err = error
        if not error <= allowed:
            self.answer = {"id": self.id, "status": "wrong_result",
                           "message": f"max |output - reference| = {error:g}, more than the {allowed:g} allowed"}

    def time_once(self):
        npu = self.torch.npu
        start, end = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
        start.record()
        self.launch()
        end.record()
        end.synchronize()
        self.times.append(start.elapsed_time(end) / 1e3)  # ms -> s

    def result(self):
        return self.answer or {"id": self.id, "times_s": self.times, "verified": True,
                               "max_abs_err": self.max_abs_err}


def guarded(candidate, timeout_s, step):
    """Runs one step of a candidate under its time limit; a failure becomes its answer."""
    if candidate.answer is not None:
        return
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        step()
    except CandidateTimeout:
        candidate.answer = {"id": candidate.id, "status": "timeout", "message": f"over its {timeout_s:g} s"}
    except Exception as e:  # the candidate's failure, not the runner's: the batch goes on
        candidate.answer = {"id": candidate.id, "status": "failed", "message": f"{type(e).__name__}: {e}"}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def measure(request, user_path):
    torch, _, pypto = import_device_modules()

    def on_alarm(signum, frame):
        raise CandidateTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    if not request["candidates"]:
        return []
    user = load_module("pto_tune_user_kernel", None, user_path) if user_path else None
    timeout_s = float(request["timeout_s"])
    # Every candidate's module declares the same TENSORS: the first one's serve the workload.
    workload = Workload(torch, request, user, load_module("pto_tune_workload", request["candidates"][0]["pypto"]))
    candidates = [Candidate(entry, torch, workload) for entry in request["candidates"]]
    for c in candidates:
        guarded(c, timeout_s, lambda: c.prepare(pypto, user))
        guarded(c, timeout_s, c.verify)
    warmup, rounds = request["warmup"], request["warmup"] + request["repeats"]
    # (candidate, round) in the order they run: rounds A B C A B C for finalists.
    order = ([(c, r) for r in range(rounds) for c in candidates] if request["interleaved"]
             else [(c, r) for c in candidates for r in range(rounds)])
    for c, r in order:
        guarded(c, timeout_s, c.time_once if r >= warmup else c.launch)
    return [c.result() for c in candidates]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default=os.environ.get("PTO_TUNE_KERNEL"),
                        help="your kernel module (default: $PTO_TUNE_KERNEL, else the emitted module's kernel)")
    args = parser.parse_args()
    request = json.load(sys.stdin)
    if request.get("protocol") != PROTOCOL or request.get("version", 0) > VERSION:
        sys.exit(f"measure_pypto.py: expected a {PROTOCOL} request of version {VERSION} at most, got "
                 f"{request.get('protocol')!r} version {request.get('version')!r}")
    results = measure(request, args.kernel)
    torch = sys.modules["torch"]
    device = f"npu:{torch.npu.current_device()} {torch.npu.get_device_name()}"
    print(json.dumps({"protocol": PROTOCOL, "version": VERSION, "device": device, "results": results}))


if __name__ == "__main__":
    main()
