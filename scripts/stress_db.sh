#!/usr/bin/env bash
# Stress of one tuning database (issue 31, "Done when"): TUNERS concurrent `pto-tune
# tune` loops (each a new shape per round, backends sim and model alternating) and
# READERS concurrent loops of `pto-tune lookup` and `db show`, for SECONDS. Then:
#   - errors: every process that exited non-zero (or by a signal), with its stderr;
#   - lost records: each tune's reported measurements (--json: candidates.measured, and
#     its best config and time) must be in the database, as rows of its workload.
#   scripts/stress_db.sh [SECONDS=120] [TUNERS=16] [READERS=16]
# PTO_TUNE (default build/cli/pto-tune) is the executable. Exit status 1 on any error or
# lost record. The figures go to stdout (results/robustness.md).
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
tuners=${2:-16}
readers=${3:-16}
bin=$(realpath "${PTO_TUNE:-build/cli/pto-tune}")
work=$(mktemp -d "${TMPDIR:-/tmp}/stress-db-XXXXXX")
db=$work/tune.db
export PTO_TUNE_HOME=$work/home
mkdir -p "$work/tuners" "$work/readers" "$PTO_TUNE_HOME"
deadline=$((SECONDS + seconds))

# One tuner: round r tunes shape (tuner, r); its JSON and stderr are kept per round.
tuner() {
  local t=$1 r=0
  while ((SECONDS < deadline)); do
    local backend=sim op shapes
    ((r % 2)) && backend=model
    if ((t % 2)); then op=softmax shapes="$((16 * (t + 1))),$((64 * (r + 1)))"
    else op=matmul shapes="$((16 * (t + 1))),$((32 * (r + 1))),64"; fi
    local out=$work/tuners/$t-$r
    "$bin" tune --op "$op" --shapes "$shapes" --target ascend910b1 --backend "$backend" --budget 6 \
        --json --db "$db" >"$out.json" 2>"$out.err"
    echo $? >"$out.rc"
    r=$((r + 1))
  done
}

# One reader: lookups of shapes being tuned, and db show, in turn.
reader() {
  local k=$1 i=0
  while ((SECONDS < deadline)); do
    local out=$work/readers/$k-$i
    if ((i % 2)); then
      "$bin" db show --db "$db" >/dev/null 2>"$out.err"
    else
      "$bin" lookup --strict --op matmul --shapes "$((16 * (k + 1))),$((32 * (i % 7 + 1))),64" --target ascend910b1 \
          --json --db "$db" >/dev/null 2>"$out.err"
    fi
    echo $? >"$out.rc"
    i=$((i + 1))
  done
}

# The database exists before the readers start (a reader of a file that is not there
# yet is an error by design, not a race).
"$bin" tune --op softmax --shapes 8,64 --target ascend910b1 --backend model --budget 2 --db "$db" >/dev/null
for ((t = 0; t < tuners; t++)); do tuner "$t" & done
for ((k = 0; k < readers; k++)); do reader "$k" & done
wait

python3 - "$work" "$db" <<'EOF'
import glob, json, os, sqlite3, sys
work, db = sys.argv[1], sys.argv[2]

def failures(folder):
    runs = glob.glob(f"{work}/{folder}/*.rc")
    bad = []
    for rc_file in runs:
        rc = open(rc_file).read().strip()
        if rc != "0":
            bad.append((rc_file[:-3], rc, open(rc_file[:-3] + ".err", errors="replace").read()[-300:]))
    return len(runs), bad

tunes, tune_errors = failures("tuners")
reads, read_errors = failures("readers")
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
lost, measured, rows_seen = [], 0, 0
for out in glob.glob(f"{work}/tuners/*.json"):
    if open(out[:-5] + ".rc").read().strip() != "0":
        continue
    r = json.load(open(out))
    measured += r["candidates"]["measured"]
    rows = c.execute("SELECT count(*) FROM measurements m JOIN workloads w ON w.id = m.workload_id "
                     "WHERE w.key = ? AND m.backend = ? AND m.target_fingerprint = ?",
                     (r["workload"], r["backend"], r["target_fingerprint"])).fetchone()[0]
    rows_seen += rows
    if rows < r["candidates"]["measured"]:
        lost.append(f"{out}: {r['candidates']['measured']} measured, {rows} rows")
    best_ns = r["best"][r["best"]["provenance"] + "_ns"]  # simulated_ns or predicted_ns, by backend
    best = c.execute("SELECT count(*) FROM measurements m JOIN workloads w ON w.id = m.workload_id "
                     "WHERE w.key = ? AND m.backend = ? AND m.median_ns = ?",
                     (r["workload"], r["backend"], best_ns)).fetchone()[0]
    if best == 0:
        lost.append(f"{out}: its best ({best_ns} ns) is not stored")
total = c.execute("SELECT count(*) FROM measurements").fetchone()[0]
print(f"tune runs: {tunes}, failed: {len(tune_errors)}")
print(f"reads (lookup --strict, db show): {reads}, failed: {len(read_errors)}")
print(f"measurements reported by the tunes: {measured}; rows of their workloads: {rows_seen}; rows in all: {total}")
print(f"lost: {len(lost)}")
for e in (tune_errors + read_errors)[:10]:
    print("error:", *e)
for l in lost[:10]:
    print("lost:", l)
sys.exit(1 if tune_errors or read_errors or lost else 0)
EOF
status=$?
"$bin" db check --db "$db" | tail -n 3 || status=1
echo "work folder: $work"
exit $status
