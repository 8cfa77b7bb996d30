#!/usr/bin/python3
"""docs/api.md holds each example it names (<!-- examples/... --> before a code block) verbatim."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
page = open(os.path.join(root, "docs", "api.md")).read()
blocks = re.findall(r"<!-- (examples/\S+) -->\n```\w*\n(.*?)```", page, re.S)
failed = [path for path, code in blocks if open(os.path.join(root, path)).read() != code]
for path in failed:
    print(f"docs/api.md: the code block for {path} differs from the file")
print(f"{len(blocks) - len(failed)} of {len(blocks)} examples verbatim")
sys.exit(1 if failed or len(blocks) < 2 else 0)
