"""Times the official Lumina-mGPT generation loop on a KV Studio Lumina-mGPT
bundle's weights, for the side-by-side speed comparison in docs/benchmarks.md.

The official code is not part of KV Studio: point --lumina-repo at a checkout
of https://github.com/Alpha-VLLM/Lumina-mGPT. Its model (the vendored
Chameleon, lumina_mgpt/model/chameleon) and its solver's three logits
processors (inference_solver.py: CFG, the image-token constraint, interleaved
top-k) run unchanged through transformers' `generate`, exactly as
FlexARInferenceSolver.generate calls it, on the CPU:
  - the solver is given its model and a small stand-in for its item processor
    (token2id and the four token names the processors ask for), so that no
    tokenizer is downloaded and no Chameleon VQGAN loaded;
  - the processors' `device="cuda"` tensors are placed on the CPU (a
    TorchFunctionMode changes the device argument only);
  - the prompt is KV Studio's ids of the official template (lumina_prompt.h),
    and the image header (<racm3:break>, the two grid tokens) is appended to
    it: an untrained model does not write the header itself, and with it in
    the prompt the official processors start CFG and the constraint at the
    first generated token, as after a sampled header. Generation stops after
    <eoss> (max_new_tokens = the body + 1), so what is timed is the image body,
    H rows of W + 1 tokens, which is what `kvstudio-cli bench` reports as
    tokens/s.

Prints one JSON object.

Needs, besides torch: transformers==4.43.3 and numpy
(`.venv/bin/python -m pip install --target DIR transformers==4.43.3 numpy pillow`,
PYTHONPATH=DIR).

Usage: lumina_official_speed.py --lumina-repo DIR --bundle DIR [--dtype f32|bf16]
       [--size WxH] [--cfg F] [--top-k N] [--seed N] [--threads N]
"""
import argparse
import contextlib
import json
import os
import sys
import time
import types

import torch
from torch.overrides import TorchFunctionMode

parser = argparse.ArgumentParser()
parser.add_argument("--lumina-repo", required=True)
parser.add_argument("--bundle", required=True)
parser.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
parser.add_argument("--size", default="")
parser.add_argument("--cfg", type=float, default=4.0)
parser.add_argument("--top-k", type=int, default=2000)
parser.add_argument("--prompt", default="A close-up photo of a red fox in fresh snow, soft morning light")
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--threads", type=int, default=0)
args = parser.parse_args()
if args.threads > 0:
    torch.set_num_threads(args.threads)
dtype = torch.float32 if args.dtype == "f32" else torch.bfloat16

manifest = json.load(open(os.path.join(args.bundle, "model.json")))
arch = manifest["architecture"]["chameleon"]
size = args.size or f"{arch['image_size']}x{arch['image_size']}"
width, height = (int(v) for v in size.lower().split("x"))

repo = os.path.join(os.path.abspath(args.lumina_repo), "lumina_mgpt")
sys.path.insert(0, repo)
# inference_solver imports the item processor at module level; the timing never
# uses it (its tokenizer comes from the hub), so a stand-in module takes its place.
data_pkg = types.ModuleType("data")
data_pkg.__path__ = []
item_module = types.ModuleType("data.item_processor")
item_module.FlexARItemProcessor = object
sys.modules["data"], sys.modules["data.item_processor"] = data_pkg, item_module
import transformers  # noqa: E402
from inference_solver import FlexARInferenceSolver  # noqa: E402
from model.chameleon import ChameleonConfig, ChameleonForConditionalGeneration  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bundle_safetensors import read_safetensors  # noqa: E402

tok = json.load(open(os.path.join(args.bundle, "tokenizer", "tokenizer.json"), encoding="utf-8"))
vocab = dict(tok["model"]["vocab"])
for added in tok.get("added_tokens", []):
    vocab[added["content"]] = added["id"]

config = ChameleonConfig(
    vocab_size=arch["vocab_size"], hidden_size=arch["hidden_size"], intermediate_size=arch["intermediate_size"],
    num_hidden_layers=arch["num_hidden_layers"], num_attention_heads=arch["num_attention_heads"],
    num_key_value_heads=arch["num_key_value_heads"], max_position_embeddings=arch["max_position_embeddings"],
    rms_norm_eps=arch["rms_norm_eps"], rope_theta=arch["rope_theta"],
    model_parallel_size=arch["model_parallel_size"], swin_norm=arch["swin_norm"], vocabulary_map=vocab,
    mask_image_logits=False, attn_implementation="sdpa")
