"""A stand-in for torch_npu in pto-tune's test of examples/npu/measure_pypto.py: it
gives torch its `npu` namespace — events, synchronize, the device's name — over a fake
device clock that the stand-in pypto advances by each launch's (hidden) cost."""

from types import SimpleNamespace

import torch

_clock_s = [0.0]


def advance(seconds):
    """A launch on the fake device took `seconds`."""
    _clock_s[0] += seconds


class Event:
    def __init__(self, enable_timing=False):
        self.enable_timing, self.at = enable_timing, None

    def record(self, stream=None):
        self.at = _clock_s[0]

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        """Milliseconds from this event to `end`, as torch.npu.Event says them."""
        if not (self.enable_timing and end.enable_timing) or self.at is None or end.at is None:
            raise RuntimeError("elapsed_time needs two recorded events with enable_timing=True")
        return (end.at - self.at) * 1e3


torch.npu = SimpleNamespace(Event=Event, synchronize=lambda device=None: None, current_device=lambda: 0,
                            get_device_name=lambda device=None: "Ascend910B1 (stand-in)")
