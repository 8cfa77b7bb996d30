#!/usr/bin/env python3
"""Writes the hostile inputs of tests/hostile/hostile_inputs.sh into a directory (argv[1]):
safetensors headers that overflow, nest 200,000 deep, claim a giant header, name no tensors, hold a
control character in a name or 100,000 tensors, and a valid file holding every dtype."""
import json
import os
import struct
import sys

out = sys.argv[1]


def safetensors(name, header_text, data=b""):
    header = header_text.encode() if isinstance(header_text, str) else header_text
    header += b" " * ((8 - len(header) % 8) % 8)
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


safetensors("overflow_float.safetensors", '{"w":{"dtype":"BF16","shape":[1e999999],"data_offsets":[0,2]}}', b"\0\0")
safetensors("overflow_int.safetensors", '{"w":{"dtype":"BF16","shape":[99999999999999999999999999],"data_offsets":[0,2]}}', b"\0\0")
safetensors("deep.safetensors", '{"w":{"dtype":"BF16","shape":' + "[" * 200000 + "]" * 200000 + "}}")
safetensors("no_tensors.safetensors", "{}")
safetensors("nul_name.safetensors", '{"a\\u0000b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}', b"\0\0")
with open(os.path.join(out, "giant_header.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", 200_000_000) + b"{" + b" " * 1000)
many = {f"t{i}": {"dtype": "BF16", "shape": [1], "data_offsets": [2 * i, 2 * i + 2]} for i in range(100000)}
safetensors("many.safetensors", json.dumps(many), b"\0" * 200000)
# Every dtype dcr reads, one small tensor each: a file `dcr convert` accepts.
widths = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I64": 8, "I32": 4, "U8": 1, "F8_E4M3": 1, "F8_E5M2": 1}
header, offset = {}, 0
for i, (dtype, width) in enumerate(widths.items()):
    header[f"layers.0.w{i}.weight"] = {"dtype": dtype, "shape": [2, 2], "data_offsets": [offset, offset + 4 * width]}
    offset += 4 * width
safetensors("every_dtype.safetensors", json.dumps(header), bytes(range(offset % 256)) + b"\1" * (offset - offset % 256))
