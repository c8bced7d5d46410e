#!/usr/bin/env python3
"""Summarizes a `strata serve --window-trace FILE` trace: where the engine thread's time went.

    tools/bench/window_trace_summary.py TRACE [--from S] [--to S] [--idle-gap-ms 50]

Per window kind (decode, mixed, prefill): count, mean rows (decode / prefill rows), mean and p50/p90 duration
of the backend call, and the mean host gap before it (the engine's own work between two calls: the previous
window's outputs, admission, planning). Gaps longer than --idle-gap-ms are idle time (no request running),
left out of the means and reported apart. Decode-only windows are also grouped by row count, to compare with
`strata_bench_cuda --batch N`'s ms_per_window; mixed windows by their prompt rows; and how many windows left
admitted prompts out (each such window delays those prompts' first token by its duration).
"""
import argparse
import json
import statistics
import sys


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--from", dest="t_from", type=float, default=0.0, help="first window start (s) to count")
    ap.add_argument("--to", dest="t_to", type=float, default=float("inf"), help="last window start (s) to count")
    ap.add_argument("--idle-gap-ms", type=float, default=50.0)
    a = ap.parse_args()

    rows = []
    with open(a.trace) as f:
        for line in f:
            line = line.strip()
            if line:
                w = json.loads(line)
                if a.t_from <= w["t"] <= a.t_to:
                    rows.append(w)
    if not rows:
        sys.exit("no windows in range")

    idle = [w["gap_us"] for w in rows if w["gap_us"] > a.idle_gap_ms * 1000]
    busy_gap = [w["gap_us"] for w in rows if 0 <= w["gap_us"] <= a.idle_gap_ms * 1000]
    call_s = sum(w["us"] for w in rows) / 1e6
    gap_s = sum(busy_gap) / 1e6
    span_s = rows[-1]["t"] + rows[-1]["us"] / 1e6 - rows[0]["t"]
    print(f"windows {len(rows)}  span {span_s:.3f} s  backend calls {call_s:.3f} s ({call_s / span_s:.1%})  "
          f"host gaps {gap_s:.3f} s ({gap_s / span_s:.1%}, mean {statistics.mean(busy_gap) if busy_gap else 0:.0f} us)  "
          f"idle gaps {len(idle)} ({sum(idle) / 1e6:.3f} s)")
    print(f"{'kind':8} {'count':>6} {'rows':>7} {'decode':>7} {'prefill':>7} {'ms mean':>8} {'ms p50':>7} "
          f"{'ms p90':>7} {'gap us':>7} {'time %':>7}")
    for kind in ("decode", "mixed", "prefill"):
        ws = [w for w in rows if w["kind"] == kind]
        if not ws:
            continue
        us = [w["us"] for w in ws]
        gaps = [w["gap_us"] for w in ws if 0 <= w["gap_us"] <= a.idle_gap_ms * 1000]
        print(f"{kind:8} {len(ws):6d} {statistics.mean(w['rows'] for w in ws):7.1f} "
              f"{statistics.mean(w['decode'] for w in ws):7.1f} {statistics.mean(w['prefill'] for w in ws):7.1f} "
              f"{statistics.mean(us) / 1e3:8.3f} {pct(us, 0.5) / 1e3:7.3f} {pct(us, 0.9) / 1e3:7.3f} "
              f"{statistics.mean(gaps) if gaps else 0:7.0f} {sum(us) / 1e6 / span_s:7.1%}")
    by_rows = {}
    for w in rows:
        if w["kind"] == "decode":
            by_rows.setdefault(w["rows"], []).append(w["us"])
    common = sorted(by_rows.items(), key=lambda kv: -len(kv[1]))[:8]
    if common:
        print("decode windows by rows (most frequent): " +
              ", ".join(f"{r} rows {len(v)}x {statistics.median(v) / 1e3:.3f} ms" for r, v in sorted(common)))
    # Admitted prompts a window left out (the prefill cap or the row budget spent before their turn): each
    # such window adds its duration to those prompts' time to first token.
    held = [w for w in rows if w.get("held", 0) > 0]
    if any("held" in w for w in rows):
        print(f"windows leaving admitted prompts out: {len(held)} of {len(rows)}"
              + (f", {statistics.mean(w['held'] for w in held):.2f} prompts each on average, "
                 f"{sum(w['held'] for w in held)} prompt-windows" if held else ""))
    mixed = {}
    for w in rows:
        if w["kind"] == "mixed":
            mixed.setdefault(w["prefill"], []).append(w["us"])
    common = sorted(mixed.items(), key=lambda kv: -len(kv[1]))[:8]
    if common:
        print("mixed windows by prompt rows (most frequent): " +
              ", ".join(f"{r} rows {len(v)}x {statistics.median(v) / 1e3:.3f} ms" for r, v in sorted(common)))


if __name__ == "__main__":
    main()
