"""Times the official Janus-Pro generation loop on a KV Studio Janus-Pro
bundle's weights, for the side-by-side speed comparison in docs/benchmarks.md.

The official code is not part of KV Studio: point --janus-repo at a checkout
of https://github.com/deepseek-ai/Janus. Its `generate()` is read out of
generation_inference.py (the file itself loads a checkpoint when imported) and
run unchanged on the CPU (`.cuda()` is the identity). The generation modules
are built with the calls MultiModalityCausalLM.__init__ makes, without the
understanding tower (SigLIP needs timm/torchvision, and generation never runs
it); their weights are the bundle's, so both programs compute with the same
numbers. The prompt ids are the bundle tokenizer's, templated as KV Studio
templates them (BOS, "<|User|>: ...\\n\\n<|Assistant|>:", <begin_of_image>).

Prints one JSON object: total seconds, the VQ decode and image saving the
official function also does, and image tokens per second of the token loop
alone (total minus decode and saving), which is what `kvstudio-cli bench`
reports as tokens/s.

Needs, besides torch: transformers, numpy, pillow, attrdict, einops (e.g.
`pip install --target DIR ...` and PYTHONPATH=DIR).

Usage: janus_official_speed.py --janus-repo DIR --bundle DIR [--dtype f32|bf16]
       [--parallel-size N] [--prompt TEXT] [--seed N] [--threads N]
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time
import types

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--janus-repo", required=True)
parser.add_argument("--bundle", required=True)
parser.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
parser.add_argument("--parallel-size", type=int, default=1)
parser.add_argument("--prompt", default="A close-up photo of a red fox in fresh snow, soft morning light")
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--threads", type=int, default=0)
args = parser.parse_args()
if args.threads > 0:
    torch.set_num_threads(args.threads)
dtype = torch.float32 if args.dtype == "f32" else torch.bfloat16

# The official modules, without janus/models/__init__.py (it imports the
# understanding path) and with a stub for the SigLIP tower generation never builds.
repo = os.path.abspath(args.janus_repo)
sys.path.insert(0, repo)
import contextlib  # noqa: E402

with contextlib.redirect_stdout(sys.stderr):  # its notice must not precede the JSON on stdout
    import janus  # noqa: E402  (its __init__ patches collections for attrdict)

models_pkg = types.ModuleType("janus.models")
models_pkg.__path__ = [os.path.join(repo, "janus", "models")]
sys.modules["janus.models"] = models_pkg
clip_stub = types.ModuleType("janus.models.clip_encoder")


class CLIPVisionTower:  # never instantiated
    def __init__(self, *a, **k):
        raise RuntimeError("the understanding tower is not built for generation timing")


clip_stub.CLIPVisionTower = CLIPVisionTower
sys.modules["janus.models.clip_encoder"] = clip_stub
from attrdict import AttrDict  # noqa: E402
from janus.models import modeling_vlm, vq_model  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

manifest = json.load(open(os.path.join(args.bundle, "model.json")))
arch = manifest["architecture"]["janus"]
vq = arch["vq"]

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bundle_safetensors import read_safetensors  # noqa: E402


class JanusGenParts(torch.nn.Module):
    """The generation submodules under MultiModalityCausalLM's attribute names."""

    prepare_gen_img_embeds = modeling_vlm.MultiModalityCausalLM.prepare_gen_img_embeds

    def __init__(self):
        super().__init__()
        self.gen_vision_model = vq_model.VQModel(vq_model.ModelArgs(
            codebook_size=vq["codebook_size"], codebook_embed_dim=vq["codebook_embed_dim"],
            encoder_ch_mult=vq["decoder_ch_mult"], decoder_ch_mult=vq["decoder_ch_mult"],
            z_channels=vq["z_channels"]))
        if vq["ch"] != 128:  # VQModel hard-codes ch=128; small test decoders name theirs
            self.gen_vision_model.decoder = vq_model.Decoder(ch=vq["ch"], ch_mult=vq["decoder_ch_mult"],
                                                             z_channels=vq["z_channels"])
        self.gen_aligner = modeling_vlm.model_name_to_cls("MlpProjector")(AttrDict(
            depth=arch["aligner_depth"], input_dim=arch["gen_embed_dim"], n_embed=arch["hidden_size"],
            projector_type="mlp_gelu"))
        self.gen_head = modeling_vlm.vision_head(AttrDict(
            n_embed=arch["hidden_size"], image_token_embed=arch["head_embed"],
            image_token_size=arch["image_token_size"]))
        self.gen_embed = torch.nn.Embedding(arch["image_token_size"], arch["gen_embed_dim"])
        self.language_model = LlamaForCausalLM(LlamaConfig(
            hidden_size=arch["hidden_size"], intermediate_size=arch["intermediate_size"],
            num_hidden_layers=arch["num_hidden_layers"], num_attention_heads=arch["num_attention_heads"],
            num_key_value_heads=arch["num_key_value_heads"], vocab_size=arch["vocab_size"],
            rope_theta=arch["rope_theta"], rms_norm_eps=arch["rms_norm_eps"],
            max_position_embeddings=arch["max_position_embeddings"]))


