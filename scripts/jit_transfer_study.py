#!/usr/bin/env python3
"""Zero-shot quality of the JIT's lookup between tuned buckets (issue 29; results/jit_transfer.md).

For each family (an op with one dynamic dim, the others fixed: M of a matmul, softmax
or norm, the sequence M of a batch_matmul, the batch of a flash_attention decode), the
buckets of that dim up to the family's largest size make a bucket database: the powers
of two (--buckets pow2), tuned with `pto-tune batch`, or the sizes `pto-tune plan` chose
for a --max-loss bound (--buckets plan; a studied size that the plan made a bucket is
left out, it is not between buckets). The planner's buckets ship as the plan tuned and
checked them (--release plan-records: `pto-tune db merge` of their records from the
plan's database, without the sizes it tuned only to check them), or tuned again by
`pto-tune batch` into a database of their own (--release retune: the plan's tunes start
from the op's stored correction and a batch's do not, so these are other records than
the ones the plan checked). --replay makes the buckets of a recorded study again the
way it made them; then for each size between the buckets the script asks `pto-tune lookup` what
the JIT would serve from that database, simulates the served config and the op's
default with `pto-tune run`, and tunes the size itself (into a separate database, so
that the lookup never sees it) for the best a search finds. Everything is simulated
(ascend910b1, the sim backend) with one budget per tune.

    quality    = best / served time, best = the fastest of the tuned best, the default
                 and the served configs (1.0: the lookup served what a search finds)
    vs default = served time / default time (<= 1.01: never more than 1 % slower)
for each lookup margin in --margins (the lookup's --transfer-margin; "learned": none
given, so each family's margin is learned from its records; a "/raw" suffix ranks the
neighbours' configs without their measured lead errors, --no-lead-correction).

Usage:
    scripts/jit_transfer_study.py --pto-tune build/cli/pto-tune --work /tmp/jit_study \\
        --budget 32 --max-m 8192 > results/generated/jit_transfer.json
Progress goes to stderr; the JSON (per shape and the summary) to stdout.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

# (op, shapes with {} for the dynamic dim, its largest size, attrs): the buckets are
# the powers of two up to the largest size (--max-m caps it), the sizes studied those of
# BETWEEN below it.
FAMILIES = [
    ("matmul", "{},4096,4096", 8192, ""),
    ("matmul", "{},4096,11008", 8192, ""),
    ("matmul", "{},11008,4096", 8192, ""),
    ("softmax", "{},4096", 8192, ""),
    ("rmsnorm", "{},4096", 8192, ""),
    ("layernorm", "{},4096", 8192, ""),
    ("batch_matmul", "8,{},1024,1024", 8192, ""),          # 8 heads' scores, M = tokens
    ("flash_attention", "{},32,1,4096,128", 64, "kv_heads=8"),  # GQA decode, batch dynamic
]
BETWEEN = [3, 12, 48, 77, 300, 1000, 2500, 6000]  # sizes that no power of two is


def pto(args, tool):
    out = subprocess.run([tool] + args, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"pto-tune {' '.join(args)} failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def simulated_ns(tool, op, shapes, target, extra, config=None):
    args = ["run", "--op", op, "--shapes", shapes, "--target", target, "--backend", "sim", "--json"] + extra
    if config is not None:
        args += ["--config", json.dumps(config)]
    return json.loads(pto(args, tool))["time_ns"]


def plan(tool, a, op, template, largest, attrs, batch_file):
    """The buckets `pto-tune plan` chooses for one family; its batch file's lines go to `batch_file`."""
    name = f"{op}_{template.replace(',', '_').replace('{}', 'D')}"
    out = os.path.join(a.work, f"plan_{name}.txt")
    extra = ["--attrs", attrs] if attrs else []
    print(f"planning {op} {template.format(f'1..{largest}')}", file=sys.stderr)
    result = json.loads(pto(["plan", "--op", op, "--shapes", template.format(f"1..{largest}"), "--max-loss", a.max_loss,
                             "--target", a.target, "--backend", "sim", "--budget", str(a.budget), "--max-tunes",
                             str(a.max_tunes), "--db", os.path.join(a.work, "plan.db"), "--out", out, "--json"] + extra,
                            tool))
    print(f"  buckets {[b['size'] for b in result['buckets']]}, {result['tunes']} tunes, "
          f"bound met: {result['bound_met']}", file=sys.stderr)
    with open(out) as f:
        batch_file.write(f.read())
    return [b["size"] for b in result["buckets"]]


def served_rows(tool, a, op, shapes, attrs, buckets_db, margins):
    """What the lookup serves `shapes` from the bucket database under each margin, simulated."""
    extra = ["--attrs", attrs] if attrs else []
    row = {}
    for margin in margins:
        value, _, raw = margin.partition("/")
        given = ([] if value == "learned" else ["--transfer-margin", value]) + (["--no-lead-correction"] if raw else [])
        served = json.loads(pto(["lookup", "--op", op, "--shapes", shapes, "--target", a.target, "--backend", "sim",
                                 "--db", buckets_db, "--json"] + given + extra, tool))
        row[margin] = {"source": served["source"], "reason": served.get("reason", ""),
                       "served_ns": simulated_ns(tool, op, shapes, a.target, extra, served["config"])}
    return row


