#!/usr/bin/env python3
"""Where a streamed request's time to first token goes, client to server and back.

Joins bench_serve JSON reports (per_request: sent_unix_ms, response_id, ttft_ms) with the log of the
`strata serve` that answered them (run with --log-level debug; text or JSON log format) by request id, and
splits each client TTFT into:

  in     client send -> the server has the whole request (connect, send, HTTP read)
  front  arrival -> the engine has the job (JSON, chat template, tokenizing)
  engine -> the window that picked the first token returned (queue, prefill)
  text   -> the first token's event is on its channel (the next window starts first)
  write  -> the HTTP thread has written the first token chunk (wake-up, JSON, send), itself split into
            wake (-> the reader was woken), sched (-> the reader held the event), prep (-> its write
            began: the chunk's JSON) and sys (-> the write returned), where the log has woken_s, popped_s
            and write_begin_s; runq is how much of prep + sys the HTTP thread spent waiting on a
            CPU's run queue (write_queued_s)
  out    -> the client has read it (the remainder)

Prints p50/p90/p99 of each part per report, and the mean parts of the slowest 1% of requests (what makes
the tail). Usage: ttft_split.py SERVE_LOG REPORT.json [REPORT.json ...]
"""
import json
import re
import sys

TEXT_LINE = re.compile(r"^\S+ \w+ \[(?P<id>[^\]]+)\] (?P<msg>request finished|stream delivered)(?P<fields>.*)$")


def parse_fields(rest):
    out = {}
    for tok in rest.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def read_log(path):
    """request id -> merged fields of its "request finished" and "stream delivered" lines."""
    by_id = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                try:
                    j = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if j.get("msg") not in ("request finished", "stream delivered") or not j.get("request_id"):
                    continue
                by_id.setdefault(j["request_id"], {}).update(j)
                continue
            m = TEXT_LINE.match(line)
            if m:
                by_id.setdefault(m.group("id"), {}).update(parse_fields(m.group("fields")))
    return by_id


def pct(values, q):
    v = sorted(x for x in values if x == x)  # NaN: a part the log did not have
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


PARTS = ("in", "front", "engine", "text", "write", "wake", "sched", "prep", "sys", "runq", "out")


def split(report, log):
    rows = []
    for level in report.get("levels", [report]):
        for r in level.get("per_request", []):
            if not r.get("ok") or r.get("ttft_ms") is None or not r.get("response_id"):
                continue
            s = log.get(r["response_id"] + "-0")
            if not s or "arrival_unix" not in s or "first_write_s" not in s or r.get("sent_unix_ms") is None:
                continue
            arrival_ms = s["arrival_unix"] * 1000.0
            t_in = arrival_ms - r["sent_unix_ms"]
            front = s.get("submitted_s", 0.0) * 1000.0
            engine = s["ttft_s"] * 1000.0 - front
            text = (s["first_event_s"] - s["ttft_s"]) * 1000.0
            write = s["first_write_s"] * 1000.0 - s["first_event_s"] * 1000.0
            out = r["ttft_ms"] - t_in - s["first_write_s"] * 1000.0
            nan = float("nan")
            woken = s.get("woken_s", nan) * 1000.0
            popped = s.get("popped_s", nan) * 1000.0
            begin = s.get("write_begin_s", nan) * 1000.0
            rows.append({"concurrency": level.get("concurrency"), "ttft": r["ttft_ms"], "in": t_in,
                         "front": front, "engine": engine, "text": text, "write": write,
                         "wake": woken - s["first_event_s"] * 1000.0, "sched": popped - woken,
                         "prep": begin - popped, "sys": s["first_write_s"] * 1000.0 - begin,
                         "runq": s.get("write_queued_s", nan) * 1000.0, "out": out})
    return rows


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    log = read_log(argv[1])
    for path in argv[2:]:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        rows = split(report, log)
        if not rows:
            print(f"{path}: no request joined (serve with --log-level debug; reports need response_id)")
            continue
        for c in sorted({r["concurrency"] for r in rows}, key=lambda x: (x is None, x)):
            sel = [r for r in rows if r["concurrency"] == c]
            print(f"{path} concurrency {c}: {len(sel)} requests joined")
            print(f"  {'ms':8}" + "".join(f"{k:>8}" for k in ("ttft",) + PARTS))
            for q in (0.5, 0.9, 0.99):
                print(f"  p{int(q * 100):<7}" + "".join(f"{pct([r[k] for r in sel], q):8.2f}" for k in ("ttft",) + PARTS))
            tail = sorted(sel, key=lambda r: r["ttft"])[-max(1, len(sel) // 100):]
            print(f"  {'tail1%':8}" + "".join(f"{sum(r[k] for r in tail) / len(tail):8.2f}" for k in ("ttft",) + PARTS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
