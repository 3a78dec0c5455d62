#!/usr/bin/env bash
# The GPU issue's measurements, in one run, for a machine with an NVIDIA GPU
# and no Go. Build the binary here with
#   CGO_ENABLED=0 go build -ldflags "-s -w" -o bin/swarm ./cmd/swarm
# (57 MB; gzip it to carry it with the device tool, whose limit is 64 MiB),
# copy the checkout there with $SWARM_SHARED naming a copy of shared/ that
# holds models/stories260K, and run `bash scripts/gpu-check.sh` from its root.
#
# Steps, each with its own time limit so that one hang leaves the rest:
#   1. the driver and libraries found (nvidia-smi, ldconfig);
#   2. the parity harness: swarm doctor --device cuda (every architecture and
#      weight dtype, replay and batch bit-exactness, greedy stories260K);
#   3. a swarm of one GPU server and one CPU server, greedy against --local
#      (scripts/gpu-swarm-e2e.sh): stories260K and a synthesized model;
#   4. swarm bench server --device cuda on a synthesized 7B-shaped f16 span
#      of 2 blocks: the server's own per-block decode time at batch 1 .. 16
#      (tau_s, tau_batch) and the websocket throughput at concurrency 1, 4,
#      16, 64; then SWARM_CUDA_GEMM=mma against matvec, interleaved;
#   5. PyTorch's LlamaDecoderLayer on the same shape and dtype, batch 1 and
#      16 (scripts/torch_block_bench.py), and the HBM copy bandwidth;
#   6. per-kernel device times of the f16 span at batch 1 with Nsight
#      Compute, when `ncu` is installed (warm caches; each launch replayed,
#      so only the kernels' own times are meaningful), summarized by
#      scripts/ncu_kernel_times.py;
#   7. the same bench server on a 7B-shaped Q4_K block.
# Results go to $OUT (default /tmp/gpu-check): gpu-check.log (this script's
# whole output), doctor.json, bench-f16.json, ncu.csv, bench-q4k.json,
# torch.json and logs.tgz (every process's log).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-check}
SW=$(realpath "${SWARM:-bin/swarm}")
W=${WORK:-/tmp/gpu-work}
mkdir -p "$OUT" "$W"
exec > >(tee -a "$OUT/gpu-check.log") 2>&1
t0=$(date +%s)
step() { echo; echo "== [$(( $(date +%s) - t0 ))s] $*"; }

step "driver and libraries"
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version,clocks.max.sm,clocks.max.mem --format=csv 2>&1
ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libnvrtc\.so|libcublas\.so' | head -n 8
ls /usr/local/cuda/lib64 2>/dev/null | grep -E '^lib(nvrtc|cublas)\.so' | head -n 8

step "swarm doctor --device cuda"
SWARM_SHARED=${SWARM_SHARED:-shared} timeout 150 "$SW" doctor --device cuda --json > "$OUT/doctor.json" 2> "$W/doctor.log"
echo "doctor rc=$?"
grep -v ': PASS' "$W/doctor.log" | tail -n 40
python3 - "$OUT/doctor.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(f"no doctor JSON: {e}")
rows = d.get("results", [])
bad = [r for r in rows if not r.get("pass")]
print(f"doctor: {len(rows)} rows, {len(bad)} failing, pass={d.get('pass')}")
worst = {}
for r in rows:
    k = r["dtype"]
    worst[k] = max(worst.get(k, 0), r.get("max_rel_err", 0))
