"""examples/python/matmul_kernel.py runs without PyPTO: its kernel takes the tiles
pto_tune.lookup returns and calls the stand-in's setters with them."""

import os
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python", "matmul_kernel.py")


def run_example(*args):
    done = subprocess.run([sys.executable, EXAMPLE, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_tuned_kernel_sets_the_exact_hits_tiles(db):
    out = run_example("--db", db, "--tune", "--shape", "512,256,512")
    assert "config from exact:" in out
    calls = out.split("setter calls the kernel made:\n")[1].splitlines()
    assert len(calls) == 1 and calls[0].startswith("  pypto.set_cube_tile_shapes([")


def test_untuned_kernel_says_where_its_tiles_came_from(db):
    out = run_example("--db", db, "--shape", "512,256,512")
    assert "config from exact" not in out
    assert "pypto.set_cube_tile_shapes(" in out
