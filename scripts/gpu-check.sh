#!/usr/bin/env bash
# The GPU issue's measurements, for a machine with an NVIDIA GPU and no Go:
# build bin/swarm here with `CGO_ENABLED=0 go build -ldflags "-s -w" -o
# bin/swarm ./cmd/swarm` (57 MB; the device tool carries at most 64 MiB),
# copy the checkout there (with $SWARM_SHARED naming a copy of
# shared/models/stories260K for the greedy check), and run `bash
# scripts/gpu-check.sh` from its root. Results go to
# $OUT (default /tmp/gpu-check): nvidia-smi, the parity harness
# (`swarm doctor --device cuda`, every architecture and weight dtype, greedy
# stories260K when $SWARM_SHARED/models has it), and `swarm bench server`
# on a synthesized 7B-shaped f16 span of 4 blocks on the GPU and on the CPU,
# then PyTorch's LlamaDecoderLayer on the same shape (scripts/torch_block_bench.py).
# Nothing here has run on a GPU yet (see README, Limits).
set -uo pipefail
OUT=${OUT:-/tmp/gpu-check}
SW=${SWARM:-bin/swarm}
mkdir -p "$OUT"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed (see $OUT/nvidia-smi.txt)"

echo "== swarm doctor --device cuda"
timeout 300 "$SW" doctor --device cuda --json > "$OUT/doctor.json" 2> "$OUT/doctor.log"
echo "doctor rc=$? (tail of $OUT/doctor.log:)"; tail -n 30 "$OUT/doctor.log"

echo "== 7B-shaped span (d 4096, ffn 11008, f16, 4 blocks)"
"$SW" model synth --layers 4 --dim 4096 --ffn 11008 --heads 32 --kv-heads 32 --vocab 32000 \
  --dtype f16 --formats gguf --out "$OUT/m7" > "$OUT/synth.log" 2>&1 || { cat "$OUT/synth.log"; exit 1; }
model=$(ls "$OUT"/m7/*.gguf | head -n 1)
for dev in cuda cpu; do
  echo "== swarm bench server --device $dev"
  timeout 240 "$SW" bench server --device "$dev" --model "$model" --blocks 0:4 --concurrency 1,16 \
    --tokens 32 --prefill 512 --json > "$OUT/bench-$dev.json" 2> "$OUT/bench-$dev.log"
  echo "rc=$?"; cat "$OUT/bench-$dev.json"
done

echo "== PyTorch LlamaDecoderLayer, same shape, fp16, batch 1 and 16 (scripts/torch_block_bench.py)"
timeout 180 python3 scripts/torch_block_bench.py --batch 1,16 > "$OUT/torch.json" 2> "$OUT/torch.log"
echo "rc=$?"; cat "$OUT/torch.json"; tail -n 5 "$OUT/torch.log"
