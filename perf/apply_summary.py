#!/usr/bin/python3
"""`--apply stream` against `--apply staged`, side by side: reads the refit JSON files of a
perf/bench_cluster.sh or perf/bench_refit.sh results directory (one run per mode of each job,
named <job>-stream.json and <job>-staged.json), prints Markdown, and writes DIR/apply.json,
DIR/apply.csv and, where gnuplot is installed, DIR/apply.png (perf/plot_apply.gp).

Per configuration (the job: link rate, model or checkpoint sequence; and the change rate, rounded
to a whole percent) and for the delta versions only (version 0 is a full sync, always streamed),
the medians over the versions of each mode:
  stream refit s         "seconds" of the streamed versions (serving stops for all of it)
  stream apply+commit s  stage_seconds.apply + stage_seconds.commit of the streamed versions
  staged refit s         "seconds" of the staged versions (staging + pause)
  staged pause s         "pause_seconds" of the staged versions (serving stops for this only)
and the ratios of those medians; "staged mem / rx" is the largest over the staged versions of
(rollout_bytes.staged_memory + staged_spilled) / rollout_bytes.received, per rollout.

Targets (issue 51): on the 0.1 Gbit/s link at 3%, staged pause <= 10% of the streamed refit; at
every rate, staged pause <= 1.5x streamed apply+commit; staged refit <= 1.15x streamed; staging
memory per rollout <= 1.1x the bytes it received.

Usage: perf/apply_summary.py [--link WORD] DIR   (WORD names the link in the tables: WAN, link)
"""
import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

MODES = ("stream", "staged")
SKIP = {"summary", "apply"}
HERE = os.path.dirname(os.path.abspath(__file__))


def model_of(job):
    m = re.search(r"model (\S+)", job or "")
    if not m:
        return "?"
    return "checkpoints" if m.group(1) == "from" else m.group(1)


def describe(name, d):
    """(job, link Gbit/s or None, model, label) of a run's name without its mode."""
    m = re.match(r"rate-([0-9.]+)-(.+)$", name)  # perf/bench_cluster.sh, part 1
    if m:
        return name, float(m.group(1)), m.group(2), "%s Gbit/s, %s" % (m.group(1), m.group(2))
    m = re.match(r"refit-([0-9.]+)-(.+)$", name)  # perf/bench_refit.sh: refit-<gbps>-<contexts>
    if m:
        gbps = float(m.group(1))
        model = model_of(d.get("job"))
        link = "no limit" if gbps == 0 else "%s Gbit/s" % m.group(1)
        return name, gbps, model, "%s, %s, contexts %s" % (link, model, m.group(2))
    return name, d.get("wan_gbit"), model_of(d.get("job")), name


def load(out):
    """{(job, mode): (description, delta steps)} of DIR/*.json."""
    runs = {}
    for path in sorted(glob.glob(os.path.join(out, "*.json"))):
        name = os.path.basename(path)[:-5]
        if name in SKIP:
            continue
        d = json.load(open(path))
        if "steps" not in d:
            continue
        deltas = [s for s in d["steps"] if s["kind"] == "delta" and s["version"] > 0]
        m = re.match(r"(.+)-(stream|staged)$", name)
        if m:
            job, mode = m.group(1), m.group(2)
        else:  # runs from before the mode was in the name: what the versions say
            job, mode = name, "staged" if any(s.get("apply") == "staged" for s in deltas) else "stream"
        runs[(job, mode)] = (describe(job, d), deltas)
    return runs


def med(values):
    values = list(values)
    return statistics.median(values) if values else float("nan")


def ratio(a, b):
    return a / b if b and b == b and a == a else float("nan")


