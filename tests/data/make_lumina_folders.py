"""Writes the two folders a Lumina-mGPT conversion reads, laid out as they are
downloaded, from the lumina_mgpt_tiny conformance case:

  OUT/hf/         config.json, tokenizer.json, tokenizer_config.json,
                  special_tokens_map.json (the case's hf_model files) and the
                  language model as model-00001-of-00002.safetensors,
                  model-00002-of-00002.safetensors with model.safetensors.index.json;
                  besides the model's tensors the shards hold a VQ encoder under
                  model.vqmodel., as Hugging Face's Chameleon keeps one
  OUT/chameleon/  vqgan.yaml and text_tokenizer.json (the case's) and vqgan.ckpt: torch.save of
                  {"state_dict": ...} with the VQGAN's decoding side and an
                  encoder side (encoder., quant_conv.) that decoding never reads

Usage: make_lumina_folders.py CASE_DIR OUT_DIR   (CASE_DIR holds lumina_mgpt_tiny.*)
"""
import json
import os
import shutil
import sys

import torch

from official_checkpoint_io import read_safetensors, state_dict, write_safetensors

case_dir, out_dir = sys.argv[1], sys.argv[2]
files = os.path.join(case_dir, "lumina_mgpt_tiny.files")
tensors = read_safetensors(os.path.join(case_dir, "lumina_mgpt_tiny.weights.safetensors"))
gen = torch.Generator().manual_seed(23)

hf = os.path.join(out_dir, "hf")
os.makedirs(hf, exist_ok=True)
for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
    shutil.copyfile(os.path.join(files, "hf_model", name), os.path.join(hf, name))
lm = {n: t for n, t in tensors.items() if not n.startswith("vqgan.")}
lm["model.vqmodel.encoder.conv_in.weight"] = torch.randn(32, 3, 3, 3, generator=gen)
lm["model.vqmodel.quantize.embedding.weight"] = torch.randn(8192, 8, generator=gen)
names = list(lm)
weight_map = {}
for i, part in enumerate([names[: len(names) // 2], names[len(names) // 2:]]):
    file = f"model-{i + 1:05d}-of-00002.safetensors"
    write_safetensors(os.path.join(hf, file), {n: lm[n] for n in part})
    weight_map.update({n: file for n in part})
total = sum(t.numel() * t.element_size() for t in lm.values())
with open(os.path.join(hf, "model.safetensors.index.json"), "w") as f:
    json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)

chameleon = os.path.join(out_dir, "chameleon")
os.makedirs(chameleon, exist_ok=True)
for name in ("vqgan.yaml", "text_tokenizer.json"):
    shutil.copyfile(os.path.join(files, "chameleon_tokenizer", name), os.path.join(chameleon, name))
vqgan = [(n[len("vqgan."):], t) for n, t in tensors.items() if n.startswith("vqgan.")]
vqgan += [("encoder.conv_in.weight", torch.randn(32, 3, 3, 3, generator=gen)),
          ("quant_conv.weight", torch.randn(8, 32, 1, 1, generator=gen))]
torch.save({"state_dict": state_dict(vqgan), "global_step": 0}, os.path.join(chameleon, "vqgan.ckpt"))
print(f"wrote {hf} and {chameleon}")
