"""PyTorch's side of the GPU issue's block timing (run on a GPU machine).

Times one transformers LlamaDecoderLayer of a 7B shape (d_model 4096,
ffn 11008, 32 heads, fp16 on cuda) decoding one token per sequence for
batch sizes 1 and 16 after a cached context, with CUDA events: the median
of --iters steps after --warmup. Prints one JSON object:
{"torch": ..., "transformers": ..., "gpu": ..., "results": [{"batch": B,
"ms_per_step": ..., "weight_bytes": ..., "gb_s": ...}, ...]}, where gb_s is
the weight bytes over the step time (the HBM-bound figure swarm's
per-block decode time is put next to). Nothing here has run yet: this
machine has no GPU and no PyTorch (see README, Limits).
"""
import argparse
import json
import statistics

import torch
import transformers
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
    results = []
    with torch.inference_mode():
        for b in [int(s) for s in a.batch.split(",")]:
            cache = transformers.DynamicCache()
            x = torch.randn(b, a.context, cfg.hidden_size, device=dev, dtype=dt)
            pos = torch.arange(a.context, device=dev).unsqueeze(0).expand(b, -1)
            layer(x, position_ids=pos, past_key_value=cache, use_cache=True,
                  cache_position=torch.arange(a.context, device=dev), position_embeddings=rope(x, pos))
            base = cache.get_seq_length()

            def step(i):
                p_ = torch.full((b, 1), base + i, device=dev, dtype=torch.long)
                h = torch.randn(b, 1, cfg.hidden_size, device=dev, dtype=dt)
                layer(h, position_ids=p_, past_key_value=cache, use_cache=True,
                      cache_position=torch.tensor([base + i], device=dev), position_embeddings=rope(h, p_))

            for i in range(a.warmup):
                step(i)
            times = []
            for i in range(a.iters):
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                step(a.warmup + i)
                e.record()
                torch.cuda.synchronize()
                times.append(s.elapsed_time(e))
            ms = statistics.median(times)
            results.append({"batch": b, "ms_per_step": ms, "weight_bytes": weight_bytes,
                            "gb_s": weight_bytes / (ms / 1e3) / 1e9})
    print(json.dumps({"torch": torch.__version__, "transformers": transformers.__version__,
                      "gpu": torch.cuda.get_device_name(0), "results": results}))


if __name__ == "__main__":
    main()
