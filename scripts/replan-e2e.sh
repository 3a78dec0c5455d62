#!/bin/bash
# Issue 15 check with real processes: 6 `swarm serve --blocks auto --planners` servers of
# different memory (1,1,2,2,3,3 blocks of stories260K) joined small-first, 3 of them planner
# replicas; prints the live spans against `swarm plan --algorithm cgbp` of `swarm status --fleet`
# every few seconds, the committed plan, and whether a greedy generate through the swarm equals
# the local reference. Usage: make build && scripts/replan-e2e.sh (SWARM=path to the binary).
set -u
S=$(realpath "${SWARM:-bin/swarm}"); M=$(realpath "${SWARM_SHARED:-../shared}")/models/stories260K; D=$(mktemp -d /tmp/replan.XXXX); cd $D
REG="--heartbeat-interval 500ms --suspect-after 3s --left-after 10s --anti-entropy-interval 1s"
BLK=$(( 181760 + 512*256 ))  # s_m + s_c(512) of stories260K, R = 1
MEMS=(1 1 2 2 3 3)
ids=()
for i in 0 1 2 3 4 5; do $S identity --identity k$i.key > id$i 2>/dev/null; ids+=($(cat id$i)); done
PL="${ids[0]},${ids[1]},${ids[2]}"
PORT=47311
BOOT=/ip4/127.0.0.1/tcp/$PORT/p2p/${ids[0]}
start() { # i extra...
  local i=$1; shift
  $S serve --model $M/stories260K.bin --tokenizer $M/tok512.bin --blocks auto --memory $(( ${MEMS[$i]} * BLK )) \
    --target-sessions 1 --max-length 512 --listen 127.0.0.1:0 --identity k$i.key --planners $PL $REG "$@" > out$i 2> err$i &
  echo $! > pid$i
}
start 0 --p2p-listen /ip4/127.0.0.1/tcp/$PORT
sleep 4
for i in 1 2 3 4 5; do start $i --p2p-listen /ip4/127.0.0.1/tcp/0 --bootstrap $BOOT; sleep 3; done
T0=$(date +%s)
echo "all started; dir $D"
for t in 5 10 15 20 25 30 40 50 60; do
  sleep $(( t - ($(date +%s) - T0) > 0 ? t - ($(date +%s) - T0) : 0 ))
  $S status --bootstrap $BOOT $REG --fleet > fleet.json 2>/dev/null
  $S plan --config fleet.json --algorithm cgbp --json > plan.json 2>/dev/null
  python3 - "$t" <<'PY'
import json,sys
f=json.load(open('fleet.json')); p=json.load(open('plan.json'))
live={s['name']:s['span'] for s in f['servers']}
target={s['name']:f"{s['start']}:{s['end']}" for s in p['servers']} if 'servers' in p else {}
same = all(live.get(k)==v for k,v in target.items()) and len(live)==len(target)
print(f"t={sys.argv[1]}s live={sorted(live.values())} cgbp={sorted(target.values())} equal={same}")
PY
done
$S status --bootstrap $BOOT $REG --planners $PL 2>/dev/null | tail -12
$S generate --bootstrap $BOOT --p2p-listen /ip4/127.0.0.1/tcp/0 --model $M/stories260K.bin --tokenizer $M/tok512.bin --temperature 0 --max-tokens 200 > gen.txt 2> generr.txt; echo "generate exit $?"
$S generate --local --model $M/stories260K.bin --tokenizer $M/tok512.bin --temperature 0 --max-tokens 200 > ref.txt 2>/dev/null
cmp -s gen.txt ref.txt && echo "generate through the moved swarm == local reference" || echo "generate DIFFERS from local"
grep -h "replan: epoch committed\|moving\|move" err* | head -20
for i in 0 1 2 3 4 5; do kill $(cat pid$i) 2>/dev/null; done; wait
