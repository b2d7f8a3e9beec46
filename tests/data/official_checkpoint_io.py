"""Shared by the make_*_checkpoints.py scripts: reading the conformance case's
weights and writing shards (safetensors, without the safetensors package) and building state dicts
the way nn.Module.state_dict() returns them, so torch.save writes the official
on-disk format."""
import collections
import json
import struct

import torch

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
          "I32": torch.int32, "U8": torch.uint8}


def read_safetensors(path):
    """name -> tensor, in file order."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = collections.OrderedDict()
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:end]), dtype=DTYPES[e["dtype"]]) if end > b else torch.empty(0)
        out[name] = t.reshape(e["shape"]).clone()
    return out


def state_dict(items):
    """An OrderedDict with the `_metadata` attribute nn.Module.state_dict() attaches."""
    sd = collections.OrderedDict(items)
    sd._metadata = collections.OrderedDict({"": {"version": 1}})
    return sd


def write_safetensors(path, tensors):
    """name -> tensor into a safetensors file as the safetensors package writes it."""
    names = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        dtype = next(k for k, v in names.items() if v == t.dtype)
        data = bytes(t.contiguous().view(torch.uint8).reshape(-1).tolist()) if t.numel() else b""
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
