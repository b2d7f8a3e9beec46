#!/usr/bin/env python3
"""Writes the seed corpora of the libFuzzer targets (tests/fuzz/corpus/<target>/).

Usage: tools/make_fuzz_seeds.py [CORPUS_DIR]   (default: tests/fuzz/corpus)

Run with the project venv's python: the checkpoint seeds are real torch.save
files. Every seed is small (the targets' -max_len is at most 20 KB); runs with
the same PyTorch differ only in the random serialization id torch.save records.
"""
import collections
import io
import json
import os
import struct
import sys
import zipfile
import zlib

import torch


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    assert len(data) < 20000, (name, len(data))
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def torch_bytes(obj, **kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf, **kwargs)
    return buf.getvalue()


def checkpoints(out):
    torch.manual_seed(7)
    net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.LayerNorm(2))
    sd = net.state_dict()  # an OrderedDict with _metadata
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    seeds = {
        "plain_state_dict.pt": (sd, {}),
        "model_wrapped.pt": ({"model": sd, "steps": 3}, {}),
        "views_sharing_storage.pt": ({"all": base, "row": base[1], "col": base[:, 2], "t": base.t(),
                                      "expanded": torch.ones(2, 1).expand(2, 3), "empty": torch.zeros(0, 2)}, {}),
        "half_bf16.pt": ({"h": torch.randn(4).half(), "b": torch.randn(2, 2).bfloat16(),
                          "i": torch.arange(3), "flag": torch.tensor([True, False])}, {}),
        "nested_ordered_dict.pt": ({"state_dict": collections.OrderedDict(sd), "meta": {"epoch": 1, "tags": ["a"]}},
                                   {}),
        "protocol2.pt": ({"module": sd}, {"pickle_protocol": 2}),
        "protocol4.pt": ({"model": sd, "args": {"lr": 0.5, "big": 2**70, "blob": b"\x00\x01"}},
                         {"pickle_protocol": 4}),
        "parameters.pt": ({"w": torch.nn.Parameter(torch.randn(2, 2))}, {}),
    }
    for name, (obj, kwargs) in seeds.items():
        data = torch_bytes(obj, **kwargs)
        write(os.path.join(out, "torch_checkpoint"), name, data)
        # The same file's data.pkl alone seeds the pickle machine's own target.
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            pkl = next(n for n in z.namelist() if n.endswith("/data.pkl"))
            write(os.path.join(out, "pickle"), name.replace(".pt", ".pkl"), z.read(pkl))


def manifests(out):
    folder = os.path.join(out, "model_manifest")
    base = {"format": "kvstudio-bundle", "format_version": 1, "name": "tiny", "family": "llamagen",
            "architecture": {"n_layer": 2, "n_head": 2, "dim": 64}, "tokenizer": {"codebook_size": 16},
            "files": {"weights": "weights.safetensors"}, "class_names": ["cat", "dog"],
            "sampling_defaults": {"cfg": 4.0, "temperature": 1.0}, "provenance": {"source": "random"}}
    write(folder, "llamagen.json", json.dumps(base, indent=1))
    var = dict(base, family="var", files={"weights": "sub/var.safetensors"})
    var.pop("class_names")
    write(folder, "var.json", json.dumps(var))
    write(folder, "minimal.json", json.dumps({"format": "kvstudio-bundle", "format_version": 1, "family": "mar",
                                               "architecture": {}, "files": {"weights": "w.safetensors"}}))


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def png(width, height, color_type, bit_depth, rows, text=(), palette=None):
    out = b"\x89PNG\r\n\x1a\n"
    out += png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0))
    if palette:
        out += png_chunk(b"PLTE", palette)
    for kind, data in text:
        out += png_chunk(kind, data)
    raw = b"".join(b"\x00" + r for r in rows)
    out += png_chunk(b"IDAT", zlib.compress(raw))
    out += png_chunk(b"IEND", b"")
    return out


def pngs(out):
    folder = os.path.join(out, "png_metadata")
    meta = json.dumps({"request": {"class_ids": [3], "seed": 1, "policy": "full"}, "class_id": 3})
    itxt = b"kvstudio\x00\x00\x00\x00\x00" + meta.encode()
    params = b"parameters\x00\x00\x00\x00\x00class 3\nSteps: 256, Seed: 1"
    rgb_rows = [bytes((x * 40 + y * 7) % 256 for x in range(4 * 3)) for y in range(4)]
    write(folder, "rgb_itxt.png", png(4, 4, 2, 8, rgb_rows, [(b"iTXt", params), (b"iTXt", itxt)]))
    write(folder, "gray_text.png", png(3, 2, 0, 8, [b"\x00\x80\xff", b"\x10\x20\x30"],
                                       [(b"tEXt", b"Comment\x00plain latin-1 text")]))
    write(folder, "palette_ztxt.png", png(2, 2, 3, 8, [b"\x00\x01", b"\x01\x00"],
                                          [(b"zTXt", b"Title\x00\x00" + zlib.compress(b"compressed text"))],
                                          palette=b"\xff\x00\x00\x00\x00\xff"))
    write(folder, "rgba16.png", png(2, 1, 6, 16, [bytes(range(16))]))
    compressed_itxt = b"kvstudio\x00\x01\x00\x00\x00" + zlib.compress(meta.encode())
    write(folder, "compressed_itxt.png", png(1, 1, 2, 8, [b"\x01\x02\x03"], [(b"iTXt", compressed_itxt)]))


