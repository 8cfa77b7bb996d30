"""Checks the frame counts of a `dcr refit --json` record (tests/mpi/CMakeLists.txt).

Every frame a trainer sends is forwarded by the relay and applied by at least one rollout, so with
one relay the hops (`frames`) are at least three times the frames the trainers sent
(`trainer_frames`), and the trainers' wire bytes hold at least a 120-byte header a frame. Each
delta step says how many of the trainers' frames took value packing contexts under --contexts auto
(the default), how many auto kept in the faster coding, and the link rate it weighed them at: with
no --link-gbps, the rate the trainers' sends measured in the version before.
"""
import json
import sys

doc = json.load(open(sys.argv[1]))
assert doc["steps"], "no steps recorded"
for step in doc["steps"]:
    sent, hops = step["trainer_frames"], step["frames"]
    assert sent > 0, step
    assert hops >= 3 * sent, step
    assert step["wire_bytes"] >= 120 * sent, step
    contexts = step["contexts"]
    assert contexts["mode"] == "auto", step
    if step["kind"] == "delta":
        assert contexts["frames"] + contexts["declined"] <= sent, step
        assert contexts["link"] == "measured" and contexts["link_gbps"] > 0, step
print("trainer frames per step:", [s["trainer_frames"] for s in doc["steps"]], "hops:", [s["frames"] for s in doc["steps"]])