def rows_of(runs):
    groups = {}
    for (job, mode), ((_, gbit, model, label), deltas) in runs.items():
        for s in deltas:
            pct = round(100 * s["change_rate"])
            g = groups.setdefault((job, pct), {"job": job, "link_gbit": gbit, "model": model, "label": label,
                                                "changed_pct": pct, "stream": [], "staged": []})
            g[mode].append(s)
    rows, anomalies = [], []
    for key in sorted(groups, key=lambda k: (groups[k]["link_gbit"] or 0, groups[k]["model"], k[0], k[1])):
        g = groups[key]
        st, sg = g.pop("stream"), g.pop("staged")
        if not st or not sg:
            anomalies.append("%s at %d%%: only %s versions" % (g["label"], g["changed_pct"], "stream" if st else "staged"))
            continue
        for s in sg:
            if s.get("apply") != "staged":
                anomalies.append("%s v%d: a delta of the staged run records apply=%r" % (g["label"], s["version"], s.get("apply")))
            if s["staging_seconds"] + s["pause_seconds"] > 1.05 * s["seconds"] + 1e-3:
                anomalies.append("%s v%d (staged): staging %.4f s + pause %.4f s > the version's %.4f s" % (
                    g["label"], s["version"], s["staging_seconds"], s["pause_seconds"], s["seconds"]))
            if s["rollout_bytes"]["received"] == 0:
                anomalies.append("%s v%d (staged): no rollout_bytes.received" % (g["label"], s["version"]))
        for s in st:
            if s.get("apply") != "stream" or s["staging_seconds"] != 0:
                anomalies.append("%s v%d: a delta of the streamed run records apply=%r, staging %g s" % (
                    g["label"], s["version"], s.get("apply"), s["staging_seconds"]))

        def ac(s):
            return s["stage_seconds"]["apply"] + s["stage_seconds"]["commit"]

        def held(s):
            b = s["rollout_bytes"]
            return ratio(b["staged_memory"] + b["staged_spilled"], b["received"])

        r = dict(g)
        r.update({
            "versions": "%d+%d" % (len(st), len(sg)),
            "wire_mb": med(s["wire_bytes"] for s in st + sg) / 1e6,
            "stream_refit_s": med(s["seconds"] for s in st),
            "stream_pause_s": med(s["pause_seconds"] for s in st),
            "stream_apply_commit_s": med(ac(s) for s in st),
            "stream_apply_s": med(s["stage_seconds"]["apply"] for s in st),
            "stream_commit_s": med(s["stage_seconds"]["commit"] for s in st),
            "staged_refit_s": med(s["seconds"] for s in sg),
            "staged_staging_s": med(s["staging_seconds"] for s in sg),
            "staged_pause_s": med(s["pause_seconds"] for s in sg),
            "staged_pause_max_s": max(s["pause_seconds"] for s in sg),
            "staged_apply_s": med(s["stage_seconds"]["apply"] for s in sg),
            "staged_commit_s": med(s["stage_seconds"]["commit"] for s in sg),
            "received_mb": max(s["rollout_bytes"]["received"] for s in sg) / 1e6,
            "staged_memory_mb": max(s["rollout_bytes"]["staged_memory"] for s in sg) / 1e6,
            "staged_spilled_mb": max(s["rollout_bytes"]["staged_spilled"] for s in sg) / 1e6,
            "staged_mem_over_received": max(held(s) for s in sg),
            "bitexact": all(s["bitexact"] and s["committed"] for s in st + sg),
        })
        r["pause_over_stream_refit"] = ratio(r["staged_pause_s"], r["stream_refit_s"])
        r["pause_over_stream_apply_commit"] = ratio(r["staged_pause_s"], r["stream_apply_commit_s"])
        r["staged_over_stream_refit"] = ratio(r["staged_refit_s"], r["stream_refit_s"])
        rows.append(r)
    return rows, anomalies


def targets(rows):
    out = []
    for r in rows:
        if r["link_gbit"] == 0.1 and r["changed_pct"] == 3:
            out.append(("staged pause <= 0.10 x streamed refit (0.1 Gbit/s, 3%)", r, r["pause_over_stream_refit"], 0.10))
        out.append(("staged pause <= 1.5 x streamed apply+commit", r, r["pause_over_stream_apply_commit"], 1.5))
        out.append(("staged refit <= 1.15 x streamed refit", r, r["staged_over_stream_refit"], 1.15))
        out.append(("staged memory <= 1.1 x received (per rollout)", r, r["staged_mem_over_received"], 1.1))
    return [{"target": t, "label": r["label"], "changed_pct": r["changed_pct"], "value": v, "bound": b,
             "holds": v == v and v <= b} for t, r, v, b in out]


