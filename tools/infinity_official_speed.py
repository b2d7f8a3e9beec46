"""Times the official Infinity generation on a KV Studio Infinity bundle's
weights, for the side-by-side speed comparison of
tools/infinity_speed_vs_official.sh.

The official code is not part of KV Studio: point --infinity-repo at a checkout
of https://github.com/FoundationVision/Infinity (commit 4c27bbb; its
`infinity/` and `tools/` folders are all that is read). What runs is
tools/run_infinity.py's `gen_one_img` (batch 1) or, for a batch of B images,
the `Infinity.autoregressive_infer_cfg` call gen_one_img makes with B = the
batch and the prompt encoded once per image by its `encode_prompt`, with the
settings of run_infinity's command line (CFG on the logits, the 1:1 schedule
of the model's pixel budget, bit labels) and gen_one_img's sampling defaults
(top-k 900, top-p 0.97), on the CPU in float32. The objects are built the way
run_infinity builds them, from the bundle's files:
  - Infinity by `load_infinity` with the bundle's architecture (the arguments
    of run_infinity's command-line defaults, bf16=0) and the bundle's
    "infinity." tensors, given to it as the .pth it loads (a temporary file);
  - the BSQ-VAE by vae.py's `vae_model` with the bundle's "tokenizer" section,
    its decoder loaded from the "vae." tensors through the official `load_cnn`
    (the encoder stays random: generation never runs it);
  - transformers' T5EncoderModel from architecture.t5 with the "t5." tensors,
    and T5Tokenizer(spiece.model, legacy=True) with model_max_length 512 (what
    `load_tokenizer` sets), in float32.
Every tensor of the bundle must land in the official modules and every
official parameter must come from the bundle, or the script stops.

What the CPU needs, and nothing else, is put in place before the official
modules are imported:
  - flash_attn (CUDA only) is a stand-in module: `flash_attn_varlen_kvpacked_func`
    computes, per sequence b, softmax(q k^T * softmax_scale) v over the query
    rows cu_seqlens_q[b]:cu_seqlens_q[b+1] and the key rows
    cu_seqlens_k[b]:cu_seqlens_k[b+1], in float32 from the given (bf16) inputs,
    rounded to the input dtype; `flash_attn_func` raises if called (the
    self-attention does not take it on this path); `flash_attn.ops` stays
    missing, so basic.py uses its own fallbacks, as without the fused kernels;
  - TORCHDYNAMO_DISABLE=1, so fused_op.py's @torch.compile functions run eagerly;
  - `.cuda()` of tensors and modules returns them unchanged; autocast('cuda') is
    inactive on a machine without CUDA, so everything but the cross-attention's
    explicit bf16 casts runs in float32 (KV Studio's `--dtype f32`).

Timing: a warm-up call first, then one timed call. The call is split by wrapping
(not changing) `encode_prompt` (the T5 text encoder) and `vae.decode`: what
remains is the scale loop, the time `kvstudio-cli bench` counts as a run's
generation time (KV Studio encodes the prompt before and decodes after it).
tokens/s = the last scale's tokens (the image grid, what bench counts per
image) x images / the scale loop's seconds.

Prints one JSON object (the official code's own prints go to stderr); with
--image-out, the first image of the timed call as a PNG (RGB).

Needs, besides torch: transformers, tokenizers, sentencepiece, timm, numpy and
what run_infinity.py and the VAE import (pillow, pyyaml, pandas, opencv,
torchvision, einops, imageio, pytz); see tools/infinity_speed_vs_official.sh.

Usage: infinity_official_speed.py --infinity-repo DIR --bundle DIR [--batch N]
       [--prompt TEXT] [--seed N] [--threads N] [--image-out FILE.png]
"""
import os

# Before torch is imported: fused_op.py compiles at import time otherwise.
os.environ["TORCHDYNAMO_DISABLE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--infinity-repo", required=True)
parser.add_argument("--bundle", required=True)
parser.add_argument("--batch", type=int, default=1)
parser.add_argument("--prompt", default="a dense forest of pines at golden hour in the evening")
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--cfg", type=float, default=3.0)
parser.add_argument("--tau", type=float, default=0.5)
parser.add_argument("--top-k", type=int, default=900)
parser.add_argument("--top-p", type=float, default=0.97)
parser.add_argument("--threads", type=int, default=0)
parser.add_argument("--image-out", default="")
args = parser.parse_args()
if args.batch < 1:
    sys.exit("--batch must be at least 1")
