#!/usr/bin/env python3
"""Soak: many tenant processes with sustained launches and copies.

    soak.py --serve build/bin/wooly-serve --bin build/bin \
        --ptx test/corpus/elementwise.sm_90.ptx \
        [--tenants 64] [--seconds 600] [--backend cpu] [--serve-arg ...]

Starts ONE wooly-serve on a fresh ipc:// path in a temporary directory and
keeps --tenants tenant processes running against it for --seconds: each
slot runs wooly-app-saxpy (asynchronous copies, launches and events on two
streams, results checked bit for bit) or wooly-app-reduce (copies, a
reduction kernel, checked exactly) with a small problem, and starts the
next one as soon as one ends, so that sessions open and close all the time
too. Every second it samples the server's resident memory (VmRSS).

Passes (exit 0) when no tenant process failed, the server is up to the end
and stops cleanly on SIGTERM, and its resident memory is flat after
warm-up: the largest sample of the last third of the run is at most
--rss-slack MiB above the largest of the first third. Prints the figures:
tenant runs, launches, errors, RSS at each third, and with --rss-log the
samples. Run the server built with -fsanitize=address (scripts/fuzz.sh's
build, or any ASan build) to have LeakSanitizer check it at exit: its report
is in the log, and the exit status of the server says it.
"""

import argparse
import os
import subprocess
import sys
import time

from serve_process import ServeProcess


def rss_mib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", required=True)
    ap.add_argument("--bin", required=True,
                    help="folder of wooly-app-saxpy and wooly-app-reduce")
    ap.add_argument("--ptx", required=True,
                    help="test/corpus/elementwise.sm_90.ptx")
    ap.add_argument("--reduce-ptx", default="",
                    help="test/corpus/reduction.sm_90.ptx (default: next "
                         "to --ptx)")
    ap.add_argument("--tenants", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--rss-slack", type=float, default=64,
                    help="MiB the server's memory may grow after warm-up")
    ap.add_argument("--rss-log", default="")
    ap.add_argument("--serve-arg", action="append", default=[])
    args = ap.parse_args()
    reduce_ptx = args.reduce_ptx or os.path.join(
        os.path.dirname(args.ptx), "reduction.sm_90.ptx")

    server = ServeProcess(args.serve, ["--backend", args.backend]
                          + args.serve_arg, prefix="wooly-soak-")
    try:
        server.__enter__()
    except RuntimeError as x:
        print("FAIL: %s" % x)
        return 1
    env = dict(os.environ, WOOLY_SERVER=server.endpoint)

    def start(slot, n):
        e = dict(env, WOOLY_TENANT="soak%d" % slot)
        if (slot + n) % 2:
            argv = [os.path.join(args.bin, "wooly-app-saxpy"),
                    "--ptx=" + args.ptx, "--n=8192", "--rounds=8"]
        else:
            argv = [os.path.join(args.bin, "wooly-app-reduce"),
                    "--ptx=" + reduce_ptx, "--n=16384", "--rounds=2"]
        return subprocess.Popen(argv, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)

    runs = errors = 0
    failures = []
    samples = []  # (seconds since start, MiB)
    t0 = time.time()
    end = t0 + args.seconds
    procs = {slot: (start(slot, 0), 0) for slot in range(args.tenants)}
    next_sample = t0
    try:
        while time.time() < end:
            for slot, (p, n) in list(procs.items()):
                if p.poll() is None:
                    continue
                out = p.stdout.read().decode(errors="replace")
                runs += 1
                if p.returncode != 0:
                    errors += 1
                    if len(failures) < 5:
                        failures.append("tenant soak%d (run %d) exited %d:\n%s"
                                        % (slot, n, p.returncode, out[-2000:]))
                procs[slot] = (start(slot, n + 1), n + 1)
            if not server.running():
                failures.append("wooly-serve exited with %d during the soak"
                                % server.proc.returncode)
                break
            now = time.time()
            if now >= next_sample:
                r = rss_mib(server.proc.pid)
                if r is not None:
                    samples.append((now - t0, r))
                next_sample = now + 1
            time.sleep(0.02)
        for slot, (p, n) in procs.items():
            try:
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            runs += 1
            if p.returncode != 0:
                errors += 1
                if len(failures) < 5:
                    failures.append("tenant soak%d (last run) exited %d:\n%s" % (
                        slot, p.returncode,
                        p.stdout.read().decode(errors="replace")[-2000:]))
    finally:
        rc = server.stop()
        if server.stop_failure:
            failures.append(server.stop_failure)
    if rc != 0:
        failures.append("wooly-serve exited with %d (a LeakSanitizer report "
                        "ends it with 23 by default)" % rc)

    third = len(samples) // 3
    first = max((m for _, m in samples[:max(third, 1)]), default=0)
    last = max((m for _, m in samples[-max(third, 1):]), default=0)
    peak = max((m for _, m in samples), default=0)
    flat = last <= first + args.rss_slack
    if not flat:
        failures.append("the server's memory grew after warm-up: %.0f MiB "
                        "(first third) -> %.0f MiB (last third)"
                        % (first, last))
    if args.rss_log:
        with open(args.rss_log, "w") as f:
            for t, m in samples:
                f.write("%.1f %.1f\n" % (t, m))
    print("soak: %d tenants for %.0f s on %s: %d tenant runs, %d failed; "
          "server RSS %.0f MiB after warm-up, %.0f MiB in the last third "
          "(peak %.0f MiB, %d samples): %s"
          % (args.tenants, args.seconds, args.backend, runs, errors, first,
             last, peak, len(samples), "flat" if flat else "GROWING"))
    for f in failures:
        print("FAIL: " + f)
    if failures:
        print("---- wooly-serve log (last 20000 characters) ----")
        print(server.log(last=20000))
    else:
        print("PASS soak")
    server.cleanup()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
