#!/usr/bin/env python3
"""Summarizes an Nsight Compute CSV of swarm's CUDA kernels, per kernel.

Input: the standard output of
  ncu --csv --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size ...
(one row per launch and metric, after whatever the profiled program printed).
Output: one line per kernel name, grid size and megabytes read from DRAM
(the grid tells batch sizes apart: rmsnorm runs one block per row, attention
one per token and head; the megabytes tell matrices of one grid apart), with
the number of launches, the median device time in microseconds and the
median DRAM read rate in GB/s ("-" without the dram metric); with --json,
the same as a JSON list.

Used by scripts/gpu-check.sh. Example:
  python3 scripts/ncu_kernel_times.py ncu.csv
"""
import argparse
import csv
import json
import statistics
import sys


def number(s):
    """ncu writes numbers with thousands separators ("1,536")."""
    return float(s.replace(",", "")) if s.strip() else 0.0


def launches(lines):
    """Yields {"name", "grid", "ns", "bytes"} per profiled launch."""
    rows = csv.reader(lines)
    header = None
    by_id = {}
    for row in rows:
        if header is None:
            if row and row[0] == "ID" and "Metric Name" in row:
                header = row
            continue
        if len(row) != len(header):
            continue
        d = dict(zip(header, row))
        k = by_id.setdefault(d["ID"], {"name": d["Kernel Name"].split("(")[0]})
        metric, value = d["Metric Name"], d["Metric Value"]
        if metric == "gpu__time_duration.sum":
            # gpu__time_duration is reported in ns, us or ms.
            scale = {"ns": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}.get(d["Metric Unit"], 1.0)
            k["ns"] = number(value) * scale
        elif metric == "dram__bytes_read.sum":
            scale = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9}.get(d["Metric Unit"], 1.0)
            k["bytes"] = number(value) * scale
        elif metric == "launch__grid_size":
            k["grid"] = int(number(value))
    if header is None:
        raise ValueError("no ncu CSV header (a row starting with \"ID\") in the input")
    return [k for k in by_id.values() if "ns" in k]


def summarize(ls):
    groups = {}
    for k in ls:
        mb = round(k.get("bytes", 0.0) / 1e6)
        groups.setdefault((k["name"], k.get("grid", 0), mb), []).append(k)
    out = []
    for (name, grid, mb), ks in sorted(groups.items()):
        ns = statistics.median(k["ns"] for k in ks)
        r = {"kernel": name, "grid": grid, "dram_read_mb": mb, "launches": len(ks), "median_us": ns / 1e3}
        if all("bytes" in k for k in ks) and ns > 0:
            r["median_dram_read_gb_s"] = statistics.median(k["bytes"] for k in ks) / ns
        out.append(r)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="ncu --csv output ('-' for standard input)")
    ap.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    args = ap.parse_args()
    f = sys.stdin if args.csv == "-" else open(args.csv, newline="")
    try:
        rows = summarize(launches(f))
    except ValueError as e:
        sys.exit(f"ncu_kernel_times: {args.csv}: {e}")
    if args.json:
        print(json.dumps(rows))
        return
    print(f"{'kernel':<12} {'grid':>6} {'MB read':>8} {'launches':>8} {'median us':>10} {'DRAM read GB/s':>15}")
    for r in rows:
        rate = f"{r['median_dram_read_gb_s']:.0f}" if "median_dram_read_gb_s" in r else "-"
        print(f"{r['kernel']:<12} {r['grid']:>6} {r['dram_read_mb']:>8} {r['launches']:>8} {r['median_us']:>10.2f} {rate:>15}")


if __name__ == "__main__":
    main()
