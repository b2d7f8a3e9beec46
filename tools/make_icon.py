#!/usr/bin/env python3
"""Draws KV Studio's application icon: a 5x5 token grid as the window's cache
map shows it (teal: still cached, dark red: evicted, amber: the line being
drawn, outlined: not generated yet) on a dark rounded square. Writes the
scalable SVG and the hicolor PNG sizes into installer/linux/icons/.

    .venv/bin/python tools/make_icon.py

The PNGs are rasterised here (signed distance of rounded rectangles, 4x4
supersampling) with torch, which the project's environment already has, so
that no image tool is needed.
"""
import pathlib
import struct
import zlib

import torch

CELLS = ["ttttt", "trrtt", "rrttr", "tttra", "aa..."]
COLOURS = {"t": (0x2B, 0xB3, 0xA3), "r": (0x8C, 0x2F, 0x3A), "a": (0xF0, 0xA0, 0x30)}
BACKGROUND = (0x1E, 0x21, 0x28)
OUTLINE = (0x4A, 0x50, 0x60)
SIZES = [16, 24, 32, 48, 64, 128, 256, 512]
# Geometry on a 256-unit canvas.
PLATE = (8, 8, 240, 240, 44)  # x, y, width, height, corner radius
CELL, GAP, ORIGIN, CELL_RADIUS, STROKE = 36, 8, 20, 7, 3


def shapes():
    """(x, y, w, h, radius, colour, filled) in drawing order."""
    out = [(*PLATE, BACKGROUND, True)]
    for r, row in enumerate(CELLS):
        for c, ch in enumerate(row):
            x, y = ORIGIN + c * (CELL + GAP), ORIGIN + r * (CELL + GAP)
            if ch == ".":
                out.append((x, y, CELL, CELL, CELL_RADIUS, OUTLINE, False))
            else:
                out.append((x, y, CELL, CELL, CELL_RADIUS, COLOURS[ch], True))
    return out


def svg():
    lines = ['<svg xmlns="http://www.w3.org/2000/svg" width="256" height="256" viewBox="0 0 256 256">']
    for x, y, w, h, rad, (r, g, b), filled in shapes():
        colour = f"#{r:02x}{g:02x}{b:02x}"
        paint = f'fill="{colour}"' if filled else f'fill="none" stroke="{colour}" stroke-width="{STROKE}"'
        lines.append(f'  <rect x="{x}" y="{y}" width="{w}" height="{h}" rx="{rad}" {paint}/>')
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def rounded_rect_distance(px, py, x, y, w, h, rad):
    """Signed distance (negative inside) from points to a rounded rectangle."""
    cx, cy = x + w / 2, y + h / 2
    qx = (px - cx).abs() - (w / 2 - rad)
    qy = (py - cy).abs() - (h / 2 - rad)
    outside = torch.sqrt(qx.clamp(min=0) ** 2 + qy.clamp(min=0) ** 2)
    inside = torch.maximum(qx, qy).clamp(max=0)
    return outside + inside - rad


def raster(size, supersample=4):
    n = size * supersample
    step = 256.0 / n
    coords = (torch.arange(n, dtype=torch.float64) + 0.5) * step
    py, px = torch.meshgrid(coords, coords, indexing="ij")
    rgba = torch.zeros(n, n, 4, dtype=torch.float64)
    for x, y, w, h, rad, colour, filled in shapes():
        d = rounded_rect_distance(px, py, x, y, w, h, rad)
        cover = (d <= 0) if filled else (d.abs() <= STROKE / 2)
        a = cover.to(torch.float64)
        c = torch.tensor(colour, dtype=torch.float64) / 255.0
        rgba[..., :3] = rgba[..., :3] * (1 - a[..., None]) + c * a[..., None]
        rgba[..., 3] = rgba[..., 3] * (1 - a) + a
    # Box-filter down; colours weighted by coverage (premultiplied), then un-premultiplied.
    pre = torch.cat([rgba[..., :3] * rgba[..., 3:4], rgba[..., 3:4]], dim=-1)
    pre = pre.reshape(size, supersample, size, supersample, 4).mean(dim=(1, 3))
    alpha = pre[..., 3:4]
    rgb = torch.where(alpha > 0, pre[..., :3] / alpha.clamp(min=1e-12), torch.zeros_like(pre[..., :3]))
    out = torch.cat([rgb, alpha], dim=-1)
    return (out * 255).round().clamp(0, 255).to(torch.uint8)


def png_bytes(pixels):
    h, w, _ = pixels.shape
    raw = b"".join(b"\x00" + bytes(pixels[y].flatten().tolist()) for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main():
    out = pathlib.Path(__file__).resolve().parent.parent / "installer" / "linux" / "icons"
    out.mkdir(parents=True, exist_ok=True)
    (out / "kvstudio.svg").write_text(svg())
    for size in SIZES:
        (out / f"kvstudio-{size}.png").write_bytes(png_bytes(raster(size)))
    print(f"wrote {out}/kvstudio.svg and {len(SIZES)} PNG sizes")


if __name__ == "__main__":
    main()
