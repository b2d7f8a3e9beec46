"""Writes LlamaGen checkpoints in the official on-disk format (torch.save of
OrderedDict state dicts, as train_c2i.py / train_vq.py produce them) from the
conformance case's weights, plus broken variants, for the converter tests.

usage: python make_llamagen_checkpoints.py <conformance weights.safetensors> <out dir>
"""
import argparse
import os
import sys

import torch

from official_checkpoint_io import read_safetensors, state_dict


def full_encoder(vq):
    """The encoder half of an official VQModel (encoder.*, quant_conv.*) with
    random weights, its shapes read off the decoder (upstream builds both from
    one ch_mult; the first level's multiplier is 1, as in VQ-8 and VQ-16)."""
    d = dict(vq)
    levels = len({k.split(".")[2] for k in d if k.startswith("decoder.conv_blocks.")})
    chs = [d[f"decoder.conv_blocks.{levels - 1 - level}.res.0.conv1.weight"].shape[0] for level in range(levels)]
    n_res = len({k.split(".")[4] for k in d if k.startswith("decoder.conv_blocks.0.res.")}) - 1
    z_channels, embed_dim = d["post_quant_conv.weight"].shape[0], d["post_quant_conv.weight"].shape[1]
    gen = torch.Generator().manual_seed(7)
    out = []

    def conv(name, cin, cout, k):
        out.append((name + ".weight", torch.randn(cout, cin, k, k, generator=gen) / (cin * k * k) ** 0.5))
        out.append((name + ".bias", torch.zeros(cout)))

    def norm(name, c):
        out.extend([(name + ".weight", torch.ones(c)), (name + ".bias", torch.zeros(c))])

    def resnet(p, cin, cout):
        norm(p + ".norm1", cin)
        conv(p + ".conv1", cin, cout, 3)
        norm(p + ".norm2", cout)
        conv(p + ".conv2", cout, cout, 3)
        if cin != cout:
            conv(p + ".nin_shortcut", cin, cout, 1)

    def attn(p, c):
        norm(p + ".norm", c)
        for part in (".q", ".k", ".v", ".proj_out"):
            conv(p + part, c, c, 1)

    block_in = chs[0]
    conv("encoder.conv_in", 3, block_in, 3)
    for level in range(levels):
        for i in range(n_res):
            resnet(f"encoder.conv_blocks.{level}.res.{i}", block_in, chs[level])
            block_in = chs[level]
            if level == levels - 1:
                attn(f"encoder.conv_blocks.{level}.attn.{i}", block_in)
        if level != levels - 1:
            conv(f"encoder.conv_blocks.{level}.downsample.conv", block_in, block_in, 3)
    resnet("encoder.mid.0", block_in, block_in)
    attn("encoder.mid.1", block_in)
    resnet("encoder.mid.2", block_in, block_in)
    norm("encoder.norm_out", block_in)
    conv("encoder.conv_out", block_in, z_channels, 3)
    conv("quant_conv", z_channels, embed_dim, 1)
    return out


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    w = read_safetensors(src)
    gpt = [(k[4:], v) for k, v in w.items() if k.startswith("gpt.")]
    vq = [(k[3:], v) for k, v in w.items() if k.startswith("vq.")]
    # Parts of the official VQModel that decoding never uses.
    vq_extra = [("encoder.conv_in.weight", torch.randn(32, 3, 3, 3)), ("encoder.conv_in.bias", torch.zeros(32)),
                ("quant_conv.weight", torch.randn(8, 64, 1, 1)), ("quant_conv.bias", torch.zeros(8)),
                ("quantize.codebook_used", torch.zeros(65536))]
    train_args = argparse.Namespace(gpt_model="GPT-tiny", image_size=64, lr=1e-4)
    torch.save({"model": state_dict(gpt), "steps": 1000, "args": train_args}, os.path.join(out, "c2i_tiny.pt"))
    torch.save({"model": state_dict(vq + vq_extra), "steps": 1000, "args": train_args}, os.path.join(out, "vq_tiny.pt"))
    # The whole VQModel, encoder included, as train_vq.py saves it.
    torch.save({"model": state_dict(vq + full_encoder(vq) + vq_extra[-1:]), "steps": 1000, "args": train_args},
               os.path.join(out, "vq_tiny_with_encoder.pt"))
    # A raw state dict saved from a DDP-wrapped model ("module." prefixes), in bf16.
    torch.save(state_dict([("module." + k, v.to(torch.bfloat16)) for k, v in gpt]), os.path.join(out, "c2i_raw_ddp.pt"))
    bad_shape = [(k, torch.ones(64) if k == "norm.weight" else v) for k, v in gpt]
    torch.save({"model": state_dict(bad_shape)}, os.path.join(out, "c2i_bad_shape.pt"))
    extra = gpt + [("layers.0.attention.bogus.weight", torch.ones(2))]
    torch.save({"model": state_dict(extra)}, os.path.join(out, "c2i_extra_key.pt"))
    missing = [(k, v) for k, v in gpt if k != "output.weight"]
    torch.save({"model": state_dict(missing)}, os.path.join(out, "c2i_missing_key.pt"))
    vq_unknown = vq + [("decoder.bogus.weight", torch.ones(1))]
    torch.save({"model": state_dict(vq_unknown)}, os.path.join(out, "vq_unknown_key.pt"))
    with open(os.path.join(out, "c2i_text.pt"), "w") as f:
        f.write("this is a text file, not a checkpoint\n")


if __name__ == "__main__":
    main()
