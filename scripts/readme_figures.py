#!/usr/bin/env python3
"""README's figures, read from the raw outputs in results/generated/ (issue 27, "honest
figures"): one row per headline figure with its value, its provenance (measured,
simulated or predicted), the results/ page that discusses it and the raw output it
comes from, whose head names the machine, the commit and the command that made it.

The table lives in README.md between the two marker comments below; this script
rewrites what lies between them, so that a figure changes only with its raw output.

  scripts/readme_figures.py            # rewrite README.md's table
  scripts/readme_figures.py --check    # exit 1 when README.md's table differs (ctest: readme_figures)

A figure that has no raw output here is not in the table: rerun its part of
results/run.sh (or the command its page names) into results/generated/ and add a row.
"""

import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "results" / "generated"
BEGIN = "<!-- figures: made by scripts/readme_figures.py from results/generated/; edit the script, not the table -->"
END = "<!-- figures: end -->"


class Missing(Exception):
    """A raw output lacks what a row reads from it."""


def raw(name):
    return (GENERATED / name).read_text()


def benchmark_counter(text, benchmark, counter):
    """A Google Benchmark counter (GFLOP/s=35.1/s, items_per_second=537k/s) of the line
    whose name starts with `benchmark`, in units (k and M expanded)."""
    for line in text.splitlines():
        if line.startswith(benchmark):
            m = re.search(re.escape(counter) + r"=([\d.]+)([kMG]?)/s", line)
            if m:
                return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]
    raise Missing(f"no {counter} for {benchmark}")


