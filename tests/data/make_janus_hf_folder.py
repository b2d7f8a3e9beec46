"""Writes Janus-Pro folders laid out exactly as the official Hugging Face
download (deepseek-ai/Janus-Pro-1B / -7B), from the janus_pro_tiny conformance
weights, for the converter and end-to-end tests:

  OUT/safetensors/  config.json, tokenizer.json, tokenizer_config.json,
                    special_tokens_map.json, processor_config.json,
                    model-00001-of-00002.safetensors, model-00002-of-00002.safetensors,
                    model.safetensors.index.json
  OUT/bin/          the same with pytorch_model-0000N-of-00002.bin shards
                    (torch.save) and pytorch_model.bin.index.json

Besides the generation tensors the shards hold what the official checkpoint
also ships and generation never uses (a SigLIP-style vision tower, the
understanding aligner, the text head, the VQ encoder side), so the converter's
dropping is exercised. The tokenizer is a byte-level BPE trained with the
`tokenizers` library and DeepSeek-LLM's pre-tokenizer, with the chat and image
tokens at the ids the conformance case uses (BOS 590, pad 597, image start 598).

Usage: make_janus_hf_folder.py WEIGHTS.safetensors OUT_DIR
"""
import json
import os
import struct
import sys

import torch

from deepseek_pre_tokenizer import DEEPSEEK_PRE_TOKENIZER
from official_checkpoint_io import read_safetensors, state_dict, write_safetensors

weights_path, out_dir = sys.argv[1], sys.argv[2]
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

BOS, EOS, PAD = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>"
SPECIALS = {590: BOS, 591: EOS, 592: "<|User|>", 593: "<|Assistant|>", 594: "<image_placeholder>",
            597: PAD, 598: "<begin_of_image>", 599: "<end_of_image>"}

CONFIG = {
    "aligner_config": {"cls": "MlpProjector", "model_type": "aligner",
                       "params": {"depth": 2, "input_dim": 64, "n_embed": 128, "projector_type": "mlp_gelu"}},
    "gen_aligner_config": {"cls": "MlpProjector", "model_type": "gen_aligner",
                           "params": {"depth": 2, "input_dim": 8, "n_embed": 128, "projector_type": "mlp_gelu"}},
    "gen_head_config": {"cls": "vision_head", "model_type": "gen_head",
                        "params": {"image_token_embed": 128, "image_token_size": 512, "n_embed": 128}},
    "gen_vision_config": {"cls": "VQ-16", "model_type": "gen_vision",
                          "params": {"image_token_size": 512, "n_embed": 8}},
    "language_config": {"hidden_size": 128, "intermediate_size": 352, "max_position_embeddings": 512,
                        "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 2,
                        "num_key_value_heads": 4, "torch_dtype": "float32", "vocab_size": 600},
    "model_type": "multi_modality",
    "torch_dtype": "float32",
    "transformers_version": "4.33.1",
    "vision_config": {"cls": "CLIPVisionTower", "model_type": "vision",
                      "params": {"image_size": 32, "model_name": "siglip_large_patch16_384",
                                 "select_feature": "same", "select_layer": -1}},
}


def train_tokenizer():
    tok = Tokenizer(models.BPE())
    base = json.loads(tok.to_str())
    base["pre_tokenizer"] = DEEPSEEK_PRE_TOKENIZER
    base["decoder"] = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    tok = Tokenizer.from_str(json.dumps(base))
    corpus = ["A photo of a cat sitting on a red sofa, highly detailed, oil painting, 4k.",
              "An astronaut riding a horse on the moon. A watercolor of a lighthouse at dawn.",
              "<|User|>: a cute corgi in a spacesuit\n\n<|Assistant|>:"] * 5
    trainer = trainers.BpeTrainer(vocab_size=560, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False, special_tokens=[])
    tok.train_from_iterator(corpus, trainer)
    t = json.loads(tok.to_str())
    t["added_tokens"] = [{"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, c in sorted(SPECIALS.items())]
    for i, c in SPECIALS.items():  # the library keeps an added token's id only when the vocabulary has it there
        t["model"]["vocab"][c] = i
    t["normalizer"] = {"type": "Sequence", "normalizers": []}
    t["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {BOS: {"id": BOS, "ids": [590], "tokens": [BOS]}}}
    assert max(t["model"]["vocab"].values()) < 600
    return t


gen = torch.Generator().manual_seed(17)
tensors = read_safetensors(weights_path)
# What the official checkpoint also holds and image generation never reads.
unused = {
    "language_model.lm_head.weight": (600, 128),
    "vision_model.vision_tower.patch_embed.proj.weight": (64, 3, 16, 16),
    "vision_model.vision_tower.norm.weight": (64,),
    "aligner.layers.0.weight": (128, 64), "aligner.layers.0.bias": (128,),
    "aligner.layers.2.weight": (128, 128), "aligner.layers.2.bias": (128,),
    "gen_vision_model.encoder.conv_in.weight": (32, 3, 3, 3), "gen_vision_model.encoder.conv_in.bias": (32,),
    "gen_vision_model.quant_conv.weight": (8, 64, 1, 1), "gen_vision_model.quant_conv.bias": (8,),
    "gen_vision_model.quantize.codebook_used": (65536,),
}
for name, shape in unused.items():
    tensors[name] = torch.randn(shape, generator=gen)
names = list(tensors)
halves = [names[: len(names) // 2], names[len(names) // 2:]]
tokenizer_json = train_tokenizer()

for layout in ("safetensors", "bin"):
    folder = os.path.join(out_dir, layout)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json, f, ensure_ascii=False, indent=1)
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"add_bos_token": True, "add_eos_token": False, "bos_token": BOS, "eos_token": EOS,
                   "model_max_length": 16384, "pad_token": None, "tokenizer_class": "LlamaTokenizerFast",
                   "legacy": True, "clean_up_tokenization_spaces": False}, f, ensure_ascii=False, indent=1)
    with open(os.path.join(folder, "special_tokens_map.json"), "w", encoding="utf-8") as f:
        json.dump({"bos_token": BOS, "eos_token": EOS, "pad_token": PAD}, f, ensure_ascii=False, indent=1)
    with open(os.path.join(folder, "processor_config.json"), "w") as f:
        json.dump({"image_tag": "<image_placeholder>", "pad_tag": PAD, "sft_format": "deepseek",
                   "num_image_tokens": 576, "processor_class": "VLChatProcessor"}, f, indent=1)
    weight_map = {}
    stem, ext = ("model", "safetensors") if layout == "safetensors" else ("pytorch_model", "bin")
    for i, part in enumerate(halves):
        file = f"{stem}-{i + 1:05d}-of-00002.{ext}"
        shard = {n: tensors[n] for n in part}
        if layout == "safetensors":
            write_safetensors(os.path.join(folder, file), shard)
        else:
            torch.save(state_dict(shard.items()), os.path.join(folder, file))
        weight_map.update({n: file for n in part})
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    with open(os.path.join(folder, f"{stem}.{ext}.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)
print(f"wrote {out_dir}/safetensors and {out_dir}/bin")