def tokenizers(out):
    folder = os.path.join(out, "tokenizer")
    alphabet = {chr(c): i for i, c in enumerate(range(ord("a"), ord("z") + 1))}
    alphabet.update({"Ġ": 26, "th": 27, "the": 28, "Ġthe": 29, "1": 30, "2": 31})
    merges = ["t h", "th e", "Ġ the"]
    byte_level = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 32, "content": "<|User|>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True},
                         {"id": 33, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [33], "tokens": ["<s>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": alphabet,
                  "merges": merges},
    }
    write(folder, "byte_level.json", json.dumps(byte_level))
    split = json.loads(json.dumps(byte_level))
    split["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "[\r\n]"}, "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"Regex": "\\s?\\p{L}+"}, "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"String": "-"}, "behavior": "Removed", "invert": False},
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}
    split["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
    split["model"]["merges"] = [["t", "h"], ["th", "e"]]
    split["post_processor"] = None
    write(folder, "split_sequence.json", json.dumps(split))
    config = {"add_bos_token": True, "bos_token": {"content": "<s>"}, "tokenizer_class": "LlamaTokenizerFast",
              "model_max_length": 1e30}
    # tokenizer.json, a NUL byte, then tokenizer_config.json (the target's input layout).
    write(folder, "with_config.bin", json.dumps(byte_level).encode() + b"\x00" + json.dumps(config).encode())


def calibrations(out):
    folder = os.path.join(out, "calibration")
    heat = {"format": "kvstudio-scale-attention-profile", "version": 1, "model": "tiny", "layers": 1, "heads": 2,
            "unit_tokens": [1, 4, 9], "classes": [0, 1], "seed": 0, "cfg": 4.0, "samples": 2,
            "beta": [1, 0, 0, 0.25, 0.75, 0, 0.1, 0.3, 0.6,
                     1, 0, 0, 0.5, 0.5, 0, 0.2, 0.2, 0.6]}
    write(folder, "heatkv.json", json.dumps(heat, indent=1))
    ams = {"format": "kvstudio-amskv-calibration", "version": 1, "model": "tiny", "created": "2026-11-25T00:00:00Z",
           "command": "calibrate", "layers": 2, "unit_tokens": [1, 4, 9], "classes": [0], "seed": 0, "cfg": 4.0,
           "cds": 1, "c_min": 5, "c_max": 14, "decision_scales": [2], "demanding_fraction": 0.5,
           "target_layers": 1, "demanding_layers": 1, "theta": 0.5, "layer_statistic": [0.4, 0.6],
           "similarity": [[[0.9, 0.4], [0.8, 0.6]]]}
    write(folder, "amskv.json", json.dumps(ams, indent=1))
    hack = {"format": "kvstudio-head-variance-profile", "version": 1, "model": "tiny", "layers": 2, "heads": 2,
            "unit_tokens": [1, 4, 9], "classes": [0, 1], "seed": 0, "cfg": 4.0, "samples": 2,
            "variance": [0, 1.5, 2.0, 0, 0.5, 0.25, 0, 3.0, 2.5, 0, 0.1, 0.2]}
    write(folder, "hack.json", json.dumps(hack, indent=1))
    scalekv = {"format": "kvstudio-scalekv-calibration", "version": 1, "model": "tiny", "layers": 2,
               "unit_tokens": [1, 4, 9], "top_k": 16, "classes": [0, 1], "seed": 0, "cfg": 4.0, "samples": 2,
               "current_ratio": [1.0, 0.6, 0.4, 1.0, 0.3, 0.2], "history_top_k": [0, 0.4, 0.5, 0, 0.7, 0.8]}
    write(folder, "scalekv.json", json.dumps(scalekv, indent=1))


def prompts(out):
    folder = os.path.join(out, "bench_prompts")
    write(folder, "classes.txt", "# bench prompts\nforest\tA forest at dawn, the sun low on the left\n"
                                 "\tno class here\nA desert at night with a yellow moon\r\n\n"
                                 "  sunset_sea \tThe sea at sunset\n")
    write(folder, "plain.txt", "An astronaut riding a horse\nA bowl of ramen\n")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fuzz",
                                                             "corpus")
    checkpoints(out)
    manifests(out)
    pngs(out)
    tokenizers(out)
    calibrations(out)
    prompts(out)


if __name__ == "__main__":
    main()