if args.threads > 0:
    torch.set_num_threads(args.threads)


def varlen_kvpacked_attention(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None,
                              dropout_p=0.0, softmax_scale=None, causal=False, **unused):
    """flash_attn_varlen_kvpacked_func's result without the kernel: q [Nq, H, d],
    kv [Nk, 2, H, d]; sequence b attends its own key rows only, unmasked."""
    if dropout_p or causal:
        raise NotImplementedError("the stand-in covers inference calls only (no dropout, not causal)")
    scale = softmax_scale if softmax_scale is not None else q.shape[-1] ** -0.5
    out = torch.empty_like(q)
    cq, ck = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cq) - 1):
        qb = q[cq[b]:cq[b + 1]].float().transpose(0, 1)            # [H, Lq, d]
        kb, vb = kv[ck[b]:ck[b + 1]].float().unbind(1)               # [Lk, H, d] each
        p = torch.softmax(qb @ kb.permute(1, 2, 0) * scale, dim=-1)  # [H, Lq, Lk]
        out[cq[b]:cq[b + 1]] = (p @ vb.transpose(0, 1)).transpose(0, 1).to(q.dtype)
    return out


def flash_attn_func(*a, **k):
    raise RuntimeError("flash_attn_func is CUDA only and not expected on this path (using_flash=False)")


flash_stub = types.ModuleType("flash_attn")  # a plain module: `flash_attn.ops.*` imports fail, as intended
flash_stub.flash_attn_func = flash_attn_func
flash_stub.flash_attn_varlen_kvpacked_func = varlen_kvpacked_attention
sys.modules["flash_attn"] = flash_stub
torch.Tensor.cuda = lambda self, *a, **k: self
torch.nn.Module.cuda = lambda self, *a, **k: self

repo = os.path.abspath(args.infinity_repo)
sys.path.insert(0, repo)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bundle_safetensors import read_safetensors  # noqa: E402

with contextlib.redirect_stdout(sys.stderr):  # the official modules print while they are imported and built
    spec = importlib.util.spec_from_file_location("run_infinity", os.path.join(repo, "tools", "run_infinity.py"))
    run_infinity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_infinity)
    import timm  # noqa: E402
    import transformers  # noqa: E402
    from transformers import T5Config, T5EncoderModel, T5Tokenizer  # noqa: E402
    from infinity.models.bsq_vae import vae as vae_module  # noqa: E402
    from infinity.utils.dynamic_resolution import dynamic_resolution_h_w  # noqa: E402

manifest = json.load(open(os.path.join(args.bundle, "model.json")))
if manifest.get("family") != "infinity":
    sys.exit(f"{args.bundle} is not an Infinity bundle (family {manifest.get('family')})")
arch, t5_arch, vae_cfg = manifest["architecture"]["infinity"], manifest["architecture"]["t5"], manifest["tokenizer"]
weights = read_safetensors(os.path.join(args.bundle, manifest["files"]["weights"]))
part = {p: {k[len(p) + 1:]: v.float() for k, v in weights.items() if k.startswith(p + ".")}
        for p in ("infinity", "t5", "vae")}
if sum(len(v) for v in part.values()) != len(weights):
    sys.exit("the bundle holds tensors outside infinity./t5./vae.")
del weights


def fail_unless_exact(what, module_state, given, allowed_missing=()):
    missing = sorted(set(module_state) - set(given) - set(allowed_missing))
    unexpected = sorted(set(given) - set(module_state))
    if missing or unexpected:
        sys.exit(f"{what}: the bundle does not fit the official modules: missing {missing[:5]}, "
                 f"unexpected {unexpected[:5]}")


