#!/usr/bin/env python3
"""Runs every launch of bench/corpus-launches.txt twice - the kernel as
written, and compiled with Wooly passes (e.g.
wooly-constrain,wooly-lower-iteration-barrier) launched on N physical blocks
- and compares every buffer bit for bit (wooly-run --save-all). On the CPU
backend by default; with `--backend cuda --target sm_90` on an NVIDIA GPU,
where the kernel as written is nvcc's PTX (the driver JIT-compiles it) and
the other is the PTX Wooly generates for the target with the passes.

Prints one line per launch that is not identical (`REFUSED file:kernel:
error` when a pass refused the kernel with a located error, `DIFFER` /
`differ (order-dependent)` / `FAIL`), then a summary

  N identical, R refused, E differ (order-dependent), D differ, F failed

and exits non-zero when a deterministic kernel differs or a run fails.

With `--time R`, both runs launch R times (wooly-run --time --repeat=R) and
the summary adds the geometric mean of the passes' kernel time over the
original's (the device's own timing where it has one, else the launch's
wall time; launches below 5 us as written are left out as noise); with
`--same-target` the original is also compiled for --target (so that the
ratio is the cost of the passes alone, not of the code generator). Use
--jobs 1 when timing.

  corpus_passes_diff.py --run wooly-run --corpus DIR --launches FILE
                        --passes P [--physical-blocks N]
                        [--backend B] [--target T] [--jobs J]
                        [--time R [--same-target]]
"""

import argparse
import concurrent.futures
import filecmp
import math
import os
import re
import subprocess
import sys
import tempfile


def first_error(text):
    for line in text.splitlines():
        if "error" in line:
            return line.strip()
    return text.strip().splitlines()[0] if text.strip() else "(no output)"


def same_dirs(a, b):
    names_a, names_b = sorted(os.listdir(a)), sorted(os.listdir(b))
    if names_a != names_b:
        return False
    return all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n),
                           shallow=False) for n in names_a)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--launches", required=True)
    ap.add_argument("--passes", default="")
    ap.add_argument("--second-args", default="",
                    help="wooly-run options of the second run only, "
                    "space-separated (e.g. --fibers)")
    ap.add_argument("--physical-blocks", default="")
    ap.add_argument("--backend", default="")
    ap.add_argument("--target", default="")
    ap.add_argument("--jobs", type=int, default=1,
                    help="launches compared at the same time")
    ap.add_argument("--time", type=int, default=0,
                    help="launches per run to time (0: no timing)")
    ap.add_argument("--same-target", action="store_true",
                    help="compile the original for --target too")
    args = ap.parse_args()
    ratios = []

    def kernel_ms(stderr):
        m = re.search(r"kernel ([0-9.]+) ms", stderr) or re.search(
            r"run ([0-9.]+) ms per launch", stderr)
        return float(m.group(1)) if m else None

    def run_one(n, path, kernel, rest, orderdep, work):
        """Returns (count key, line to print or None) for one launch."""
        label = "%s:%s" % (path.split(".")[0], kernel)
        base = [args.run, os.path.join(args.corpus, path),
                "--kernel=" + kernel] + rest
        if args.backend:
            base.append("--backend=" + args.backend)
        plain = os.path.join(work, "%d.plain" % n)
        paced = os.path.join(work, "%d.passes" % n)
        extra = ["--passes=" + args.passes] if args.passes else []
        extra += args.second_args.split()
        if args.target:
            extra.append("--target=" + args.target)
        if args.physical_blocks:
            extra.append("--physical-blocks=" + args.physical_blocks)
        timing = ["--time", "--repeat=%d" % args.time] if args.time else []
        same = (["--target=" + args.target]
                if args.same_target and args.target else [])
        r1 = subprocess.run(base + same + timing + ["--save-all=" + plain],
                            capture_output=True, text=True)
        r2 = subprocess.run(base + extra + timing + ["--save-all=" + paced],
                            capture_output=True, text=True)
        if args.time and r1.returncode == 0 and r2.returncode == 0:
            t1, t2 = kernel_ms(r1.stderr), kernel_ms(r2.stderr)
            if t1 and t2 and t1 >= 0.005:
                ratios.append((t2 / t1, label))
                print("time %s: %.4f ms as written, %.4f ms with passes "
                      "(%.3f)" % (label, t1, t2, t2 / t1))
        if r1.returncode != 0:
            return "failed", "FAIL %s (as written): %s" % (
                label, first_error(r1.stderr))
        if r2.returncode != 0:
            if "cannot be lowered for a GPU" in r2.stderr:
                return "refused", "REFUSED %s: %s" % (
                    label, first_error(r2.stderr))
            return "failed", "FAIL %s (with passes): %s" % (
                label, first_error(r2.stderr))
        if same_dirs(plain, paced):
            return "identical", None
        if orderdep:
            return "orderdep", "differ (order-dependent) %s" % label
        return "differ", "DIFFER %s" % label

    counts = dict(identical=0, refused=0, orderdep=0, differ=0, failed=0)
    with tempfile.TemporaryDirectory() as work, open(args.launches) as f:
        launches = []
        for n, line in enumerate(f):
            fields = line.split()
            if not fields or fields[0].startswith("#"):
                continue
            path, kernel, rest = fields[0], fields[1], fields[2:]
            orderdep = bool(rest) and rest[0] == "order-dependent"
            if orderdep:
                rest = rest[1:]
            launches.append((n, path, kernel, rest, orderdep, work))
        # Launches run side by side (--jobs); lines print in the list's order.
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            for key, text in pool.map(lambda l: run_one(*l), launches):
                counts[key] += 1
                if text:
                    print(text)
                    sys.stdout.flush()
    print("%(identical)d identical, %(refused)d refused, %(orderdep)d differ "
          "(order-dependent), %(differ)d differ, %(failed)d failed" % counts)
    if args.time and ratios:
        geo = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        worst = max(ratios)
        print("time with passes / as written: geomean %.3f over %d launches "
              "(worst %.2f: %s)" % (geo, len(ratios), worst[0], worst[1]))
    return 1 if counts["differ"] or counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
