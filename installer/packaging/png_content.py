#!/usr/bin/env python3
"""Says whether a PNG has content (not a blank or single-colour image).

usage: png_content.py FILE [--min-colours N] [--min-stddev S]

Prints the size, the number of distinct colours, the luminance's standard
deviation and the share of pixels that differ from the most common colour;
exits 1 when the image looks blank. Standard library only (it runs on the
machine that checks the package, which need not have any imaging library):
8-bit grey, grey+alpha, RGB and RGBA PNGs without interlacing, the kinds Qt
and KV Studio write.
"""
import argparse
import struct
import sys
import zlib
from collections import Counter

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG file")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError(f"{path}: only 8-bit, non-interlaced grey/RGB(A) PNGs are read "
                         f"(depth {depth}, colour type {colour}, interlace {interlace})")
    bpp = CHANNELS[colour]
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        elif kind != 0:
            raise ValueError(f"{path}: bad filter type {kind} in row {y}")
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("png")
    parser.add_argument("--min-colours", type=int, default=32)
    parser.add_argument("--min-stddev", type=float, default=8.0)
    args = parser.parse_args()
    width, height, bpp, rows = read_png(args.png)
    colours = Counter()
    total = sum_l = sum_l2 = 0
    for row in rows:
        for x in range(0, len(row), bpp):
            pixel = row[x:x + min(bpp, 3)]
            colours[pixel] += 1
            lum = sum(pixel) / len(pixel)
            sum_l += lum
            sum_l2 += lum * lum
            total += 1
    mean = sum_l / total
    stddev = max(0.0, sum_l2 / total - mean * mean) ** 0.5
    other = 1 - colours.most_common(1)[0][1] / total
    ok = len(colours) >= args.min_colours and stddev >= args.min_stddev
    print(f"{args.png}: {width}x{height}, {len(colours)} colours, luminance stddev {stddev:.1f}, "
          f"{100 * other:.1f} % of pixels not the most common colour: {'content' if ok else 'BLANK'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