with contextlib.redirect_stdout(sys.stderr):
    # The VAE, as load_visual_tokenizer builds it, at the bundle's sizes.
    # vae_model hard-codes base_ch 128 and num_res_blocks 2: other sizes are
    # set on the arguments it hands to AutoEncoder.
    official_autoencoder = vae_module.AutoEncoder

    def autoencoder_at_bundle_size(vae_args):
        vae_args.base_ch, vae_args.num_res_blocks = vae_cfg["base_ch"], vae_cfg["num_res_blocks"]
        return official_autoencoder(vae_args)

    vae_module.AutoEncoder = autoencoder_at_bundle_size
    d = vae_cfg["codebook_dim"]
    pending = dict(part["vae"])  # load_cnn removes what it loads from this dict
    vae = vae_module.vae_model({"vae": pending}, "dynamic", d, 2 ** d, patch_size=vae_cfg["patch_size"],
                               encoder_ch_mult=vae_cfg["ch_mult"], decoder_ch_mult=vae_cfg["ch_mult"],
                               test_mode=True)
    vae_module.AutoEncoder = official_autoencoder
    if pending:
        sys.exit(f"vae: tensors the official decoder did not take: {sorted(pending)[:5]}")
    decoder_state = {k: v for k, v in vae.state_dict().items() if k.startswith("decoder.")}
    fail_unless_exact("vae", decoder_state, part["vae"])

    # Infinity, by load_infinity with run_infinity's defaults and the bundle's sizes.
    model_kwargs = dict(depth=arch["depth"], embed_dim=arch["embed_dim"], num_heads=arch["num_heads"],
                        drop_path_rate=0.1, mlp_ratio=arch["mlp_ratio"], block_chunks=arch["block_chunks"])
    with tempfile.TemporaryDirectory() as tmp:
        pth = os.path.join(tmp, "infinity.pth")
        torch.save(part["infinity"], pth)
        infinity = run_infinity.load_infinity(
            rope2d_each_sa_layer=1, rope2d_normalized_by_hw=2, use_scale_schedule_embedding=0,
            pn=arch["pixel_budget"], use_bit_label=1, add_lvl_embeding_only_first_block=1, model_path=pth,
            scale_schedule=None, vae=vae, device="cpu", model_kwargs=model_kwargs,
            text_channels=arch["text_channels"], apply_spatial_patchify=int(arch["apply_spatial_patchify"]),
            use_flex_attn=False, bf16=False, checkpoint_type="torch")
    # load_infinity loads with strict=False: check both directions and the values.
    state = infinity.state_dict()
    fail_unless_exact("infinity", state, part["infinity"])
    for k, v in part["infinity"].items():
        if not torch.equal(state[k], v):
            sys.exit(f"infinity: {k} did not load")

    # The text encoder and tokenizer, as load_tokenizer makes them (in float32).
    t5_config = T5Config(vocab_size=t5_arch["vocab_size"], d_model=t5_arch["d_model"], d_kv=t5_arch["d_kv"],
                         d_ff=t5_arch["d_ff"], num_layers=t5_arch["num_layers"], num_heads=t5_arch["num_heads"],
                         relative_attention_num_buckets=t5_arch["relative_attention_num_buckets"],
                         relative_attention_max_distance=t5_arch["relative_attention_max_distance"],
                         layer_norm_epsilon=t5_arch["layer_norm_epsilon"],
                         feed_forward_proj=t5_arch["feed_forward_proj"], dropout_rate=0.0)
    text_encoder = T5EncoderModel(t5_config).eval().requires_grad_(False)
    fail_unless_exact("t5", text_encoder.state_dict(), part["t5"],
                      allowed_missing=["encoder.embed_tokens.weight"])  # tied to shared.weight
    text_encoder.load_state_dict(part["t5"], strict=False)
    text_tokenizer = T5Tokenizer(os.path.join(args.bundle, manifest["files"]["tokenizer"]), legacy=True)
    text_tokenizer.model_max_length = 512
del part

# run_infinity's __main__: the 1:1 template of the model's pixel budget, t = 1.
scale_schedule = [(1, h, w) for (_, h, w) in dynamic_resolution_h_w[1.0][arch["pixel_budget"]]["scales"]]
grid_h, grid_w = scale_schedule[-1][1], scale_schedule[-1][2]
patch = vae_cfg["patch_size"] * (2 if arch["apply_spatial_patchify"] else 1)
prompts = [args.prompt] * args.batch

# The split of a call's time: the wrappers call the official functions unchanged.
spent = {"encode_prompt": 0.0, "vae_decode": 0.0}
official_encode_prompt = run_infinity.encode_prompt