def scored(row, margins):
    """`row` with its best and each margin's quality and ratio to the default."""
    # The best config anyone measured for the shape (the tuner never loses to the default).
    row["best_ns"] = min([row["tuned_ns"], row["default_ns"]] + [row[x]["served_ns"] for x in margins])
    for margin in margins:
        row[margin]["quality"] = row["best_ns"] / row[margin]["served_ns"]
        row[margin]["vs_default"] = row[margin]["served_ns"] / row["default_ns"]
    print(f"{row['op']} {row['shapes']}: " + ", ".join(
        f"margin {x}: {row[x]['source']} quality {row[x]['quality']:.3f} vs default {row[x]['vs_default']:.3f}"
        for x in margins), file=sys.stderr)
    return row


def summarized(rows, margins, a, buckets):
    summary = {"shapes": len(rows), "budget": a.budget, "max_m": a.max_m, "target": a.target,
               "buckets": buckets, "margins": {}}
    if a.replay:
        with open(a.replay) as f:
            summary.update({k: v for k, v in json.load(f)["summary"].items() if k in ("release", "max_loss", "max_tunes")})
    elif a.buckets == "plan":
        summary.update({"release": a.release, "max_loss": a.max_loss, "max_tunes": a.max_tunes})
    else:
        summary["release"] = "retune"
    for margin in margins:
        q = [r[margin]["quality"] for r in rows]
        summary["margins"][margin] = {
            "geomean_quality": math.exp(sum(math.log(x) for x in q) / len(q)),
            "worst_quality": min(q),
            "under_0.95": sum(x < 0.95 for x in q),
            "slower_than_default_by_1pct": sum(r[margin]["vs_default"] > 1.01 for r in rows),
            "transfers": sum(r[margin]["source"] == "transfer" for r in rows),
        }
    return summary


def misses(summary, rows, margin, a):
    """Where the first margin's figures miss the targets (--min-geomean, --min-quality, at most 1 % slower
    than the default)."""
    first = summary["margins"][margin]
    found = []
    if first["slower_than_default_by_1pct"] > 0:
        found.append(f"{first['slower_than_default_by_1pct']} served more than 1 % slower than the default")
    if first["geomean_quality"] < a.min_geomean:
        found.append(f"geomean quality {first['geomean_quality']:.4f}, under {a.min_geomean}")
    for r in rows:
        if r[margin]["quality"] < a.min_quality:
            found.append(f"{r['op']} {r['shapes']}: quality {r[margin]['quality']:.4f}, under {a.min_quality}")
    return found


def study_rows(tool, a, buckets_db, margins):
    """Tunes the buckets (powers of two or the planner's), then each size between them."""
    best_db, batch = os.path.join(a.work, "best.db"), os.path.join(a.work, "buckets.txt")
    wanted = [w for w in a.families.split(",") if w]
    families = [(op, shapes, min(largest, a.max_m), attrs) for op, shapes, largest, attrs in FAMILIES
                if not wanted or any(w in f"{op} {shapes}" for w in wanted)]
    buckets = {}  # (op, template) -> the sizes tuned
    with open(batch, "w") as f:
        for op, shapes, largest, attrs in families:
            if a.buckets == "pow2":
                f.write(f"{op} {shapes.format(f'1..{largest}:pow2')} fp16 {attrs}\n")
                buckets[op, shapes] = [1 << i for i in range(largest.bit_length())]
            else:
                buckets[op, shapes] = plan(tool, a, op, shapes, largest, attrs, f)
    fill_bucket_db(tool, a, batch, buckets_db, a.buckets == "plan" and a.release == "plan-records")
    rows = []
    for op, template, largest, attrs in families:
        for m in [m for m in BETWEEN if m < largest and m not in buckets[op, template]]:
            shapes = template.format(m)
            extra = ["--attrs", attrs] if attrs else []
            tuned = json.loads(pto(["tune", "--op", op, "--shapes", shapes, "--target", a.target, "--backend", "sim",
                                    "--budget", str(a.budget), "--db", best_db, "--json"] + extra, tool))
            row = {"op": op, "shapes": shapes, "attrs": attrs,
                   "default_ns": simulated_ns(tool, op, shapes, a.target, extra),
                   "tuned_ns": tuned["best"]["simulated_ns"]}
            row.update(served_rows(tool, a, op, shapes, attrs, buckets_db, margins))
            rows.append(scored(row, margins))
    return rows, {f"{op} {template}": sizes for (op, template), sizes in buckets.items()}


