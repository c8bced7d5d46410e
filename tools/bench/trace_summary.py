#!/usr/bin/env python3
"""Summarizes a kernel timeline from strata_bench_cuda --trace FILE (a build with -DSTRATA_KERNEL_TRACE=ON).

One line per kernel launch, in launch order: its blocks and threads, when its first and last blocks
arrived (reached pdl_wait), when their waits returned (the previous kernel had finished), and two spans
that say where a step's time goes:
  held   release of this launch minus release of the previous one: how long the previous kernel held the
         chain after it was itself released (its run, tail and the hand-over);
  early  release minus the first block's arrival: how long this launch's blocks sat resident first.
Times are microseconds from the first release. %globaltimer's resolution bounds what the spans can show.

  tools/bench/trace_summary.py trace.csv [--layers N [--head H]]   (also the held time by position in a layer)
  tools/bench/trace_summary.py trace.csv --windows N               (a --trace-windows N trace: the host's gaps)
"""
import argparse
import csv
import statistics
from collections import defaultdict


def group_launches(records):
    """The records of each launch, in launch order. By %gridid where it tells launches apart; otherwise (a
    driver that gives every graph node the same id) by release: a launch is released only once the one
    before it finished, so in release order each launch's blocks come together, and a new launch starts
    where a block index repeats or the grid's shape changes."""
    if len({r["grid_id"] for r in records}) > 1:
        by_id = defaultdict(list)
        for r in records:
            by_id[int(r["grid_id"])].append(r)
        return [by_id[g] for g in sorted(by_id)]
    out = []
    seen = set()
    for r in sorted(records, key=lambda r: int(r["release_ns"])):
        shape = (r["blocks"], r["threads"])
        if not out or r["block"] in seen or shape != (out[-1][0]["blocks"], out[-1][0]["threads"]):
            out.append([])
            seen = set()
        out[-1].append(r)
        seen.add(r["block"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--layers", type=int, default=0, help="layers of the model, to fold the launches per layer")
    ap.add_argument("--head", type=int, default=1, help="launches before the first layer's (default 1)")
    ap.add_argument("--windows", type=int, default=1,
                    help="consecutive replays of one graph in the trace (--trace-windows): their gaps, then window 0")
    args = ap.parse_args()
    with open(args.csv) as f:
        records = list(csv.DictReader(f))
    if args.windows > 1:
        # A replay's launches keep their grid ids, so each block's records are its windows in time order. The
        # gap is from a window's last wait release (its final launch, which has little left to do) to the next
        # window's first block arriving: what the host spends between two windows, plus the launch latency.
        per_block = defaultdict(list)
        for r in records:
            per_block[(r["grid_id"], r["block"])].append(r)
        windows = [[] for _ in range(args.windows)]
        for rows in per_block.values():
            rows.sort(key=lambda r: int(r["start_ns"]))
            for k, r in enumerate(rows[:args.windows]):
                windows[k].append(r)
        spans = [(min(int(r["start_ns"]) for r in w), max(int(r["release_ns"]) for r in w)) for w in windows if w]
        for k in range(len(spans) - 1):
            print(f"window {k}: {(spans[k][1] - spans[k][0]) / 1e3:.1f} us first arrival to last release, "
                  f"then {(spans[k + 1][0] - spans[k][1]) / 1e3:.1f} us to window {k + 1}'s first arrival")
        records = windows[0]
    grids = group_launches(records)
    launches = []
    for gid, rows in enumerate(grids):
        starts = [int(r["start_ns"]) for r in rows]
        rel = [int(r["release_ns"]) for r in rows]
        launches.append({
            "grid": gid, "blocks": int(rows[0]["blocks"]), "threads": int(rows[0]["threads"]),
            "recorded": len(rows), "sms": len({r["sm"] for r in rows}),
            "first_start": min(starts), "last_start": max(starts),
            "release": statistics.median(rel), "release_max": max(rel)})
    if not launches:
        print("no records")
        return
    t0 = launches[0]["release"]
    print(f"{'#':>4} {'blocks':>6} {'thr':>5} {'first':>9} {'last':>9} {'release':>9} {'held':>7} {'early':>7}")
    prev = None
    helds = []
    for i, l in enumerate(launches):
        held = (l["release"] - prev) / 1e3 if prev is not None else 0.0
        helds.append(held)
        print(f"{i:>4} {l['blocks']:>6} {l['threads']:>5} {(l['first_start'] - t0) / 1e3:>9.2f} "
              f"{(l['last_start'] - t0) / 1e3:>9.2f} {(l['release'] - t0) / 1e3:>9.2f} {held:>7.2f} "
              f"{(l['release'] - l['first_start']) / 1e3:>7.2f}")
        prev = l["release"]
    total = (launches[-1]["release"] - launches[0]["release"]) / 1e3
    print(f"{len(launches)} launches, {total:.1f} us from the first release to the last")
    if args.layers > 0:
        # The window's head (--head launches, the embedding) comes first, then the layers' launches, then the
        # tail (final norm, LM head, the pick): per layer is what divides evenly.
        per = (len(launches) - args.head) // args.layers
        if per <= 0:
            print("cannot fold: fewer launches than layers")
            return
        print(f"per layer: {per} launches (head {args.head}, tail {len(launches) - args.head - per * args.layers});"
              " median held time by position:")
        for pos in range(per):
            vals = [helds[args.head + l * per + pos] for l in range(args.layers)]
            print(f"  {pos}: {statistics.median(vals):7.2f} us  (blocks {launches[args.head + pos]['blocks']})")

if __name__ == "__main__":
    main()
