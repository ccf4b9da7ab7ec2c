"""Benchmark of the synthetic cohort generator: wall time, peak RSS and rows per table.

    .venv/bin/python -m benchmarks.synthetic --scale 0.05            # target: < 2 min on 2 cores
    .venv/bin/python -m benchmarks.synthetic --scale 0.01 --keep outputs/synthetic_bench

Prints one line per table as it is written, then a summary (load average included: other jobs on
a shared machine slow it down).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from data_prep.synthetic.generate import generate


def peak_rss_mib() -> float:
    """Peak resident set size of this process (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--keep", type=Path, default=None, help="write here and keep the files (default: a temp dir)"
    )
    args = ap.parse_args(argv)

    out = args.keep or Path(tempfile.mkdtemp(prefix="synthetic_bench_"))
    load_before = os.getloadavg()
    t = time.perf_counter()
    generate(out, args.scale, args.seed, log=lambda line: print(f"  {line}", flush=True))
    wall = time.perf_counter() - t
    rows = dict(line.split(",") for line in (out / "row_counts.csv").read_text().splitlines()[1:])
    size = sum(p.stat().st_size for p in out.rglob("*.gz"))
    print(f"\nscale={args.scale} seed={args.seed}")
    print(f"wall time: {wall:.1f} s")
    print(f"peak RSS:  {peak_rss_mib():.0f} MiB")
    print(f"on disk:   {size / 2**20:.1f} MiB (.csv.gz)")
    print(f"load avg:  {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores)")
    width = max(map(len, rows))
    for table, n in rows.items():
        print(f"  {table:<{width}} {int(n):>12,}")
    if args.keep is None:
        shutil.rmtree(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
