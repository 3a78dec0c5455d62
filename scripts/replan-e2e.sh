#!/bin/bash
# Issue 15 check with real processes: 6 `swarm serve --blocks auto --planners` servers of
# different memory (1,1,2,2,3,3 blocks of stories260K) and emulated link delays (DELAYS, ms; the
# servers advertise them in their client RTT), joined small-first and slowest-first, 3 of them
# planner replicas. It prints the live spans against `swarm plan --algorithm cgbp` of
# `swarm status --fleet` every few seconds (per server: equal or not), the committed plan, and
# runs greedy generates through the registry during and after the moves, each compared with the
# local reference. Usage: make build && scripts/replan-e2e.sh (SWARM=path to the binary).
set -u
S=$(realpath "${SWARM:-bin/swarm}"); M=$(realpath "${SWARM_SHARED:-../shared}")/models/stories260K; D=$(mktemp -d /tmp/replan.XXXX); cd $D
REG="--heartbeat-interval 500ms --suspect-after 3s --left-after 10s --anti-entropy-interval 1s"
BLK=$(( 181760 + 512*256 ))  # s_m + s_c(512) of stories260K, R = 1
MEMS=(1 1 2 2 3 3)
DELAYS=(${DELAYS:-30 20 25 5 15 2})
ids=()
for i in 0 1 2 3 4 5; do $S identity --identity k$i.key > id$i 2>/dev/null; ids+=($(cat id$i)); done
PL="${ids[0]},${ids[1]},${ids[2]}"
PORT=47311
BOOT=/ip4/127.0.0.1/tcp/$PORT/p2p/${ids[0]}
start() { # i extra...
  local i=$1; shift
  $S serve --model $M/stories260K.bin --tokenizer $M/tok512.bin --blocks auto --memory $(( ${MEMS[$i]} * BLK )) \
    --target-sessions 1 --max-length 512 --listen 127.0.0.1:0 --identity k$i.key --planners $PL $REG \
    --emulate-latency ${DELAYS[$i]}ms "$@" > out$i 2> err$i &
  echo $! > pid$i
}
start 0 --p2p-listen /ip4/127.0.0.1/tcp/$PORT
sleep 4
for i in 1 2 3 4 5; do start $i --p2p-listen /ip4/127.0.0.1/tcp/0 --bootstrap $BOOT; sleep 3; done
T0=$(date +%s)
echo "all started; dir $D"
$S generate --local --model $M/stories260K.bin --tokenizer $M/tok512.bin --temperature 0 --max-tokens 200 > ref.txt 2>/dev/null
( # greedy generates through the registry while the planner moves servers, and after
  n=0; while [ $(( $(date +%s) - T0 )) -lt 45 ]; do
    n=$((n+1))
    if $S generate --bootstrap $BOOT --p2p-listen /ip4/127.0.0.1/tcp/0 --model $M/stories260K.bin --tokenizer $M/tok512.bin \
        --temperature 0 --max-tokens 200 > g$n.txt 2> g$n.err; then
      cmp -s g$n.txt ref.txt && echo "$(( $(date +%s) - T0 )) ok" || echo "$(( $(date +%s) - T0 )) WRONG"
    else echo "$(( $(date +%s) - T0 )) FAILED"; fi
  done > gens.txt ) &
GEN=$!
first=""
for t in 3 6 9 12 15 20 25 30 40 50; do
  sleep $(( t - ($(date +%s) - T0) > 0 ? t - ($(date +%s) - T0) : 0 ))
  $S status --bootstrap $BOOT $REG --fleet > fleet.json 2>/dev/null
  $S plan --config fleet.json --algorithm cgbp --json > plan.json 2>/dev/null
  eq=$(python3 - "$t" <<'PY'
import json,sys
f=json.load(open('fleet.json')); p=json.load(open('plan.json'))
live={s['name']:s['span'] for s in f['servers']}
target={s['name']:f"{s['start']}:{s['end']}" for s in p['servers']} if 'servers' in p else {}
same = len(live)==len(target) and all(live.get(k)==v for k,v in target.items())
pairs=" ".join(f"{k[-4:]}={live.get(k)}/{v}" for k,v in sorted(target.items()))
print(f"t={sys.argv[1]}s live/cgbp per server: {pairs} equal={same}", file=sys.stderr)
print("yes" if same else "no")
PY
)
  [ "$eq" = yes ] && [ -z "$first" ] && first=$t
done
wait $GEN
echo "live spans first equal to swarm plan --algorithm cgbp at t=${first:-never}s after the last join"
echo "generates through the registry during/after the moves: $(grep -c ok gens.txt) ok, $(grep -c WRONG gens.txt) wrong, $(grep -c FAILED gens.txt) failed"
$S status --bootstrap $BOOT $REG --planners $PL 2>/dev/null | tail -12
grep -h "replan: epoch committed\|moving\|move" err* | head -20
for i in 0 1 2 3 4 5; do kill $(cat pid$i) 2>/dev/null; done; wait