# Built on the meta device and given the bundle's tensors (assign), so no time
# goes into initialising weights that are replaced anyway; the rotary table is
# a non-persistent buffer and is rebuilt on the CPU.
with torch.device("meta"):
    model = JanusGenParts()
weights = read_safetensors(os.path.join(args.bundle, "weights.safetensors"))
result = model.load_state_dict({k: v.to(dtype) for k, v in weights.items()}, strict=False, assign=True)
never_used = ("language_model.lm_head", "gen_vision_model.encoder", "gen_vision_model.quant_conv",
              "gen_vision_model.quantize.codebook_used")
missing = [k for k in result.missing_keys if not k.startswith(never_used)]
if result.unexpected_keys or missing:
    sys.exit(f"weights do not fit the official modules: missing {missing[:5]}, "
             f"unexpected {list(result.unexpected_keys)[:5]}")
lm = model.language_model.model
lm.rotary_emb = type(lm.rotary_emb)(config=model.language_model.config, device="cpu")
model = model.eval()

# Prompt ids as KV Studio builds them.
tok_dir = os.path.join(args.bundle, "tokenizer")
hf_tok = PreTrainedTokenizerFast(tokenizer_file=os.path.join(tok_dir, "tokenizer.json"))
special = json.load(open(os.path.join(tok_dir, "special_tokens_map.json")))
bos = special["bos_token"]["content"] if isinstance(special["bos_token"], dict) else special["bos_token"]
text = ("<|User|>: " + args.prompt.strip() + "\n\n<|Assistant|>:").strip() + arch["image_start_tag"]
ids = hf_tok.encode(text, add_special_tokens=False)
if not ids or ids[0] != hf_tok.convert_tokens_to_ids(bos):
    ids = [hf_tok.convert_tokens_to_ids(bos)] + ids


class ChatProcessor:
    class tokenizer:
        @staticmethod
        def encode(_prompt):
            return ids

    pad_id = hf_tok.convert_tokens_to_ids(arch["pad_tag"])


# The official generate(), read out of generation_inference.py and run unchanged.
source = open(os.path.join(repo, "generation_inference.py")).read()
start = source.index("@torch.inference_mode()")
end = source.index("\ngenerate(\n", start)
import numpy as np  # noqa: E402
import PIL.Image  # noqa: E402

torch.Tensor.cuda = lambda self, *a, **k: self
timers = {"decode_s": 0.0, "save_s": 0.0}
official_decode = model.gen_vision_model.decode_code


def timed_decode(*a, **k):
    t = time.perf_counter()
    out = official_decode(*a, **k)
    timers["decode_s"] += time.perf_counter() - t
    return out


model.gen_vision_model.decode_code = timed_decode
official_save = PIL.Image.Image.save


def timed_save(self, *a, **k):
    t = time.perf_counter()
    official_save(self, *a, **k)
    timers["save_s"] += time.perf_counter() - t


PIL.Image.Image.save = timed_save
namespace = {"torch": torch, "np": np, "os": os, "PIL": PIL, "MultiModalityCausalLM": object,
             "VLChatProcessor": object}
exec(compile(source[start:end], "generation_inference.py:generate", "exec"), namespace)
grid = arch["image_size"] // (2 ** (len(vq["decoder_ch_mult"]) - 1))
torch.manual_seed(args.seed)
cwd = os.getcwd()
with tempfile.TemporaryDirectory() as work:
    os.chdir(work)
    t0 = time.perf_counter()
    namespace["generate"](model, ChatProcessor, "(prompt ids given)", temperature=1.0,
                          parallel_size=args.parallel_size, cfg_weight=5.0,
                          image_token_num_per_image=grid * grid, img_size=arch["image_size"],
                          patch_size=arch["image_size"] // grid)
    total = time.perf_counter() - t0
    os.chdir(cwd)
loop = total - timers["decode_s"] - timers["save_s"]
print(json.dumps({"program": "official generate()", "torch": torch.__version__,
                  "transformers": __import__("transformers").__version__, "dtype": args.dtype,
                  "threads": torch.get_num_threads(), "parallel_size": args.parallel_size,
                  "prompt_tokens": len(ids), "image_tokens": grid * grid, "total_s": total, **timers,
                  "token_loop_s": loop, "tokens_per_s": args.parallel_size * grid * grid / loop}))
