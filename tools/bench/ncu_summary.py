#!/usr/bin/env python3
"""Summarizes an Nsight Compute CSV of strata_bench_cuda (gpu__time_duration per kernel) window by window.

Every forward pass starts with the embedding kernel, so the kernels between two embedding launches are one
window. For each window: kernel count, total GPU time, and the time per kernel name (sum, count, share).

    python3 tools/bench/ncu_summary.py ncu.csv [--top 14]
"""
import argparse
import collections
import csv
import re


def short(name):
    name = re.sub(r"\(.*", "", name)  # drop the argument list
    name = re.sub(r"^void ", "", name)
    name = re.sub(r"strata::(cuda::)?(\(anonymous namespace\)::|<unnamed>::)?", "", name)
    name = re.sub(r"^(void )?<?unnamed>::", "", name)  # how some ncu versions print an anonymous namespace
    return name[:70]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=14)
    a = ap.parse_args()
    rows = []
    with open(a.csv, newline="") as f:
        lines = [ln for ln in f if ln.startswith('"')]
    for r in csv.DictReader(lines):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        rows.append((short(r["Kernel Name"]), r.get("Grid Size", ""), float(r["Metric Value"].replace(",", ""))))
    windows, cur = [], None
    for name, grid, ns in rows:
        if name.startswith("embedding"):
            cur = []
            windows.append(cur)
        if cur is not None:
            cur.append((name, grid, ns))
    print(f"{len(rows)} kernels, {len(windows)} windows")
    for i, w in enumerate(windows):
        total = sum(ns for _, _, ns in w)
        print(f"--- window {i}: {len(w)} kernels, {total / 1e3:.1f} us")
        agg = collections.defaultdict(lambda: [0.0, 0])
        for name, grid, ns in w:
            key = f"{name} grid={grid}"
            agg[key][0] += ns
            agg[key][1] += 1
        for key, (ns, n) in sorted(agg.items(), key=lambda kv: -kv[1][0])[: a.top]:
            print(f"  {ns / 1e3:9.1f} us {100 * ns / total:5.1f}%  x{n:<4d} {ns / n / 1e3:8.2f} us  {key}")


if __name__ == "__main__":
    main()
