#!/usr/bin/env bash
# flash_attention at LLM sizes on ascend910b1 (results/flash_attention.md), all simulated:
#   1. each workload tuned (sim backend, auto strategy), with its wall time;
#   2. the winner explained by the cost model: the bound it names; decode with an fp16 and
#      an int8 KV cache, also on ascend950pr (whose Cube reads the vector units' UB directly);
#   3. the tuned unfused `attention` at 1,32,2048,128 beside the fused op at the same size;
#   4. at the published PI-fa points (ascend910b2, B=H=1, D=128): the kernel's own tiling
#      (tests/data/ascend_measurements.json) simulated, then the tuner's winner.
# Usage: bench/flash_attention_bench.sh [PTO_TUNE_BINARY]   (default build/cli/pto-tune)
#   PARTS="prefill decode attention published" picks parts.
set -euo pipefail
bin=${1:-build/cli/pto-tune}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
target=ascend910b1
parts=${PARTS:-prefill decode attention published}
wanted() { [[ " $parts " == *" $1 "* ]]; }

# tune_one OP SHAPES ATTRS: tunes, prints the JSON line of the result and the winner's explanation.
tune_one() {
  local op=$1 shapes=$2 attrs=$3
  local args=(--op "$op" --shapes "$shapes" --target "$target" --db "$dir/tune.db" --json)
  [[ -n $attrs ]] && args+=(--attrs "$attrs")
  local start end
  start=$(date +%s.%N)
  "$bin" tune "${args[@]}" >"$dir/result.json"
  end=$(date +%s.%N)
  python3 - "$dir/result.json" "$op" "$shapes" "$attrs" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
best, default = r["best"], r.get("default", {})
print(json.dumps({"op": sys.argv[2], "shapes": sys.argv[3], "attrs": sys.argv[4],
                  "tune_wall_s": round(float(sys.argv[6]) - float(sys.argv[5]), 1),
                  "best_us_simulated": round(best["simulated_ns"] / 1e3, 3),
                  "default_us_simulated": round(default["simulated_ns"] / 1e3, 3) if default.get("simulated_ns") else None,
                  "config": best["config"]}))
PY
  local explain=(--op "$op" --shapes "$shapes" --target "$target" --config "$(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["best"]["config"]))' "$dir/result.json")")
  [[ -n $attrs ]] && explain+=(--attrs "$attrs")
  "$bin" explain "${explain[@]}" | sed 's/^/    /'
  echo
}

if wanted prefill; then
  for s in 2048 8192 32768; do
    for causal in 0 1; do tune_one flash_attention "1,32,$s,$s,128" "causal=$causal"; done
  done
fi
if wanted decode; then
  for target in ascend910b1 ascend950pr; do
    tune_one flash_attention 8,32,1,32768,128 kv_heads=8
    tune_one flash_attention 8,32,1,32768,128 kv_heads=8,kv_dtype=int8
  done
  target=ascend910b1
fi
if wanted attention; then tune_one attention 1,32,2048,128 ""; fi
if wanted published; then
  published=$(python3 -c 'import json; print(json.dumps(next(r["config"] for r in json.load(open("tests/data/ascend_measurements.json"))["records"] if r["id"] == "PI-fa/910B2-1024")))')
  target=ascend910b2
  for shapes in 1,1,1024,1024,128 1,1,4096,4096,128 1,1,32768,32768,128 1,1,128,8192,128 1,1,2048,8192,128; do
    echo "published tiling at $shapes: $("$bin" run --op flash_attention --shapes "$shapes" --target "$target" --config "$published" | grep '^time')"
    tune_one flash_attention "$shapes" ""
  done
fi
