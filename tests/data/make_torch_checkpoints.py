#!/usr/bin/env python3
"""Writes torch.save checkpoints for tests/engine/test_torch_checkpoint.cpp.

Usage: make_torch_checkpoints.py OUTDIR

Run with the project venv's python (it needs torch). Besides the checkpoints it
writes OUTDIR/expected.json:
  {"torch_version": "...",
   "valid": {"<file>": [{"key", "shape", "dtype", "sum", "wsum"}, ...]},   # in order
   "invalid": ["<file>", ...]}
"sum" is the sum of the tensor's elements and "wsum" the sum of element i times i
(in row-major order), so a reader that gets the order of elements wrong (strides,
storage offsets) fails even when the plain sum matches. Every valid checkpoint is
read back with torch.load(weights_only=...) here, so the expectations are what
PyTorch itself returns.
"""
import argparse
import contextlib
import json
import os
import sys

import torch
import torch.serialization


class TinyNet(torch.nn.Module):
    """A module with the usual kinds of state: weights, biases, norms, a buffer."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(5, 4)
        self.proj = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(3, 3, bias=False) for _ in range(2)])
        self.register_buffer("counts", torch.arange(6, dtype=torch.int64).reshape(2, 3))

    def forward(self, idx):
        x = self.norm(self.proj(self.embed(idx)))
        for block in self.blocks:
            x = block(x)
        return x


def describe(state_dict):
    out = []
    for key, t in state_dict.items():
        flat = t.detach().to(torch.float64).reshape(-1)
        out.append({
            "key": key,
            "shape": list(t.shape),
            "dtype": str(t.dtype).removeprefix("torch."),
            "sum": float(flat.sum()),
            "wsum": float((flat * torch.arange(flat.numel(), dtype=torch.float64)).sum()),
        })
    return out


@contextlib.contextmanager
def storage_location(tag):
    """Makes torch.save record every storage at `tag` (e.g. "cuda:0") without a GPU."""
    saved = torch.serialization.location_tag
    torch.serialization.location_tag = lambda storage: tag
    try:
        yield
    finally:
        torch.serialization.location_tag = saved


@contextlib.contextmanager
def dtype_storage_types():
    """Makes torch.save name storages by dtype (GLOBAL 'torch float16') instead of
    by storage class ('torch HalfStorage'), as other writers of the format do."""
    cls = torch.storage.TypedStorage
    saved = cls._pickle_storage_type
    cls._pickle_storage_type = lambda self: str(self.dtype).removeprefix("torch.")
    try:
        yield
    finally:
        cls._pickle_storage_type = saved


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1234)

    net = TinyNet()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    net(torch.tensor([[0, 1, 2], [3, 4, 0]])).square().sum().backward()
    opt.step()
    sd = net.state_dict()  # an OrderedDict with a _metadata attribute
    assert hasattr(sd, "_metadata")

    valid = {}  # file -> the state dict the reader must return

    def save(name, obj, state_dict, check_load=True, **kwargs):
        path = os.path.join(out, name)
        torch.save(obj, path, **kwargs)
        if check_load:  # the expectations must be what PyTorch itself reads back
            loaded = torch.load(path, map_location="cpu", weights_only=False)
            for k in ("model", "module", "state_dict"):
                if isinstance(loaded, dict) and isinstance(loaded.get(k), dict):
                    loaded = loaded[k]
                    break
            assert list(loaded) == list(state_dict), name
            for k, v in state_dict.items():
                assert torch.equal(loaded[k], v), (name, k)
        valid[name] = describe(state_dict)
        return path

    wrapped = save("model_wrapped.pt", {"model": sd}, sd)
    save("raw_state_dict.pt", sd, sd)
    save("training.pt", {
        "model": sd,
        "optimizer": opt.state_dict(),
        "steps": 10,
        "args": argparse.Namespace(lr=1e-3, name="tiny", betas=(0.9, 0.95), layers=[1, 2]),
        # Values the reader must skip without understanding them.
        "extra": {"seed": 2**70, "negative": -5, "tags": {"a", "b"}, "blob": b"\x00\x01",
                  "ratio": 0.25, "nothing": None, "rng": torch.get_rng_state()},
    }, sd)
    save("state_dict_key.pt", {"epoch": 3, "state_dict": sd}, sd)
    save("module_protocol5.pt", {"module": sd, "step": 7}, sd, pickle_protocol=5)
    save("training_protocol4.pt", {"model": sd, "optimizer": opt.state_dict(),
                                   "args": argparse.Namespace(lr=0.5)}, sd, pickle_protocol=4)

    dtypes = {
        "half": torch.randn(3, 4).half(),
        "bf16": torch.randn(2, 5).bfloat16(),
        "double": torch.randn(3).double(),
        "int32": torch.arange(-3, 3, dtype=torch.int32),
        "int16": torch.arange(4, dtype=torch.int16),
        "int8": torch.tensor([-128, 0, 127], dtype=torch.int8),
        "uint8": torch.tensor([0, 200, 255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5),
    }
    save("dtypes.pt", dtypes, dtypes)

    # Views: the reader must honour storage offsets and strides, including views that
    # share one storage, a stride of 0 (expand) and empty tensors.
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    views = {
        "transposed_slice": base[1:5, 2:8].t(),  # shape [6, 4], stride [1, 10], offset 12
        "row": base[3],                          # offset 30, same storage
        "every_other": base[:, ::2],             # stride [10, 2]
        "expanded": torch.tensor([1.0, 2.0, 3.0]).unsqueeze(1).expand(3, 4),
        "empty": torch.zeros(0, 3),
    }
    assert not views["transposed_slice"].is_contiguous()
    save("views.pt", views, views)

    params = {"weight": torch.nn.Parameter(torch.randn(2, 3)), "bias": torch.randn(3, requires_grad=True)}
    save("parameters.pt", params, params)

    with storage_location("cuda:0"):
        save("cuda_location.pt", {"model": sd}, sd)

    typed = {"h": torch.randn(4).half(), "f": torch.randn(2, 2), "i": torch.arange(3)}
    with dtype_storage_types():
        # torch.load cannot read these ids back; compare against the saved tensors.
        save("dtype_storage_types.pt", typed, typed, check_load=False)

    # Files the reader must reject with a clear message.
    invalid = []
    with open(os.path.join(out, "not_a_checkpoint.pt"), "w") as f:
        f.write("this is a text file, not a checkpoint\n")
    invalid.append("not_a_checkpoint.pt")
    with open(wrapped, "rb") as f:
        data = f.read()
    with open(os.path.join(out, "truncated.pt"), "wb") as f:
        f.write(data[: len(data) // 2])
    invalid.append("truncated.pt")
    torch.save({"model": {"weight": torch.ones(2), "scale": 0.5}, "steps": 1}, os.path.join(out, "non_tensor.pt"))
    invalid.append("non_tensor.pt")
    torch.save([torch.ones(2)], os.path.join(out, "top_level_list.pt"))
    invalid.append("top_level_list.pt")
    torch.save({"w": torch.ones(2)}, os.path.join(out, "legacy_format.pt"), _use_new_zipfile_serialization=False)
    invalid.append("legacy_format.pt")

    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"torch_version": torch.__version__, "valid": valid, "invalid": invalid}, f, indent=1)
    print(f"wrote {len(valid)} checkpoints and {len(invalid)} invalid files to {out}")


if __name__ == "__main__":
    main()
