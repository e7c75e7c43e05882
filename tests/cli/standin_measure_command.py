"""A stand-in measure command for tests/cli/measure_command_test.cpp: it answers the
measure protocol (docs/measure_protocol.md) from a hidden cost function, and misbehaves
the ways a real measurement command can.

    standin_measure_command.py STATE_DIR [--mischief]

The hidden cost is smallest at the cube tiles TARGET_TILES and grows with the squared
log2 distance of each tile size from them; a small term from the config's CRC breaks
ties, so exactly one config of any space is the best. Every candidate of every request
is logged to STATE_DIR/seen.jsonl with its hidden cost, so that the test knows the
best of the whole space the tuner searched.

With --mischief it misbehaves too, but never in the first request (the op's default
config, which the tuner must have measured) nor at a candidate on the TARGET_TILES (that
would hide the best from the tuner, which the test does not ask it to survive):
- per candidate, by its CRC: a "failed", "wrong_result" or "timeout" status, a
  negative time, a time that is not a number, or no answer at all;
- per batch, once each, on the first batches holding no TARGET_TILES candidate (calls
  counted in STATE_DIR/calls): output that is no JSON, a non-zero exit with a message on
  stderr, and a hang (a grandchild `sleep` whose pid goes to STATE_DIR/sleeper.pid, so
  that the test can check the whole process group was killed).
"""
import fcntl
import json
import math
import os
import subprocess
import sys
import time
import zlib

TARGET_TILES = {"m": [32, 64], "k": [16, 32], "n": [32, 64]}
BATCH_MISCHIEF = ["garbage", "exit", "hang"]


def canonical(config):
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def crc(config):
    return zlib.crc32(canonical(config).encode())


def tile_distance(config):
    cube = config.get("cube", {})
    distance = 0.0
    for name, wanted in TARGET_TILES.items():
        got = cube.get(name, [1])
        # k may be [kL0, kL1] or [kL0, kAL1, kBL1]: compare kL0 and the last L1 size.
        for a, b in ((got[0], wanted[0]), (got[-1], wanted[-1])):
            distance += (math.log2(a) - math.log2(b)) ** 2
    return distance


def hidden_cost_s(config):
    return 1e-4 * (1.0 + tile_distance(config) + (crc(config) % 1000) / 1e5)


def on_target(config):
    return tile_distance(config) == 0


def answer_for(candidate, repeats, mischievous):
    config = candidate["config"]
    cost = hidden_cost_s(config)
    entry = {"id": candidate["id"], "times_s": [cost] * repeats, "verified": True, "max_abs_err": 0.0}
    if on_target(config) or not mischievous:
        return entry
    mischief = crc(config) % 13
    if mischief == 0:
        return {"id": candidate["id"], "status": "failed", "message": "stand-in: kernel launch failed"}
    if mischief == 1:
        return {"id": candidate["id"], "status": "wrong_result", "message": "stand-in: max error 3.5"}
    if mischief == 2:
        return {"id": candidate["id"], "status": "timeout", "message": "stand-in: over its time"}
    if mischief == 3:
        entry["times_s"] = [-cost] * repeats
    if mischief == 4:
        entry["times_s"] = ["NaN"] * repeats
    if mischief == 5:
        return None
    return entry


def bump(state, name, limit=None):
    """The counter `name` in the state folder, then one more unless it reached `limit`.
    A batch's worker processes run this command at once: the read and the write happen
    under one lock, or a reader sees the file truncated by the other's write."""
    path = os.path.join(state, name)
    with open(os.path.join(state, "counters.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        value = int(open(path).read()) if os.path.exists(path) else 0
        if limit is None or value < limit:
            with open(path, "w") as f:
                f.write(str(value + 1))
        return value


def next_call(state):
    return bump(state, "calls")


def pending_batch_mischief(state):
    done = bump(state, "mischief_done", limit=len(BATCH_MISCHIEF))
    return BATCH_MISCHIEF[done] if done < len(BATCH_MISCHIEF) else None


def main():
    state = sys.argv[1]
    request = json.load(sys.stdin)
    assert request["protocol"] == "pto-tune-measure" and request["version"] == 1, request
    call = next_call(state)
    mischievous = sys.argv[2:] == ["--mischief"] and call > 0
    with open(os.path.join(state, "seen.jsonl"), "a") as log:
        for c in request["candidates"]:
            assert "set_cube_tile_shapes" in c["pypto"], c["pypto"]
            log.write(json.dumps({"config": canonical(c["config"]), "cost_s": hidden_cost_s(c["config"]),
                                  "interleaved": request["interleaved"]}) + "\n")
    if mischievous and not any(on_target(c["config"]) for c in request["candidates"]):
        mischief = pending_batch_mischief(state)
        if mischief == "garbage":
            print("Segmentation fault? no: just not JSON at all")
            return 0
        if mischief == "exit":
            print("stand-in: the device is busy", file=sys.stderr)
            return 3
        if mischief == "hang":
            sleeper = subprocess.Popen(["sleep", "300"])
            with open(os.path.join(state, "sleeper.pid"), "w") as f:
                f.write(str(sleeper.pid))
            time.sleep(300)
    results = [a for a in (answer_for(c, request["repeats"], mischievous) for c in request["candidates"]) if a is not None]
    print("stand-in: measured %d candidates" % len(results))  # a log line before the answer
    print(json.dumps({"protocol": "pto-tune-measure", "version": 1, "device": "stand-in:0", "results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
