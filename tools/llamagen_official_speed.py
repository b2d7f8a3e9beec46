"""Times the official LlamaGen class-to-image generation on a KV Studio
LlamaGen bundle's weights, for the side-by-side CPU speed comparison in
docs/benchmarks.md.

The official code is not part of KV Studio: point --llamagen-repo at a checkout
of https://github.com/FoundationVision/LlamaGen. Its autoregressive/models/gpt.py
(the GPT and its static KV cache) and generate.py (`generate()`: prefill, then
one token per step, CFG as a doubled batch, top-k/top-p sampling) run
unchanged on the CPU; the only module they import that the generation never
uses (utils.drop_path, for training) is stubbed. The weights are the bundle's
GPT tensors, so both programs compute with the same numbers.

Prints one JSON object: the seconds of generate() (token loop only: the VQ
decoder is not run) and image tokens per second, which is what
`kvstudio-cli bench` reports as tokens/s.

Usage: llamagen_official_speed.py --llamagen-repo DIR --bundle DIR [--batch N]
       [--cfg F] [--top-k N] [--dtype f32|bf16] [--seed N] [--threads N]
"""
import argparse
import json
import os
import sys
import time
import types

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--llamagen-repo", required=True)
parser.add_argument("--bundle", required=True)
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--cfg", type=float, default=4.0)
parser.add_argument("--top-k", type=int, default=2000)
parser.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--threads", type=int, default=0)
args = parser.parse_args()
if args.threads > 0:
    torch.set_num_threads(args.threads)
dtype = torch.float32 if args.dtype == "f32" else torch.bfloat16

# utils.drop_path is imported by gpt.py for training-time stochastic depth
# (drop_path_rate 0 at inference); a stand-in module keeps the import working
# without the rest of the repository's utils.
drop_path = types.ModuleType("utils.drop_path")


class DropPath(torch.nn.Identity):
    def __init__(self, *_args, **_kwargs):
        super().__init__()


drop_path.DropPath = DropPath
utils_pkg = types.ModuleType("utils")
utils_pkg.drop_path = drop_path
sys.modules.setdefault("utils", utils_pkg)
sys.modules["utils.drop_path"] = drop_path
sys.path.insert(0, os.path.join(os.path.abspath(args.llamagen_repo), "autoregressive", "models"))
import gpt as official_gpt  # noqa: E402
import generate as official_generate  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bundle_safetensors import read_safetensors  # noqa: E402


manifest = json.load(open(os.path.join(args.bundle, "model.json")))
arch = manifest["architecture"]["gpt"]
config = official_gpt.ModelArgs(
    dim=arch["dim"], n_layer=arch["n_layer"], n_head=arch["n_head"], n_kv_head=arch["n_kv_head"],
    multiple_of=arch["multiple_of"], ffn_dim_multiplier=arch["ffn_dim_multiplier"], rope_base=arch["rope_base"],
    norm_eps=arch["norm_eps"], vocab_size=arch["vocab_size"], cls_token_num=arch["cls_token_num"],
    num_classes=arch["num_classes"], class_dropout_prob=arch["class_dropout_prob"], model_type=arch["model_type"],
    block_size=arch["block_size"])
model = official_gpt.Transformer(config)
weights = read_safetensors(os.path.join(args.bundle, manifest["files"]["weights"]))
state = {k[len("gpt."):]: v.to(torch.float32) for k, v in weights.items() if k.startswith("gpt.")}
missing, unexpected = model.load_state_dict(state, strict=False)
missing = [k for k in missing if "freqs_cis" not in k and "kv_cache" not in k and "causal_mask" not in k]
if missing or unexpected:
    sys.exit(f"weights do not match the official GPT: missing {missing}, unexpected {unexpected}")
model = model.to(dtype).eval()

torch.manual_seed(args.seed)
labels = torch.arange(args.batch) % config.num_classes
with torch.inference_mode():
    start = time.perf_counter()
    seq = official_generate.generate(model, labels, config.block_size, cfg_scale=args.cfg, temperature=1.0,
                                     top_k=args.top_k, top_p=1.0, sample_logits=True)
    seconds = time.perf_counter() - start
image_tokens = seq.numel()
print(json.dumps({
    "program": "official LlamaGen generate()", "bundle": manifest.get("name"), "dtype": args.dtype,
    "batch": args.batch, "cfg": args.cfg, "top_k": args.top_k, "threads": torch.get_num_threads(),
    "torch": torch.__version__, "seconds": round(seconds, 3), "image_tokens": image_tokens,
    "tokens_per_s": image_tokens / seconds}))