def replay_rows(tool, a, buckets_db, margins):
    """Makes the buckets a study recorded (--replay) again, as it made them, and asks the lookup again for each
    of its shapes, scored against the best the study's tunes found. Planner buckets shipped as the plan's
    records are planned again (the same buckets, or the replay says how they differ); others are tuned again."""
    with open(a.replay) as f:
        recorded = json.load(f)
    summary = recorded["summary"]
    a.budget, a.max_m, a.target = (summary[k] for k in ("budget", "max_m", "target"))
    plan_records = summary.get("release") == "plan-records"
    if plan_records:
        a.max_loss, a.max_tunes = summary["max_loss"], summary["max_tunes"]
    attrs_of = {(op, template): attrs for op, template, _, attrs in FAMILIES}
    batch = os.path.join(a.work, "buckets.txt")
    with open(batch, "w") as f:
        for family, sizes in summary["buckets"].items():
            op, template = family.split(" ")
            if plan_records:
                planned = plan(tool, a, op, template, max(sizes), attrs_of[op, template], f)
                if planned != sizes:
                    sys.exit(f"replay: the plan of {family} chose {planned}, the study {sizes}")
            else:
                for size in sizes:
                    f.write(f"{op} {template.format(size)} fp16 {attrs_of[op, template]}\n")
    fill_bucket_db(tool, a, batch, buckets_db, plan_records)
    rows = []
    for old in recorded["shapes"]:
        op, shapes, attrs = old["op"], old["shapes"], old["attrs"]
        extra = ["--attrs", attrs] if attrs else []
        row = {"op": op, "shapes": shapes, "attrs": attrs, "default_ns": simulated_ns(tool, op, shapes, a.target, extra),
               "tuned_ns": old["best_ns"]}
        row.update(served_rows(tool, a, op, shapes, attrs, buckets_db, margins))
        rows.append(scored(row, margins))
    return rows, summary["buckets"]


def fill_bucket_db(tool, a, batch, buckets_db, plan_records):
    """The buckets of `batch` into `buckets_db`: their records merged from the plan's database (`plan_records`),
    else tuned there with `pto-tune batch`."""
    if not plan_records:
        return tune_buckets(tool, a, batch, buckets_db)
    print(f"merging the buckets' records from the plan's database ({batch})", file=sys.stderr)
    pto(["db", "merge", os.path.join(a.work, "plan.db"), "--workloads", batch, "--into", buckets_db], tool)


def tune_buckets(tool, a, batch, buckets_db):
    print(f"tuning the buckets ({batch})", file=sys.stderr)
    pto(["batch", batch, "--target", a.target, "--backend", "sim", "--budget", str(a.budget), "--db", buckets_db], tool)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pto-tune", default="build/cli/pto-tune")
    p.add_argument("--work", default="", help="folder for the databases and the batch file (default: a temporary one)")
    p.add_argument("--target", default="ascend910b1")
    p.add_argument("--budget", type=int, default=32, help="measurements per tune (buckets and the sizes between)")
    p.add_argument("--max-m", type=int, default=8192, help="the largest M: buckets are the powers of two up to it")
    p.add_argument("--margins", default="learned,learned/raw,0",
                   help="the lookup's --transfer-margin values to compare; learned: none given (each op's own)")
    p.add_argument("--buckets", choices=["pow2", "plan"], default="pow2",
                   help="the buckets: the powers of two, or those `pto-tune plan` chooses for --max-loss")
    p.add_argument("--max-loss", default="2%", help="with --buckets plan: the plan's bound")
    p.add_argument("--release", choices=["plan-records", "retune"], default="plan-records",
                   help="with --buckets plan: ship the buckets' records the plan made and checked, or tune the "
                        "buckets again into a fresh database")
    p.add_argument("--max-tunes", type=int, default=40, help="with --buckets plan: its tune limit per family")
    p.add_argument("--families", default="",
                   help="only the families whose 'op shapes' contain one of these comma-separated words, e.g. batch_matmul")
    p.add_argument("--replay", default="",
                   help="a study's JSON output: tune its buckets again and score what the lookup serves its shapes "
                        "against the best its tunes found (target, budget and buckets from the file; no tunes "
                        "between buckets, no planning)")
    p.add_argument("--check", action="store_true",
                   help="exit 1 when a served config is more than 1 %% slower than the default, or the first margin's "
                        "geomean quality is under --min-geomean or a shape's under --min-quality")
    p.add_argument("--min-geomean", type=float, default=0.99, help="with --check (the issue's target: 0.99)")
    p.add_argument("--min-quality", type=float, default=0.95, help="with --check, each shape (the issue's target: 0.95)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        a.work = a.work or scratch
        os.makedirs(a.work, exist_ok=True)
        buckets_db, margins = os.path.join(a.work, "buckets.db"), a.margins.split(",")
        rows, buckets = (replay_rows if a.replay else study_rows)(a.pto_tune, a, buckets_db, margins)
    summary = summarized(rows, margins, a, buckets)
    json.dump({"summary": summary, "shapes": rows}, sys.stdout, indent=1)
    print()
    if a.check:
        found = misses(summary, rows, margins[0], a)
        for miss in found:
            print(f"check failed, margin {margins[0]}: {miss}", file=sys.stderr)
        sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
