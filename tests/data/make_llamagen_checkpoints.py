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
