#!/usr/bin/env python3
"""Checks that a PNG (8-bit RGB/RGBA, as headless Chromium writes) is a picture of something:
decodes it with zlib (numpy when installed, else plain Python), samples every fourth pixel
of every fourth row, and fails when it has fewer than 8 colours or one colour covers 97%."""
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
at, idat, w = 8, b"", 0
while at < len(data):
    n, kind = struct.unpack(">I4s", data[at:at + 8])
    body = data[at + 8:at + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), f"PNG depth {depth} colour type {ctype}"
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    at += 12 + n
raw, stride = zlib.decompress(idat), w * bpp
assert len(raw) == h * (stride + 1), "truncated image data"
try:
    import numpy as np
except ImportError:
    np = None
colours = {}
if np is not None:
    img = np.frombuffer(raw, dtype=np.uint8).reshape(h, stride + 1)
    out = np.zeros((h, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int32)
    for y in range(h):
        f, line = img[y, 0], img[y, 1:].astype(np.int32)
        if f == 1:
            line = np.cumsum(line.reshape(w, bpp), axis=0).reshape(-1) & 255
        elif f == 2:
            line = (line + prev) & 255
        elif f in (3, 4):
            line, p = line.tolist(), prev.tolist()
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = p[i]
                if f == 3:
                    line[i] = (line[i] + (a + b) // 2) & 255
                else:
                    c = p[i - bpp] if i >= bpp else 0
                    q = a + b - c
                    pa, pb, pc = abs(q - a), abs(q - b), abs(q - c)
                    line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            line = np.array(line, dtype=np.int32)
        out[y] = line
        prev = line
    px = out[::4].reshape(-1, w, bpp)[:, ::4, :3].reshape(-1, 3)
    keys, counts = np.unique(px, axis=0, return_counts=True)
    ncolours, top, total = len(keys), int(counts.max()), int(counts.sum())
else:
    prev = bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                q = a + b - c; pa, pb, pc = abs(q - a), abs(q - b), abs(q - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 4 == 0:
            for x in range(0, w, 4):
                k = bytes(line[x * bpp:x * bpp + 3])
                colours[k] = colours.get(k, 0) + 1
        prev = line
    ncolours, top, total = len(colours), max(colours.values()), sum(colours.values())
print(f"{sys.argv[1].rsplit('/', 1)[1]}: {w}x{h}, {ncolours} colours, the commonest {100 * top / total:.1f}%")
assert ncolours >= 8, "almost one colour"
assert top / total < 0.97, "nearly all one colour"
