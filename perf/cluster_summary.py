#!/usr/bin/python3
"""Tables of perf/bench_cluster.sh: reads DIR/*.json (dcr refit --json, plus the WAN's rate and the
bytes it carried), prints Markdown, and writes DIR/summary.json and the CSV files plot_cluster.gp
draws (DIR/limit.csv, DIR/scaling.csv). Runs are named <job>-<apply mode>.json (stream, staged;
older results: <job>.json, streamed); each row says its mode (perf/apply_summary.py sets the two
side by side).

The link's limit of a refit is its bytes / the WAN's rate: wire bytes for a delta, the full frames'
bytes for a full refit. "x limit" is the measured time over that limit (1.0 is the link saturated
from the first byte to the commit); TCP/IP and Ethernet headers alone make it at least ~1.04.
"""
import glob
import json
import os
import re
import statistics
import sys


def load(out):
    """{job name: {"apply": mode, ...the run's JSON}}: the mode from the name's suffix, else streamed."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        name = os.path.basename(path)[:-5]
        if name in ("summary", "apply"):
            continue
        d = json.load(open(path))
        m = re.match(r"(.+)-(stream|staged)$", name)
        d["apply"] = m.group(2) if m else "stream"
        runs[(m.group(1) if m else name, d["apply"])] = d
    return runs


def limit_s(nbytes, gbit):
    return nbytes * 8 / (gbit * 1e9)


def link_rows(runs):
    rows = []
    for (name, mode), d in runs.items():
        m = re.match(r"rate-([0-9.]+)-(.+)$", name)
        if not m:
            continue
        gbit = d["wan_gbit"]
        for s in d["steps"]:
            if s["kind"] != "delta":
                continue
            delta_limit, full_limit = limit_s(s["wire_bytes"], gbit), limit_s(s["full_bytes"], gbit)
            rows.append({
                "wan_gbit": gbit, "model": m.group(2), "apply": mode, "version": s["version"], "changed_pct": 100 * s["change_rate"],
                "wire_bytes": s["wire_bytes"], "full_bytes": s["full_bytes"], "delta_s": s["seconds"],
                "full_s": s["full_seconds"], "delta_over_full": s["seconds"] / s["full_seconds"],
                "delta_limit_s": delta_limit, "delta_x_limit": s["seconds"] / delta_limit,
                "full_limit_s": full_limit, "full_x_limit": s["full_seconds"] / full_limit,
                "bitexact": s["bitexact"] and s["committed"]})
    rows.sort(key=lambda r: (r["wan_gbit"], r["model"], r["apply"] != "stream", r["version"]))
    return merge_checkpoint_steps(rows)


def merge_checkpoint_steps(rows):
    """The checkpoint sequence's steps (all about 3% changed) as one row per rate and mode: medians."""
    out, groups = [], {}
    for r in rows:
        if r["model"] == "checkpoints":
            groups.setdefault((r["wan_gbit"], r["apply"]), []).append(r)
        else:
            out.append(r)
    for (gbit, mode), group in groups.items():
        row = {k: statistics.median(g[k] for g in group) for k in group[0] if k not in ("model", "apply", "bitexact")}
        row.update(model="checkpoints (median of %d)" % len(group), apply=mode, bitexact=all(g["bitexact"] for g in group))
        out.append(row)
    out.sort(key=lambda r: (r["wan_gbit"], r["model"], r["changed_pct"], r["apply"] != "stream", r["version"]))
    return out


def depth_of(job):
    m = re.search(r"depth (\d+)", job)
    return int(m.group(1)) if m else 0


def scaling_rows(runs):
    rows = []
    for (name, mode), d in runs.items():
        m = re.match(r"nodes-(\d+)$", name)
        if not m:
            continue
        deltas = [s for s in d["steps"] if s["kind"] == "delta"]
        wire = sum(s["wire_bytes"] for s in deltas)
        seconds = sum(s["seconds"] for s in deltas)
        wan = d["wan_bytes"]
        rows.append({"rollout_nodes": int(m.group(1)), "apply": mode, "depth": depth_of(d["job"]), "delta_s": seconds,
                     "limit_s": limit_s(wire, d["wan_gbit"]), "x_limit": seconds / limit_s(wire, d["wan_gbit"]),
                     "wan_bytes_over_all_frames": wan / sum(s["wire_bytes"] for s in d["steps"]),
                     "bitexact": all(s["bitexact"] and s["committed"] for s in d["steps"])})
    rows.sort(key=lambda r: (r["apply"] != "stream", r["rollout_nodes"]))
    return rows