def print_tables(rows, checks, anomalies, link):
    print("### `--apply stream` against `--apply staged` (delta versions, medians)\n")
    print("| %s, model | changed | versions (stream+staged) | wire MB | stream refit s | stream apply+commit s | "
          "staged refit s | staged pause s | pause / stream refit | pause / stream apply+commit | "
          "staged / stream refit | staged mem / rx | bit-exact |" % link)
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d%% | %s | %.3f | %.4f | %.4f | %.4f | %.4f | %.3f | %.2f | %.2f | %.3f | %s |" % (
            r["label"], r["changed_pct"], r["versions"], r["wire_mb"], r["stream_refit_s"], r["stream_apply_commit_s"],
            r["staged_refit_s"], r["staged_pause_s"], r["pause_over_stream_refit"], r["pause_over_stream_apply_commit"],
            r["staged_over_stream_refit"], r["staged_mem_over_received"], "yes" if r["bitexact"] else "NO"))
    print("\n### Where the time goes (medians; seconds)\n")
    print("| %s, model | changed | stream apply | stream commit | staged staging | staged apply | staged commit | "
          "staged pause (max) | received MB / rollout | staged in memory MB | spilled MB |" % link)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d%% | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f (%.4f) | %.3f | %.3f | %.3f |" % (
            r["label"], r["changed_pct"], r["stream_apply_s"], r["stream_commit_s"], r["staged_staging_s"],
            r["staged_apply_s"], r["staged_commit_s"], r["staged_pause_s"], r["staged_pause_max_s"], r["received_mb"],
            r["staged_memory_mb"], r["staged_spilled_mb"]))
    print("\n### Targets\n")
    print("| target | %s, model | changed | measured | holds |" % link)
    print("|---|---|---|---|---|")
    for c in checks:
        print("| %s | %s | %d%% | %.3f | %s |" % (c["target"], c["label"], c["changed_pct"], c["value"],
                                                 "yes" if c["holds"] else "**NO**"))
    if anomalies:
        print("\n### Records that look wrong\n")
        for a in anomalies:
            print("- " + a)


def write_plot(out, rows):
    with open(os.path.join(out, "apply.csv"), "w") as f:
        f.write("# label,stream_refit_s,stream_pause_s,stream_apply_commit_s,staged_refit_s,staged_pause_s\n")
        for r in rows:
            f.write("%s %d%%,%.5f,%.5f,%.5f,%.5f,%.5f\n" % (
                r["label"].replace(",", ""), r["changed_pct"], r["stream_refit_s"], r["stream_pause_s"],
                r["stream_apply_commit_s"], r["staged_refit_s"], r["staged_pause_s"]))
    if rows and shutil.which("gnuplot"):
        png = os.path.join(out, "apply.png")
        subprocess.run(["gnuplot", "-e", "data='%s'; out='%s'; bars=%d" % (os.path.join(out, "apply.csv"), png, len(rows)),
                        os.path.join(HERE, "plot_apply.gp")], check=True)
        return png
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--link", default="link", help="what the first column calls the link (WAN, link)")
    p.add_argument("dir")
    a = p.parse_args()
    rows, anomalies = rows_of(load(a.dir))
    if not rows:
        sys.exit("apply_summary: no job in %s ran in both --apply modes" % a.dir)
    checks = targets(rows)
    print_tables(rows, checks, anomalies, a.link)
    json.dump({"rows": rows, "targets": checks, "anomalies": anomalies},
              open(os.path.join(a.dir, "apply.json"), "w"), indent=1)
    png = write_plot(a.dir, rows)
    if png:
        print("\nplot: %s" % png, file=sys.stderr)
    if not all(r["bitexact"] for r in rows):
        sys.exit("apply_summary: versions not committed bit-exact")


if __name__ == "__main__":
    main()