def markdown_table(text, first_header):
    """The header and the rows (lists of cells) of the first Markdown table whose header
    starts with `first_header`; a column is found by the first header cell of its name
    (a ranking table repeats top-1 and top-5 for each fit, uncalibrated first)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| " + first_header):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip("|").split("|")])
            return header, rows
    raise Missing(f"no table headed '{first_header}'")


def column(header, rows, name):
    i = header.index(name)
    return [r[i] for r in rows]


def tau(value):
    return float(value.strip("*"))


def validation_points(text):
    """pto-tune validate's points: name, published (measured) and simulated us."""
    points = {}
    for m in re.finditer(r"^(\S.*?)\s+ascend\w+\s+(?:exact|approximate)\s+([\d.]+)\s+([\d.]+)\s+[+-]?\d+%",
                         text, re.M):
        points[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    if not points:
        raise Missing("no validation points")
    return points


def cpu_matmul():
    text = raw("cpu_matmul.txt")
    ours = [benchmark_counter(text, f"runtime_matmul_fp32/{n}/threads:1/", "GFLOP/s") for n in (1024, 2048)]
    blas = [benchmark_counter(text, f"openblas_sgemm/{n}/threads:1/", "GFLOP/s") for n in (1024, 2048)]
    share = [100 * a / b for a, b in zip(ours, blas)]
    return ("CPU runtime fp32 matmul, one core, 1024³ / 2048³",
            f"{ours[0]:.1f} / {ours[1]:.1f} GFLOP/s ({share[0]:.0f} % / {share[1]:.0f} % of OpenBLAS sgemm)",
            "measured", "cpu_matmul.md", "cpu_matmul.txt")


def guide_matmul():
    points = validation_points(raw("validate.txt"))
    (pub, sim), (pub_l2, sim_l2) = points["PP/6144-rowmajor"], points["PP/6144-l2group"]
    return ("PyPTO guide's 6144³ fp16 matmul on the 910B1, row-major / 6×4 L2 groups",
            f"{sim / 1e3:.2f} / {sim_l2 / 1e3:.2f} ms (published {pub / 1e3:.1f} / {pub_l2 / 1e3:.1f} ms)",
            "simulated", "sim_calibration.md", "validate.txt")


def simulator_validation():
    points = validation_points(raw("validate.txt"))
    within = sum(abs(sim / pub - 1) <= 0.30 for pub, sim in points.values())
    errors = sorted(abs(sim / pub - 1) for pub, sim in points.values())
    return ("Simulator against published Ascend timings",
            f"{within} of {len(points)} points within ±30 %, median error {100 * statistics.median(errors):.0f} %",
            "simulated", "sim_validation.md", "validate.txt")


def simulator_speed():
    text = raw("sim_speed.txt")
    rates = [float(m.group(1)) for m in re.finditer(r"instr/s=([\d.]+)M/s", text)]
    if not rates:
        raise Missing("no instr/s")
    return ("Simulator speed, one core",
            f"{min(rates):.1f}–{max(rates):.1f} M simulated instructions/s",
            "measured", "sim_speed.md", "sim_speed.txt")


def cost_model_speed():
    rate = benchmark_counter(raw("cost_model.txt"), "Score/matmul_4096_fp16_median", "items_per_second")
    return ("Cost model: 4096³ matmul configs scored per second, one core",
            f"{rate / 1e6:.2f} M", "measured", "cost_model_speed.md", "cost_model.txt")


def ranking(name, what):
    """The uncalibrated ranking of a ranking_bench output; `what` names the suite from
    its {n} workloads, {held} of them held out."""
    header, rows = markdown_table(raw(name), "workload")
    mean = next(r for r in rows if r[0] == "**mean**")
    rows = [r for r in rows if r is not mean]
    taus = [tau(t) for t in column(header, rows, "tau uncal")]
    held = sum("(held out)" in w for w in column(header, rows, "workload"))
    return (what.format(n=len(rows), held=held),
            f"mean Kendall τ {tau(mean[header.index('tau uncal')]):.2f} ({min(taus):.2f}–{max(taus):.2f}), "
            f"top-1 / top-5 regret {mean[header.index('top-1')]} / {mean[header.index('top-5')]}, uncalibrated",
            "simulated", "cost_model_ranking.md", name)


def ranking_cpu(name, machine):
    header, rows = markdown_table(raw(name), "workload")
    taus = [tau(t) for t in column(header, rows, "tau uncal")]
    fitted = [tau(t) for t in column(header, rows, "tau leave-one-out fit")]
    configs = "/".join(sorted(set(column(header, rows, "n"))))
    return (f"Host cost model against CPU time, {machine}, {len(rows)} workloads × {configs} configs",
            f"Kendall τ {min(taus):.2f}–{max(taus):.2f} (mean {statistics.mean(taus):.2f}) uncalibrated, "
            f"mean {statistics.mean(fitted):.2f} fitted on the other workloads",
            "measured", "cost_model_ranking_cpu.md", name)


def int8_decode():
    """The tuned decode times of flash_attention_bench's JSON lines; each line's target
    is in the explain header that follows it."""
    lines = raw("flash_attention_decode.txt").splitlines()
    best = {}
    for i, line in enumerate(lines):
        if not line.startswith("{"):
            continue
        r = json.loads(line)
        target = next((m.group(1) for l in lines[i + 1:i + 3] if (m := re.search(r" on (ascend\w+),", l))), None)
        if r["shapes"] == "8,32,1,32768,128" and target:
            best[(target, "kv_dtype=int8" in r["attrs"])] = r["best_us_simulated"]
    try:
        b1, pr = best[("ascend910b1", True)], best[("ascend950pr", True)]
        b1_fp16, pr_fp16 = best[("ascend910b1", False)], best[("ascend950pr", False)]
    except KeyError as e:
        raise Missing(f"no decode tune for {e}") from None
    return ("flash_attention decode 8×32×1×32768×128 (GQA 4:1), int8 KV cache, 910B1 / 950PR",
            f"{b1 / 1e3:.2f} ms / {pr:.0f} us (fp16 KV: {b1_fp16:.0f} / {pr_fp16:.0f} us)",
            "simulated", "flash_attention.md", "flash_attention_decode.txt")


ROWS = [
    cpu_matmul,
    guide_matmul,
    simulator_validation,
    simulator_speed,
    cost_model_speed,
    lambda: ranking("ranking.txt", "Cost model against the simulator, {n} workloads on the 910B1"),
    lambda: ranking("ranking_flash_attention.txt",
                    "Cost model against the simulator, flash_attention at {n} shapes ({held} held out)"),
    lambda: ranking_cpu("ranking_cpu.txt", "Zen 3 VM (AVX2)"),
    lambda: ranking_cpu("zen5/ranking_cpu.txt", "Zen 5 VM (AVX-512)"),
    lambda: ranking_cpu("xeon-emr/ranking_cpu.txt", "Intel Xeon VM (family 6 model 207, AVX-512)"),
    int8_decode,
]


def table():
    lines = [BEGIN, "",
             "| figure | value | provenance | page | raw output |",
             "|---|---|---|---|---|"]
    for row in ROWS:
        what, value, provenance, page, source = row()
        lines.append(f"| {what} | {value} | {provenance} | [{page}](results/{page}) | "
                     f"[generated/{source}](results/generated/{source}) |")
    return "\n".join(lines + ["", END])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md's table differs")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    a = parser.parse_args()
    text = a.readme.read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        sys.exit(f"readme_figures: {a.readme} has no table between the markers\n  {BEGIN}\n  {END}")
    try:
        wanted = text[:start] + table() + text[end + len(END):]
    except (Missing, OSError) as e:
        sys.exit(f"readme_figures: {e}")
    if a.check:
        if wanted != text:
            sys.exit(f"readme_figures: {a.readme}'s figures differ from results/generated/; "
                     "run scripts/readme_figures.py")
        return
    if wanted != text:  # written whole or not at all, as the project writes its files
        tmp = a.readme.with_name(a.readme.name + ".tmp")
        tmp.write_text(wanted)
        os.replace(tmp, a.readme)


if __name__ == "__main__":
    main()