# Built on the meta device and given the bundle's tensors (assign): no time goes
# into initialising weights that are replaced anyway. The rotary tables are
# non-persistent buffers, rebuilt on the CPU.
with torch.device("meta"):
    model = ChameleonForConditionalGeneration(config)
weights = {k: v.to(dtype) for k, v in read_safetensors(os.path.join(args.bundle, "weights.safetensors")).items()
           if not k.startswith("vqgan.")}
result = model.load_state_dict(weights, strict=False, assign=True)
missing = [k for k in result.missing_keys if not k.startswith("model.vqmodel.")]
if result.unexpected_keys or missing:
    sys.exit(f"weights do not fit the official model: missing {missing[:5]}, unexpected {result.unexpected_keys[:5]}")
model.model.vqmodel = None  # the HF model's VQ encoder: never used by generation
for layer in model.model.layers:
    rotary = layer.self_attn.rotary_emb
    layer.self_attn.rotary_emb = type(rotary)(rotary.dim, max_position_embeddings=rotary.max_position_embeddings,
                                              base=rotary.base, device="cpu")
model = model.eval()


class CudaToCpu(TorchFunctionMode):
    """The processors build their masks with device="cuda": placed on the CPU."""

    def __torch_function__(self, func, types_, a=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if str(kwargs.get("device", "")).startswith("cuda"):
            kwargs["device"] = "cpu"
        return func(*a, **kwargs)


class ItemProcessor:
    image_start_token, image_end_token, new_line_token = "<racm3:break>", "<eoss>", "<reserved08799>"

    @staticmethod
    def token2id(name):
        return vocab[name]


solver = object.__new__(FlexARInferenceSolver)
solver.model, solver.dtype, solver.item_processor = model, dtype, ItemProcessor

# KV Studio's prompt ids (BOS, the template, <reserved08706>), through the
# bundle's tokenizer with the transformers fast tokenizer the official code uses.
from transformers import PreTrainedTokenizerFast  # noqa: E402

hf_tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(args.bundle, "tokenizer", "tokenizer.json"))
text = f"Generate an image of {width}x{height} according to the following prompt:\n{args.prompt}<reserved08706>"
prompt = [0] + hf_tok.encode(text, add_special_tokens=False)
header = [vocab["<racm3:break>"], 8804 + height // 32, 8804 + width // 32]
rows, cols = 2 * (height // 32), 2 * (width // 32)
body = rows * (cols + 1)
ids = torch.tensor([prompt + header], dtype=torch.int64)

with CudaToCpu():
    processors = solver.create_logits_processor(cfg=args.cfg, image_top_k=args.top_k, text_top_k=10)
generation_config = transformers.GenerationConfig(
    max_new_tokens=body + 1, max_length=config.max_position_embeddings, temperature=1.0, top_k=None,
    do_sample=True, eos_token_id=[8710])
torch.manual_seed(args.seed)
# The CFG processor prints a line per image row: to stderr, so that stdout holds the JSON alone.
with torch.no_grad(), CudaToCpu(), contextlib.redirect_stdout(sys.stderr):
    t0 = time.perf_counter()
    out = model.generate(ids, generation_config, logits_processor=processors)[0][ids.shape[1]:].tolist()
    elapsed = time.perf_counter() - t0
lines_ok = all(out[(r + 1) * (cols + 1) - 1] == vocab["<reserved08799>"] for r in range(rows))
print(json.dumps({"program": "official FlexARInferenceSolver.generate loop", "torch": torch.__version__,
                  "transformers": transformers.__version__, "dtype": args.dtype, "threads": torch.get_num_threads(),
                  "size": f"{width}x{height}", "prompt_tokens": len(prompt), "image_tokens": body,
                  "generated": len(out), "rows_end_in_end_of_line": lines_ok, "token_loop_s": elapsed,
                  "tokens_per_s": body / elapsed}))