def emulation_rows(runs):
    rows = []
    for kind in ("emulated", "shaped"):
        for (name, mode), d in runs.items():
            if not name.startswith(kind + "-"):
                continue
            for s in d["steps"]:
                if s["kind"] == "delta":
                    rows.append({"link": kind, "apply": mode, "gbit": float(name.split("-", 1)[1]),
                                 "changed_pct": 100 * s["change_rate"],
                                 "delta_s": s["seconds"], "full_s": s["full_seconds"],
                                 "bitexact": s["bitexact"] and s["committed"]})
    return rows


def print_tables(link, scaling, emulation):
    print("### Delta and full refit on the shaped WAN, against the link's limit\n")
    print("| WAN Gbit/s | model | apply | changed | wire MB | full MB | delta s | full s | delta / full | "
          "delta x limit | full x limit | bit-exact |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in link:
        print("| %g | %s | %s | %.2f%% | %.3f | %.1f | %.3f | %.3f | %.3f | %.2f | %.2f | %s |" % (
            r["wan_gbit"], r["model"], r["apply"], r["changed_pct"], r["wire_bytes"] / 1e6, r["full_bytes"] / 1e6, r["delta_s"],
            r["full_s"], r["delta_over_full"], r["delta_x_limit"], r["full_x_limit"], "yes" if r["bitexact"] else "NO"))
    if scaling:
        print("\n### Rollout nodes (one relay each, fanout 2): the deltas of v1-v3 together\n")
        print("| rollout nodes | apply | tree depth | delta s | link limit s | x limit | WAN bytes / frame bytes | "
              "bit-exact |")
        print("|---|---|---|---|---|---|---|---|")
        for r in scaling:
            print("| %d | %s | %d | %.3f | %.3f | %.2f | %.2f | %s |" % (
                r["rollout_nodes"], r["apply"], r["depth"], r["delta_s"], r["limit_s"], r["x_limit"],
                r["wan_bytes_over_all_frames"], "yes" if r["bitexact"] else "NO"))
    if emulation:
        print("\n### `--link-gbps` (in-process token bucket, unshaped WAN) against the tbf-shaped WAN\n")
        print("| link | apply | Gbit/s | changed | delta s | full s | bit-exact |")
        print("|---|---|---|---|---|---|---|")
        for r in sorted(emulation, key=lambda r: (r["changed_pct"], r["apply"] != "stream", r["link"])):
            print("| %s | %s | %g | %.2f%% | %.3f | %.3f | %s |" % (
                r["link"], r["apply"], r["gbit"], r["changed_pct"], r["delta_s"], r["full_s"], "yes" if r["bitexact"] else "NO"))


def write_csv(out, link, scaling):
    with open(os.path.join(out, "limit.csv"), "w") as f:
        f.write("# wan_gbit,changed_pct,delta_x_limit,full_x_limit,delta_over_full,model,apply\n")
        for r in link:
            f.write("%g,%.3f,%.4f,%.4f,%.4f,%s,%s\n" % (r["wan_gbit"], r["changed_pct"], r["delta_x_limit"],
                                                        r["full_x_limit"], r["delta_over_full"], r["model"], r["apply"]))
    with open(os.path.join(out, "scaling.csv"), "w") as f:
        f.write("# rollout_nodes,depth,delta_s,limit_s,apply\n")
        for r in scaling:
            f.write("%d,%d,%.4f,%.4f,%s\n" % (r["rollout_nodes"], r["depth"], r["delta_s"], r["limit_s"], r["apply"]))


def main():
    out = sys.argv[1]
    runs = load(out)
    link, scaling, emulation = link_rows(runs), scaling_rows(runs), emulation_rows(runs)
    print_tables(link, scaling, emulation)
    json.dump({"link": link, "scaling": scaling, "emulation": emulation}, open(os.path.join(out, "summary.json"), "w"),
              indent=1)
    write_csv(out, link, scaling)
    bad = [r for r in link + scaling + emulation if not r["bitexact"]]
    if bad:
        sys.exit("cluster_summary: %d runs not committed bit-exact" % len(bad))


if __name__ == "__main__":
    main()
