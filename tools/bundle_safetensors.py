"""Reads a KV Studio bundle's .safetensors file into torch tensors without the
`safetensors` package (the speed-comparison tools run on the project's venv,
which has torch only). Shared by tools/*_official_speed.py."""
import json
import os
import struct

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I8": torch.int8}
ROW_SCALE = "::row_scale"  # row-scaled int8 storage: NAME (I8) * NAME::row_scale (F32, one per row)


def read_safetensors(path):
    """name -> tensor views of one file (8-byte header length, JSON header, data)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
    storage = torch.from_file(path, shared=False, size=os.path.getsize(path), dtype=torch.uint8)
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = storage[8 + n + b: 8 + n + end]
        if (8 + n + b) % DTYPES[e["dtype"]].itemsize:  # an int8 tensor before it can misalign the next
            raw = raw.clone()
        out[name] = raw.view(DTYPES[e["dtype"]]).reshape(e["shape"])
    for name in [k for k in out if k.endswith(ROW_SCALE)]:
        owner = name[: -len(ROW_SCALE)]
        scale = out.pop(name)
        out[owner] = out[owner].float() * scale.reshape([-1] + [1] * (out[owner].dim() - 1))
    return out
