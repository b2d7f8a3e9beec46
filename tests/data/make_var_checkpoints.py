"""Writes VAR checkpoints in the official on-disk format (torch.save of
OrderedDict state dicts, as var_d16.pth and vae_ch160v4096z32.pth are) from the
conformance case's weights, plus broken variants, for the converter tests.
The buffers the conformance file omits are rebuilt the way the official code
builds them (attn_bias_for_masking) and the encoder / quant_conv parts that VAR
inference never uses get placeholders, so the files carry every official key.

usage: python make_var_checkpoints.py <conformance var weights.safetensors> <out dir>
"""
import os
import sys

import torch

from official_checkpoint_io import read_safetensors, state_dict


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    w = read_safetensors(src)
    var = [(k[4:], v) for k, v in w.items() if k.startswith("var.")]
    vae = [(k[4:], v) for k, v in w.items() if k.startswith("vae.")]
    # VAR.__init__'s attn_bias_for_masking: 0 where level(query) >= level(key), -inf elsewhere.
    lvl = dict(var)["lvl_1L"].view(1, -1, 1)
    bias = torch.where(lvl >= lvl.transpose(1, 2), 0.0, -torch.inf).reshape(1, 1, lvl.shape[1], lvl.shape[1])
    var_full = var + [("attn_bias_for_masking", bias)]
    z = dict(vae)["quantize.embedding.weight"].shape[1]
    vae_extra = [("encoder.conv_in.weight", torch.randn(32, 3, 3, 3)), ("encoder.conv_in.bias", torch.zeros(32)),
                 ("quant_conv.weight", torch.randn(z, z, 3, 3)), ("quant_conv.bias", torch.zeros(z))]
    torch.save(state_dict(var_full), os.path.join(out, "var_tiny.pth"))
    torch.save(state_dict(vae + vae_extra), os.path.join(out, "vae_tiny.pth"))
    # A trainer-style wrapper with DDP prefixes, in bf16.
    wrapped = [("module." + k, v.to(torch.bfloat16) if v.is_floating_point() else v) for k, v in var_full]
    torch.save({"model": state_dict(wrapped), "epoch": 3}, os.path.join(out, "var_ddp_bf16.pth"))
    bad_shape = [(k, torch.ones(64) if k == "head.bias" else v) for k, v in var_full]
    torch.save(state_dict(bad_shape), os.path.join(out, "var_bad_shape.pth"))
    extra = var_full + [("blocks.0.attn.bogus", torch.ones(2))]
    torch.save(state_dict(extra), os.path.join(out, "var_extra_key.pth"))
    missing = [(k, v) for k, v in var_full if k != "head_nm.ada_lin.1.bias"]
    torch.save(state_dict(missing), os.path.join(out, "var_missing_key.pth"))
    odd_pos = [(k, torch.zeros(1, 700, v.shape[2]) if k == "pos_1LC" else v) for k, v in var_full]
    torch.save(state_dict(odd_pos), os.path.join(out, "var_odd_schedule.pth"))
    vae_unknown = vae + [("decoder.bogus.weight", torch.ones(1))]
    torch.save(state_dict(vae_unknown), os.path.join(out, "vae_unknown_key.pth"))
    with open(os.path.join(out, "var_text.pth"), "w") as f:
        f.write("this is a text file, not a checkpoint\n")


if __name__ == "__main__":
    main()