def timed_encode_prompt(*a, **k):
    t0 = time.perf_counter()
    out = official_encode_prompt(*a, **k)
    spent["encode_prompt"] += time.perf_counter() - t0
    return out


run_infinity.encode_prompt = timed_encode_prompt
official_decode = vae.decode


def timed_decode(*a, **k):
    t0 = time.perf_counter()
    out = official_decode(*a, **k)
    spent["vae_decode"] += time.perf_counter() - t0
    return out


vae.decode = timed_decode


def generate():
    """The images of one call: gen_one_img for one prompt; for B prompts the
    autoregressive_infer_cfg call it makes, with B = len(prompts) and the
    prompts encoded one by one by encode_prompt into one varlen batch."""
    if len(prompts) == 1:
        return run_infinity.gen_one_img(
            infinity, vae, text_tokenizer, text_encoder, prompts[0], cfg_list=args.cfg, tau_list=args.tau,
            scale_schedule=scale_schedule, top_k=args.top_k, top_p=args.top_p, cfg_insertion_layer=[0],
            vae_type=d, g_seed=args.seed, gt_leak=0, gt_ls_Bl=None, sampling_per_bits=1,
            enable_positive_prompt=0)[None]
    encoded = [run_infinity.encode_prompt(text_tokenizer, text_encoder, p) for p in prompts]
    lens = [n for e in encoded for n in e[1]]
    label = (torch.cat([e[0] for e in encoded]), lens,
             F.pad(torch.tensor(lens, dtype=torch.int32).cumsum(0, dtype=torch.int32), (1, 0)), max(lens))
    with torch.cuda.amp.autocast(enabled=True, dtype=torch.bfloat16, cache_enabled=True):
        _, _, images = infinity.autoregressive_infer_cfg(
            vae=vae, scale_schedule=scale_schedule, label_B_or_BLT=label, g_seed=args.seed, B=len(prompts),
            negative_label_B_or_BLT=None, force_gt_Bhw=None, cfg_sc=3, cfg_list=[args.cfg] * len(scale_schedule),
            tau_list=[args.tau] * len(scale_schedule), top_k=args.top_k, top_p=args.top_p, returns_vemb=1,
            ratio_Bl1=None, gumbel=0, norm_cfg=False, cfg_exp_k=0.0, cfg_insertion_layer=[0], vae_type=d,
            softmax_merge_topk=-1, ret_img=True, trunk_scale=1000, gt_leak=0, gt_ls_Bl=None, inference_mode=True,
            sampling_per_bits=1)
    return images


with torch.no_grad(), contextlib.redirect_stdout(sys.stderr):
    t0 = time.perf_counter()
    generate()  # warm-up
    warmup_s = time.perf_counter() - t0
    spent = dict.fromkeys(spent, 0.0)
    t0 = time.perf_counter()
    images = generate()
    call_s = time.perf_counter() - t0
loop_s = call_s - spent["encode_prompt"] - spent["vae_decode"]

if args.image_out:
    from PIL import Image  # noqa: E402
    Image.fromarray(images[0].flip(-1).numpy()).save(args.image_out)  # the official image is BGR (for cv2)

try:
    commit = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
except (OSError, subprocess.CalledProcessError):
    commit = "unknown"
call = "gen_one_img" if args.batch == 1 else "autoregressive_infer_cfg (gen_one_img's call, B = batch)"
print(json.dumps({
    "program": f"official Infinity {call}", "commit": commit, "torch": torch.__version__,
    "transformers": transformers.__version__, "timm": timm.__version__, "dtype": "f32",
    "threads": torch.get_num_threads(), "model": manifest.get("name"), "batch": args.batch, "prompt": args.prompt,
    "seed": args.seed, "cfg": args.cfg, "tau": args.tau, "top_k": args.top_k, "top_p": args.top_p,
    "size": f"{grid_w * patch}x{grid_h * patch}", "scales": len(scale_schedule),
    "schedule_tokens": sum(h * w for _, h, w in scale_schedule), "grid": [grid_h, grid_w],
    "image_tokens": grid_h * grid_w * args.batch, "warmup_s": warmup_s, "call_s": call_s,
    "encode_prompt_s": spent["encode_prompt"], "vae_decode_s": spent["vae_decode"], "scale_loop_s": loop_s,
    "tokens_per_s": grid_h * grid_w * args.batch / loop_s}))
