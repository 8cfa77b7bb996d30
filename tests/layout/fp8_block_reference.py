#!/usr/bin/python3
"""An independent block-FP8 quantizer (numpy), written from the rule in include/dcr/layout/fp8_block.h
and not from dcr's code: E4M3 by a nearest-value search over the table of every finite code (ties to
the even code), where dcr uses exponent and mantissa arithmetic.

Usage: fp8_block_reference.py DIR ROWS COLS
  reads DIR/weight.bf16 (uint16 little-endian, row-major), DIR/dcr.e4m3 and DIR/dcr.scales
  (float32), and exits 1 naming the first byte or scale that differs.
"""
import sys

import numpy as np

BLOCK = 128


def e4m3_magnitudes():
    """Values of the magnitude codes 0x00..0x7E (0x7F is NaN), ascending."""
    values = []
    for code in range(0x7F):
        exponent, mantissa = code >> 3, code & 7
        values.append(mantissa * 2.0 ** -9 if exponent == 0 else (1 + mantissa / 8) * 2.0 ** (exponent - 7))
    return np.array(values)


def to_e4m3(q):
    """float32 array -> E4M3 codes: nearest finite value, ties to the even code, saturating at 448."""
    table = e4m3_magnitudes()
    a = np.minimum(np.abs(q.astype(np.float64)), 448.0)
    hi = np.clip(np.searchsorted(table, a), 1, len(table) - 1)
    lo = hi - 1
    d_lo, d_hi = a - table[lo], table[hi] - a
    pick = np.where(d_lo < d_hi, lo, np.where(d_hi < d_lo, hi, np.where(lo % 2 == 0, lo, hi)))
    return (pick.astype(np.uint8) | np.where(np.signbit(q), 0x80, 0).astype(np.uint8)).astype(np.uint8)


def quantize(w):
    rows, cols = w.shape
    codes = np.zeros((rows, cols), np.uint8)
    scales = np.zeros(((rows + BLOCK - 1) // BLOCK, (cols + BLOCK - 1) // BLOCK), np.float32)
    for br in range(scales.shape[0]):
        for bc in range(scales.shape[1]):
            block = w[br * BLOCK:(br + 1) * BLOCK, bc * BLOCK:(bc + 1) * BLOCK]
            amax = np.float32(np.max(np.abs(block)))
            scale = np.float32(1.0) if amax == 0 else np.float32(amax) / np.float32(448.0)
            scales[br, bc] = scale
            codes[br * BLOCK:(br + 1) * BLOCK, bc * BLOCK:(bc + 1) * BLOCK] = to_e4m3(block / scale)
    return codes, scales


def main():
    folder, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    bits = np.fromfile(folder + "/weight.bf16", np.uint16).reshape(rows, cols)
    w = (bits.astype(np.uint32) << 16).view(np.float32)
    codes, scales = quantize(w)
    got_codes = np.fromfile(folder + "/dcr.e4m3", np.uint8).reshape(rows, cols)
    got_scales = np.fromfile(folder + "/dcr.scales", np.float32).reshape(scales.shape)
    if not np.array_equal(got_scales.view(np.uint32), scales.view(np.uint32)):
        i = np.argwhere(got_scales.view(np.uint32) != scales.view(np.uint32))[0]
        print("scale of block %s: dcr %r, numpy %r" % (tuple(i), got_scales[tuple(i)], scales[tuple(i)]))
        return 1
    if not np.array_equal(got_codes, codes):
        i = tuple(np.argwhere(got_codes != codes)[0])
        print("E4M3 byte %s (x = %r): dcr 0x%02x, numpy 0x%02x" % (i, w[i], got_codes[i], codes[i]))
        return 1
    print("numpy agrees: %d bytes, %d scales" % (codes.size, scales.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
