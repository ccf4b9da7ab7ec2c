"""Benchmark of data_prep.build on the synthetic cohort: build time against a floor (one plain scan of
every input file with the same engine), and peak memory.

    .venv/bin/python -m benchmarks.data_prep --scale 0.1          # targets: R <= 2, peak RSS <= 6 GB
    .venv/bin/python -m benchmarks.data_prep --scale 0.01 --data-dir /tmp/syn_0.01

Prints R = build / floor, each run's peak RSS, and the build time extrapolated linearly to full scale
(scale 1.0 = full MIMIC-IV; target <= 15 min). The cohort is generated once per (scale, seed) and
reused. Floor and build each run in a fresh child process so that their peak RSS is their own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

FLOOR = r"""
import json, resource, sys, time
import polars as pl
from data_prep.io import TABLES, locate, module_dirs
root = sys.argv[1]
dirs = module_dirs({m: f"{root}/{m}" for m in ("hosp", "ed", "note", "ecg", "echo")})
paths = [p for p in (locate(n, dirs) for n in TABLES) if p is not None]
t = time.perf_counter()
rows = 0
for p in paths:
    # The same reader the build uses (lazy CSV scan, all columns as text, streaming engine).
    rows += pl.scan_csv(p, infer_schema=False, low_memory=False).collect(engine="streaming").height
print(json.dumps({"seconds": time.perf_counter() - t, "rows": rows, "files": len(paths),
                  "bytes": sum(p.stat().st_size for p in paths),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

GENERATE = r"""
import json, sys
from data_prep.synthetic import generate
generate(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]))
print(json.dumps({}))
"""

BUILD = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
from hydra import compose, initialize_config_dir
from data_prep.build import run
from earlydx.manifest import read_manifest
from earlydx.paths import CONF_DIR
with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
    cfg = compose("build", overrides=[f"data.root={sys.argv[1]}", f"out_dir={sys.argv[2]}", "force=true"])
t = time.perf_counter()
run(cfg)
m = read_manifest(sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - t, "encounters": m["counts"]["encounters"],
                  "cohort": m["counts"]["cohort"], "labels": m["labels"]["total"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def child(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"child failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def ensure_cohort(data_dir: Path, scale: float, seed: int) -> None:
    if (data_dir / "row_counts.csv").is_file():
        print(f"reusing synthetic cohort at {data_dir}")
        return
    # In a child: this script's own name (data_prep.py) would shadow the data_prep package here.
    t = time.perf_counter()
    child(GENERATE, str(data_dir), str(scale), str(seed))
    print(f"generated synthetic cohort (scale {scale}) at {data_dir} in {time.perf_counter() - t:.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", type=Path, default=None, help="default: outputs/bench/synthetic_<scale>")
    ap.add_argument("--out-dir", type=Path, default=None, help="default: outputs/bench/build_<scale>")
    args = ap.parse_args()
    data_dir = args.data_dir or REPO / "outputs" / "bench" / f"synthetic_{args.scale:g}"
    out_dir = args.out_dir or REPO / "outputs" / "bench" / f"build_{args.scale:g}"
    ensure_cohort(data_dir, args.scale, args.seed)
    # Warm the page cache so neither timed run pays for the first disk read.
    for f in sorted(data_dir.rglob("*.csv*")):
        f.read_bytes()
    floor = child(FLOOR, str(data_dir))
    build = child(BUILD, str(data_dir), str(out_dir))
    ratio = build["seconds"] / floor["seconds"]
    full = build["seconds"] / args.scale
    print(f"scale {args.scale:g}: {floor['files']} input files, {floor['bytes'] / 2**20:.0f} MiB, {floor['rows']:,} rows")
    print(f"floor (plain scan of every input): {floor['seconds']:.1f} s, peak RSS {floor['peak_rss_mb'] / 1024:.2f} GB")
    print(f"build: {build['seconds']:.1f} s, peak RSS {build['peak_rss_mb'] / 1024:.2f} GB "
          f"({build['cohort']:,} cohort stays, {build['encounters']:,} encounters, {build['labels']:,} labels)")
    print(f"R = build / floor = {ratio:.2f}  (target <= 2)")
    print(f"peak RSS {build['peak_rss_mb'] / 1024:.2f} GB  (target at scale 0.1: <= 6 GB)")
    print(f"extrapolated full-scale build: {full / 60:.1f} min (linear in scale; target <= 15 min)")


if __name__ == "__main__":
    main()