print("worst max_rel_err per dtype: " + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
for r in bad[:20]:
    print("FAIL", json.dumps(r)[:400])
g = d.get("greedy") or {}
print("greedy:", {k: g.get(k) for k in ("tokens", "first_diff", "pass", "skipped")})
PY

step "GPU + CPU swarm against --local"
export SWARM="$SW"
WORK="$W/e2e-stories" timeout 90 bash scripts/gpu-swarm-e2e.sh "${SWARM_SHARED:-shared}/models/stories260K/stories260K.gguf" 3
"$SW" model synth --arch llama --layers 4 --dim 256 --ffn 688 --heads 8 --kv-heads 4 --vocab 512 --dtype f16 \
  --formats gguf --out "$W/synth" > /dev/null 2>&1
WORK="$W/e2e-synth" timeout 90 bash scripts/gpu-swarm-e2e.sh "$W/synth/synth.gguf" 2 "hello world"

step "synthesize a 7B-shaped f16 span (d 4096, ffn 11008, 32 heads, 2 blocks)"
"$SW" model synth --layers 2 --dim 4096 --ffn 11008 --heads 32 --kv-heads 32 --vocab 32000 \
  --dtype f16 --formats gguf --out "$W/m7f16" 2>&1 | tail -n 1
step "swarm bench server --device cuda, f16 (the default products)"
SWARM_CUDA_PROFILE=${PROFILE:-} timeout 150 "$SW" bench server --device cuda --model "$W/m7f16/m7f16.gguf" --blocks 0:2 --concurrency 1,4,16,64 \
  --tokens 32 --prefill 512 --measure-cache "$W/measure" --json > "$OUT/bench-f16.json" 2> "$W/bench-f16.log"
echo "rc=$?"; grep -i 'device\|error' "$W/bench-f16.log" | head -n 5; grep -A 40 'cuda profile' "$W/bench-f16.log" | head -n 40
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps({k: r.get(k) for k in ("tau_s","tau_batch","results","prefill")}))' "$OUT/bench-f16.json" 2>/dev/null || tail -n 20 "$W/bench-f16.log"

step "SWARM_CUDA_GEMM=mma against matvec, f16, 3 interleaved rounds"
summary='import json,sys; d=json.load(sys.stdin); print("tau ms " + " ".join("b%d=%.4f" % (t["batch"], t["tau"]*1e3) for t in d["tau_batch"]) + " | tok/s " + " ".join("c%d=%.0f" % (r["concurrency"], r["aggregate_tok_s"]) for r in d["results"]) + " | prefill512 %.0f" % d["prefill"]["batched_tok_s"])'
for round in 1 2 3; do
  for v in mma matvec; do
    r=$(SWARM_CUDA_GEMM=$v timeout 90 "$SW" bench server --device cuda --model "$W/m7f16/m7f16.gguf" --blocks 0:2 \
      --concurrency 1,4,16,64 --tokens 32 --prefill 512 --measure-cache "$W/measure-$v-$round" --json 2> "$W/bench-$v-$round.log" \
      | python3 -c "$summary")
    echo "round $round $v: $r"
  done
done

step "PyTorch LlamaDecoderLayer, same shape, fp16, batch 1 and 16"
PYTHONUNBUFFERED=1 timeout 120 python3 scripts/torch_block_bench.py --batch 1,16 > "$OUT/torch.json" 2> "$W/torch.log"
echo "rc=$?"; cat "$OUT/torch.json"; tail -n 5 "$W/torch.log"

step "per-kernel device times (ncu), f16 span, batch 1"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)
if [ -n "$NCU" ]; then
  timeout 150 "$NCU" --cache-control none --clock-control none --csv \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size \
    -k 'regex:^(matvec_1|mma_8|rmsnorm|attention|rope|store_kv)$' --launch-skip 100 --launch-count 40 \
    "$SW" bench server --device cuda --model "$W/m7f16/m7f16.gguf" --blocks 0:2 --concurrency 1 \
    --tokens 8 --prefill 0 --measure-cache "$W/measure-ncu" > "$OUT/ncu.csv" 2> "$W/ncu.log"
  echo "rc=$?"
  python3 scripts/ncu_kernel_times.py "$OUT/ncu.csv" || tail -n 5 "$W/ncu.log"
else
  echo "ncu not found: skipped"
fi

step "7B-shaped Q4_K block"
rm -rf "$W/m7f16"
"$SW" model synth --layers 1 --dim 4096 --ffn 11008 --heads 32 --kv-heads 32 --vocab 32000 \
  --dtype q4_k --formats gguf --out "$W/m7q4k" 2>&1 | tail -n 1
timeout 100 "$SW" bench server --device cuda --model "$W/m7q4k/m7q4k.gguf" --blocks 0:1 --concurrency 1,16 \
  --tokens 32 --prefill 0 --measure-cache "$W/measure" --json > "$OUT/bench-q4k.json" 2> "$W/bench-q4k.log"
echo "rc=$?"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps({k: r.get(k) for k in ("tau_s","tau_batch","results")}))' "$OUT/bench-q4k.json" 2>/dev/null || tail -n 20 "$W/bench-q4k.log"

step "done"
tar czf "$OUT/logs.tgz" -C "$W" --exclude='*.gguf' --exclude='*.safetensors' . 2>/dev/null
