#!/usr/bin/env bash
# A swarm of one GPU server and one CPU server on this machine (the GPU
# issue's end-to-end check): `swarm serve --device $GPU_DEVICE` hosts blocks
# 0:K of MODEL, `swarm serve --device cpu` hosts K:L, and a greedy
# `swarm generate --servers` through both is compared with
# `swarm generate --local` (every block on the CPU, in one process).
# Prints "e2e MODEL: identical" or "e2e MODEL: DIFFERENT" (with both id lists)
# and exits 0 only when identical.
#
# Usage: scripts/gpu-swarm-e2e.sh MODEL K [PROMPT]
# Environment: SWARM (binary, default bin/swarm), GPU_DEVICE (default cuda;
# cpu gives a dry run on a machine without a GPU), MAX_TOKENS (default 64),
# WORK (directory of the servers' logs, default a new temporary one).
set -uo pipefail
SW=$(realpath "${SWARM:-bin/swarm}")
MODEL=$1
K=$2
PROMPT=${3:-Once upon a time}
DEV=${GPU_DEVICE:-cuda}
N=${MAX_TOKENS:-64}
W=${WORK:-$(mktemp -d /tmp/gpu-e2e.XXXX)}
mkdir -p "$W"
L=$("$SW" model info --model "$MODEL" --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_blocks"])') || {
  echo "e2e $MODEL: cannot read the model's block count (swarm model info)"; exit 2; }
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
# serve NAME DEVICE SPAN: starts a server, waits for its URL (60 s), prints it.
serve() {
  "$SW" serve --model "$MODEL" --blocks "$3" --device "$2" --listen 127.0.0.1:0 --measure-cache "$W/measure-$1" \
    > "$W/$1.out" 2> "$W/$1.log" &
  pids+=($!)
  for _ in $(seq 600); do
    url=$(grep -o 'ws://[^ ]*' "$W/$1.out" 2>/dev/null | head -n 1)
    [ -n "$url" ] && { echo "$url"; return 0; }
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "e2e $MODEL: server $1 (--device $2 --blocks $3) did not start; its log:" >&2
  tail -n 20 "$W/$1.log" >&2
  return 1
}
gpu=$(serve gpu "$DEV" "0:$K") || exit 1
cpu=$(serve cpu cpu "$K:$L") || exit 1
grep -h 'device\|tau' "$W/gpu.log" | head -n 5
gen() { "$SW" generate --model "$MODEL" --prompt "$PROMPT" --temperature 0 --max-tokens "$N" --json "$@"; }
gen --servers "$gpu,$cpu" --stats > "$W/swarm.json" 2> "$W/swarm.err" || { echo "e2e $MODEL: generate through the swarm failed:"; tail -n 20 "$W/swarm.err"; exit 1; }
gen --local > "$W/local.json" 2> "$W/local.err" || { echo "e2e $MODEL: generate --local failed:"; tail -n 20 "$W/local.err"; exit 1; }
tail -n 4 "$W/swarm.err"
python3 - "$MODEL" "$W/swarm.json" "$W/local.json" "$DEV" "$K" "$L" <<'PY'
import json, sys
m, a, b, dev, k, l = sys.argv[1:]
sw, lo = json.load(open(a)), json.load(open(b))
same = sw["ids"] == lo["ids"]
print(f"e2e {m}: --device {dev} 0:{k} + cpu {k}:{l}, {len(sw['ids'])} greedy tokens: {'identical' if same else 'DIFFERENT'} to --local")
if not same:
    first = next((i for i, (x, y) in enumerate(zip(sw["ids"], lo["ids"])) if x != y), min(len(sw["ids"]), len(lo["ids"])))
    print(f"  first difference at token {first}\n  swarm: {sw['ids']}\n  local: {lo['ids']}")
print("  text: " + json.dumps(sw["text"][:200]))
sys.exit(0 if same else 1)
PY
