"""Writes MAR checkpoints in the official on-disk format from the conformance
case's weights, plus broken variants, for the converter tests:

  checkpoint-last.pth  as main_mar.py's save_model writes it: {"model": raw
                       weights, "model_ema": EMA weights, "optimizer", "epoch",
                       "scaler", "args": argparse.Namespace}. The conformance
                       weights are the EMA entry; "model" holds them scaled by 0.5,
                       so a converter that picks the wrong entry is caught.
  kl16.ckpt            {"model": AutoencoderKL.state_dict()} with placeholder
                       encoder / quant_conv / loss tensors (never used to decode).
  mar_no_ema.pth       save_model without EMA ("model_ema": None).
  mar_missing_key.pth, mar_bad_shape.pth, mar_extra_key.pth, vae_unknown_key.ckpt,
  mar_text.pth         broken inputs.

usage: python make_mar_checkpoints.py <conformance mar weights.safetensors> <out dir>
"""
import argparse
import os
import sys

import torch

from official_checkpoint_io import read_safetensors, state_dict


def training_checkpoint(raw, ema):
    return {"model": raw, "model_ema": ema, "optimizer": {"state": {}, "param_groups": [{"lr": 1e-4}]},
            "epoch": 799, "scaler": {"scale": 65536.0}, "args": argparse.Namespace(model="mar_tiny", ema_rate=0.9999)}


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    w = read_safetensors(src)
    mar = [(k[4:], v) for k, v in w.items() if k.startswith("mar.")]
    vae = [(k[4:], v) for k, v in w.items() if k.startswith("vae.")]
    raw = [(k, v * 0.5) for k, v in mar]
    torch.save(training_checkpoint(state_dict(raw), state_dict(mar)), os.path.join(out, "checkpoint-last.pth"))
    e = dict(vae)["post_quant_conv.weight"].shape[0]
    vae_extra = [("encoder.conv_in.weight", torch.randn(32, 3, 3, 3)), ("encoder.conv_in.bias", torch.zeros(32)),
                 ("quant_conv.weight", torch.randn(2 * e, 2 * e, 1, 1)), ("quant_conv.bias", torch.zeros(2 * e)),
                 ("loss.logvar", torch.zeros(()))]
    torch.save({"model": state_dict(vae + vae_extra)}, os.path.join(out, "kl16.ckpt"))
    torch.save(training_checkpoint(state_dict(raw), None), os.path.join(out, "mar_no_ema.pth"))
    missing = [(k, v) for k, v in mar if k != "diffloss.net.final_layer.linear.bias"]
    torch.save(training_checkpoint(state_dict(missing), state_dict(missing)), os.path.join(out, "mar_missing_key.pth"))
    bad = [(k, torch.ones(7) if k == "decoder_norm.bias" else v) for k, v in mar]
    torch.save(training_checkpoint(state_dict(bad), state_dict(bad)), os.path.join(out, "mar_bad_shape.pth"))
    extra = mar + [("encoder_blocks.0.attn.bogus", torch.ones(2))]
    torch.save(training_checkpoint(state_dict(extra), state_dict(extra)), os.path.join(out, "mar_extra_key.pth"))
    torch.save({"model": state_dict(vae + [("decoder.bogus.weight", torch.ones(1))])},
               os.path.join(out, "vae_unknown_key.ckpt"))
    with open(os.path.join(out, "mar_text.pth"), "w") as f:
        f.write("this is a text file, not a checkpoint\n")


if __name__ == "__main__":
    main()
