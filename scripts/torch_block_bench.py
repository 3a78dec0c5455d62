"""PyTorch's side of the GPU issue's block timing (run on a GPU machine).

Times one transformers LlamaDecoderLayer of a 7B shape (d_model 4096,
ffn 11008, 32 heads, fp16 on cuda) decoding one token per sequence for
batch sizes 1 and 16 after a cached context, with CUDA events: the median
of --iters steps after --warmup. Prints one JSON object:
{"torch": ..., "transformers": ..., "gpu": ..., "results": [{"batch": B,
"ms_per_step": ..., "weight_bytes": ..., "gb_s": ...}, ...]}, where gb_s is
the weight bytes over the step time, and "copy_gb_s", the HBM bandwidth a
device-to-device copy reaches (bytes read plus written): the bound swarm's
per-block decode time is put next to.
"""
import argparse
import inspect
import json
import statistics

import torch
import transformers
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", default="1,16", help="comma-separated batch sizes")
    p.add_argument("--context", type=int, default=64, help="cached positions before the timed step")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--iters", type=int, default=50)
    a = p.parse_args()

    cfg = LlamaConfig(hidden_size=4096, intermediate_size=11008, num_attention_heads=32,
                      num_key_value_heads=32, max_position_embeddings=4096, rms_norm_eps=1e-5)
    cfg._attn_implementation = "sdpa"
    dev, dt = torch.device("cuda"), torch.float16
    layer = LlamaDecoderLayer(cfg, layer_idx=0).to(dev, dt).eval()
    rope = LlamaRotaryEmbedding(cfg).to(dev)
    weight_bytes = sum(t.numel() * t.element_size() for t in layer.parameters())
    # PyTorch picks cuDNN's attention for these shapes on Hopper, which
    # builds a new plan for every new cache length (about 30-40 ms a step
    # here): the flash and memory-efficient kernels are what a decode loop
    # runs in practice.
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]
    # transformers renamed the cache argument (past_key_value before 4.56,
    # past_key_values after); passing the wrong one is swallowed by **kwargs.
    params = inspect.signature(layer.forward).parameters
    cache_arg = "past_key_values" if "past_key_values" in params else "past_key_value"
    results = []
    with torch.inference_mode(), sdpa_kernel(backends):
        for b in [int(s) for s in a.batch.split(",")]:
            # Without its config, transformers 5's DynamicCache leaves the
            # cuDNN attention re-planning on every step (about 30 ms).
            cache = (transformers.DynamicCache(config=cfg)
                     if "config" in inspect.signature(transformers.DynamicCache.__init__).parameters
                     else transformers.DynamicCache())
            x = torch.randn(b, a.context, cfg.hidden_size, device=dev, dtype=dt)
            pos = torch.arange(a.context, device=dev).unsqueeze(0).expand(b, -1)
            layer(x, position_ids=pos, use_cache=True, cache_position=torch.arange(a.context, device=dev),
                  position_embeddings=rope(x, pos), **{cache_arg: cache})
            base = cache.get_seq_length()
            n = a.warmup + a.iters
            # Inputs of every step made before the timing: the model computes
            # the rotary angles once per forward for all its layers.
            hs = torch.randn(n, b, 1, cfg.hidden_size, device=dev, dtype=dt)
            ps = [torch.full((b, 1), base + i, device=dev, dtype=torch.long) for i in range(n)]
            cps = [torch.tensor([base + i], device=dev) for i in range(n)]
            pes = [rope(hs[i], ps[i]) for i in range(n)]
            torch.cuda.synchronize()

            def step(i):
                layer(hs[i], position_ids=ps[i], use_cache=True, cache_position=cps[i],
                      position_embeddings=pes[i], **{cache_arg: cache})

            for i in range(a.warmup):
                step(i)
            times = []
            for i in range(a.warmup, n):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                step(i)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e))
            if cache.get_seq_length() != base + n:
                raise SystemExit(f"the layer did not use the cache: {cache.get_seq_length()} positions, want {base + n}")
            ms = statistics.median(times)
            results.append({"batch": b, "ms_per_step": ms, "weight_bytes": weight_bytes,
                            "gb_s": weight_bytes / (ms / 1e3) / 1e9})
        # HBM bandwidth as a device-to-device copy of 4 GiB moves it, bytes
        # read plus written: the bound the decode times are put next to.
        src = torch.empty(1 << 31, device=dev, dtype=torch.float16)
        dst = torch.empty_like(src)
        for _ in range(3):
            dst.copy_(src)
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            dst.copy_(src)
        e.record()
        torch.cuda.synchronize()
        copy_gb_s = 10 * 2 * src.numel() * src.element_size() / (s.elapsed_time(e) / 1e3) / 1e9
    print(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__,
                      "gpu": torch.cuda.get_device_name(0), "cache_arg": cache_arg, "copy_gb_s": copy_gb_s,
                      "results": results}))


if __name__ == "__main__":
    main()
