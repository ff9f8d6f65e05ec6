#!/usr/bin/env python3
"""The capture layer's own cost: <<<>>> launches through Wooly's libcudart
next to the same launches through the client library, and CUDA test
programs end to end over ipc:// and tcp://127.0.0.1.

    bench/capture-bench.py [--build-dir build] [--rounds 5] [--launches 200000]

Starts its own wooly-serve (BUILD/bin/wooly-serve, cpu backend by default)
listening on a fresh ipc:// path in a temporary directory and on
tcp://127.0.0.1:<a free port>, and always stops it (SIGTERM, then SIGKILL
after 20 s), also on errors and Ctrl-C. Then, in one run, so that all ratios
come from the same minutes of machine load:

 1. Client CPU per launch. In R rounds (the order rotating from round to
    round) it runs
      direct:   BUILD/bin/wooly-capture-launch-direct BUILD/bench/launch_loop.ptx N
                (the client library, WOOLY_SERVER = the ipc endpoint)
      captured: BUILD/bench/launch_loop N  with LD_LIBRARY_PATH=BUILD/capture
                (the unmodified CUDA program through Wooly's libcudart.so.13)
      captured on tcp: the same with WOOLY_SERVER = the tcp endpoint
    Each prints the calling thread's CPU time per launch over N launches
    without synchronising (CLOCK_THREAD_CPUTIME_ID), the loop's wall time,
    and the synchronisation after it. The table shows the median and the
    minimum over the rounds of direct and captured (ipc), their difference
    (the capture layer's own cost) and ratio, and whether the target
    (captured - direct <= 300 ns) is met. The second table is the captured
    loop's wall time per launch on ipc vs tcp.
 2. End to end. The wall time of whole CUDA test programs run through
    capture (BUILD/apps/cuda/{vector_add,reduce,graph_capture} where built,
    else the prebuilt vector_add and reduce in test/apps/cuda/prebuilt), one
    warm-up run per program and transport, then R rounds alternating ipc and
    tcp; medians, minima and tcp/ipc.

Measurement 1 needs the nvcc outputs (BUILD/bench/launch_loop and
launch_loop.ptx, built when CMake found nvcc); without them it is skipped
with a message. Build what it needs with
    ninja -C build wooly-serve wooly-capture wooly-capture-launch-direct \\
        wooly-capture-launch-loop \\
        apps/cuda/vector_add apps/cuda/reduce apps/cuda/graph_capture
(the last three are part of wooly-cuda-apps). Use a Release build. See
bench/README.md.
"""

import argparse
import datetime
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_NS = 300.0


class Stop(Exception):
    """SIGTERM: leave through the finally clauses, which stop the server."""


def die(msg):
    sys.stdout.flush()
    sys.stderr.write("capture-bench.py: %s\n" % msg)
    sys.exit(1)


def build_dir(path):
    """`path` as given, else relative to the repository root."""
    if os.path.isabs(path) or os.path.isdir(path):
        return os.path.abspath(path)
    return os.path.join(REPO, path)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


class Server:
    """wooly-serve on an ipc:// path in a temporary directory and on a
    tcp://127.0.0.1 port."""

    def __init__(self, serve, backend, extra):
        self.tmp = tempfile.mkdtemp(prefix="wooly-capture-bench-")
        self.ipc = "ipc://" + os.path.join(self.tmp, "serve.sock")
        self.tcp = "tcp://127.0.0.1:%d" % free_port()
        self.log_path = os.path.join(self.tmp, "serve.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [serve, "--listen", self.ipc, "--listen", self.tcp,
             "--backend", backend] + extra,
            stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while not os.path.exists(self.ipc[len("ipc://"):]):
            if self.proc.poll() is not None or time.time() > deadline:
                self.print_log()
                die("wooly-serve did not start")
            time.sleep(0.05)

    def print_log(self, lines=30):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            text = f.read().decode(errors="replace").splitlines()
        sys.stderr.write("---- last lines of the wooly-serve log ----\n")
        sys.stderr.write("\n".join(text[-lines:]) + "\n")

    def check_alive(self):
        if self.proc.poll() is not None:
            self.print_log()
            die("wooly-serve exited with %d" % self.proc.returncode)

    def stop(self):
        """Returns whether the server stopped cleanly on SIGTERM."""
        ok = True
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                sys.stderr.write("capture-bench.py: wooly-serve did not stop "
                                 "on SIGTERM; killing it\n")
                self.proc.kill()
                self.proc.wait()
                ok = False
        if self.proc.returncode != 0:
            ok = False
        if not ok:
            self.print_log()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)
        return ok


class Runner:
    def __init__(self, args, server, capture_dir):
        self.args = args
        self.server = server
        self.capture_dir = capture_dir

    def env(self, endpoint, captured):
        env = dict(os.environ)
        env["WOOLY_SERVER"] = endpoint
        env["WOOLY_TENANT"] = "capture-bench"
        if captured:
            env["LD_LIBRARY_PATH"] = os.pathsep.join(
                p for p in [self.capture_dir,
                            os.environ.get("LD_LIBRARY_PATH", "")] if p)
        return env

    def run(self, cmd, endpoint, captured):
        """Runs `cmd`; returns (wall seconds, stdout). Dies on failure."""
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, env=self.env(endpoint, captured),
                               stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=self.args.timeout)
        except subprocess.TimeoutExpired:
            self.server.check_alive()
            die("%s timed out after %g s" % (" ".join(cmd), self.args.timeout))
        wall = time.perf_counter() - t0
        out = p.stdout.decode(errors="replace")
        if p.returncode != 0:
            sys.stderr.write(out + p.stderr.decode(errors="replace"))
            self.server.check_alive()
            die("%s (%s) exited with %d" % (" ".join(cmd), endpoint,
                                            p.returncode))
        return wall, out

    def launch_loop(self, cmd, endpoint, captured):
        """Runs a launch program; returns its key=value line as floats."""
        _, out = self.run(cmd, endpoint, captured)
        for line in out.splitlines():
            if line.startswith("launches="):
                return {k: float(v) for k, v in
                        (kv.split("=", 1) for kv in line.split())}
        die("no result line from %s:\n%s" % (" ".join(cmd), out))


def fmt(v, digits=1):
    return "%.*f" % (digits, v)


def table(header, rows, widths):
    line = "".join(("%-*s" if i == 0 else "%*s") % (w, h)
                   for i, (h, w) in enumerate(zip(header, widths)))
    print(line)
    print("-" * len(line))
    for r in rows:
        print("".join(("%-*s" if i == 0 else "%*s") % (w, c)
                      for i, (c, w) in enumerate(zip(r, widths))))


def measure_launches(runner, direct_cmd, loop_cmd, rounds):
    ipc, tcp = runner.server.ipc, runner.server.tcp
    kinds = [("direct", direct_cmd, ipc, False),
             ("captured", loop_cmd, ipc, True),
             ("captured tcp", loop_cmd, tcp, True)]
    # Warm-up (untimed): the server compiles the kernel once, and the
    # programs' files are in the page cache.
    for _, cmd, ep, cap in kinds:
        runner.launch_loop(cmd[:-1] + ["1000"], ep, cap)
    res = {name: [] for name, _, _, _ in kinds}
    for r in range(rounds):
        # Rotate the order, so that no kind always runs first or last.
        order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
        for name, cmd, ep, cap in order:
            res[name].append(runner.launch_loop(cmd, ep, cap))
        sys.stderr.write("  launches: round %d of %d done\n" % (r + 1, rounds))
    return res


def print_launch_tables(res, n, rounds):
    d = [x["cpu_ns_per_launch"] for x in res["direct"]]
    c = [x["cpu_ns_per_launch"] for x in res["captured"]]
    diffs = [b - a for a, b in zip(d, c)]
    print("\nClient thread CPU per launch on ipc:// (ns): %d launches of "
          "tick<<<1, 32>>>(p, i) without sync, %d rounds" % (n, rounds))
    rows = []
    for what, f in (("median", statistics.median), ("min", min)):
        a, b = f(d), f(c)
        rows.append([what, fmt(a), fmt(b), fmt(b - a), fmt(b / a, 2) + "x"])
    table(["statistic", "direct", "captured", "captured-direct",
           "captured/direct"], rows, [12, 10, 10, 17, 17])
    med_diff = statistics.median(c) - statistics.median(d)
    print("per-round differences (captured - direct, same round): %s; "
          "median %s" % (", ".join(fmt(x) for x in diffs),
                         fmt(statistics.median(diffs))))
    print("target: capture layer <= %d ns on top of the client library: "
          "%s ns -> %s" % (TARGET_NS, fmt(med_diff),
                           "MET" if med_diff <= TARGET_NS else "NOT MET"))

    print("\nCaptured launch loop, ipc:// vs tcp://127.0.0.1 (median of %d "
          "rounds; direct on ipc for reference)" % rounds)
    rows = []
    for key, what, digits in (
            ("cpu_ns_per_launch", "client thread CPU per launch (ns)", 1),
            ("wall_ns_per_launch", "loop wall per launch, no sync (ns)", 1),
            ("sync_ms", "cudaDeviceSynchronize after loop (ms)", 1),
            ("total_ns_per_launch", "end to end per launch (ns)", 1),
            ("proc_cpu_ns_per_launch", "process CPU per launch (ns)", 1)):
        ipc = statistics.median(x[key] for x in res["captured"])
        tcp = statistics.median(x[key] for x in res["captured tcp"])
        direct = statistics.median(x[key] for x in res["direct"])
        rows.append([what, fmt(direct, digits), fmt(ipc, digits),
                     fmt(tcp, digits), fmt(tcp / ipc, 2) + "x"])
    table(["measurement", "direct ipc", "captured ipc", "captured tcp",
           "tcp/ipc"], rows, [40, 12, 14, 14, 9])


def find_apps(build):
    built = os.path.join(build, "apps", "cuda")
    prebuilt = os.path.join(REPO, "test", "apps", "cuda", "prebuilt")
    apps = []
    for name in ("vector_add", "reduce", "graph_capture"):
        for d, where in ((built, "built"), (prebuilt, "prebuilt")):
            path = os.path.join(d, name)
            if os.access(path, os.X_OK):
                apps.append((name, path, where))
                break
    return apps


def measure_programs(runner, apps, rounds):
    ipc, tcp = runner.server.ipc, runner.server.tcp
    res = {}
    for name, path, _ in apps:
        # Warm-up: the server compiles the program's kernels once.
        for ep in (ipc, tcp):
            runner.run([path], ep, True)
        times = {ipc: [], tcp: []}
        for r in range(rounds):
            for ep in ((ipc, tcp) if r % 2 == 0 else (tcp, ipc)):
                wall, out = runner.run([path], ep, True)
                if "PASS" not in out:
                    die("%s did not print PASS:\n%s" % (path, out))
                times[ep].append(wall * 1e3)
        res[name] = (times[ipc], times[tcp])
    return res


def print_program_table(apps, res, rounds):
    print("\nEnd to end through capture: wall time of the whole program (ms), "
          "%d rounds alternating ipc:// and tcp://127.0.0.1" % rounds)
    rows = []
    for name, path, where in apps:
        ipc, tcp = res[name]
        mi, mt = statistics.median(ipc), statistics.median(tcp)
        rows.append(["%s (%s)" % (name, where), fmt(mi), fmt(min(ipc)),
                     fmt(mt), fmt(min(tcp)), fmt(mt / mi, 2) + "x"])
    table(["program", "ipc median", "ipc min", "tcp median", "tcp min",
           "tcp/ipc"], rows, [26, 12, 10, 12, 10, 9])


def main():
    doc = __doc__.split("\n\n", 1)
    parser = argparse.ArgumentParser(
        description=doc[0], epilog=doc[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build",
                        help="the build directory (default: build; relative "
                             "paths that do not exist here are taken from "
                             "the repository root)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds of each measurement (default 5)")
    parser.add_argument("--launches", type=int, default=200000,
                        help="launches per launch-loop run (default 200000)")
    parser.add_argument("--backend", default="cpu",
                        help="wooly-serve's --backend (default cpu)")
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="one more wooly-serve option (repeatable)")
    parser.add_argument("--timeout", type=float, default=600,
                        help="seconds each program may take (default 600)")
    parser.add_argument("--skip-programs", action="store_true",
                        help="only the launch measurements")
    args = parser.parse_args()
    if args.rounds < 1 or args.launches < 1:
        die("--rounds and --launches must be at least 1")

    build = build_dir(args.build_dir)
    serve = os.path.join(build, "bin", "wooly-serve")
    capture_dir = os.path.join(build, "capture")
    direct = os.path.join(build, "bin", "wooly-capture-launch-direct")
    loop = os.path.join(build, "bench", "launch_loop")
    ptx = os.path.join(build, "bench", "launch_loop.ptx")
    if not os.access(serve, os.X_OK):
        die("no %s: build wooly-serve" % serve)
    if not os.path.exists(os.path.join(capture_dir, "libcudart.so.13")):
        die("no %s/libcudart.so.13: build wooly-capture" % capture_dir)
    have_loop = os.access(loop, os.X_OK) and os.path.exists(ptx)
    if have_loop and not os.access(direct, os.X_OK):
        die("no %s: build wooly-capture-launch-direct" % direct)

    def on_term(sig, frame):
        raise Stop()
    signal.signal(signal.SIGTERM, on_term)

    load = os.getloadavg()[0]
    print("capture-bench.py: %s; nproc %d, %s; load %.2f" % (
        datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), os.cpu_count(),
        cpu_model(), load))
    server = Server(serve, args.backend, args.serve_arg)
    clean = False
    try:
        print("server: %s --backend %s%s on %s and %s" % (
            serve, args.backend,
            "".join(" " + a for a in args.serve_arg), server.ipc, server.tcp))
        print("capture: %s; build: %s" % (capture_dir, build))
        sys.stdout.flush()
        runner = Runner(args, server, capture_dir)

        if have_loop:
            res = measure_launches(runner, [direct, ptx, str(args.launches)],
                                   [loop, str(args.launches)], args.rounds)
            print_launch_tables(res, args.launches, args.rounds)
        else:
            print("\nnvcc was not found when %s was configured (no %s): the "
                  "launch measurements are skipped" % (build, loop))
        sys.stdout.flush()

        if not args.skip_programs:
            apps = find_apps(build)
            if not apps:
                print("\nno CUDA test programs found: the end-to-end table is "
                      "skipped")
            else:
                res = measure_programs(runner, apps, args.rounds)
                print_program_table(apps, res, args.rounds)
        clean = True
    except (KeyboardInterrupt, Stop):
        sys.stderr.write("capture-bench.py: interrupted\n")
    finally:
        stopped = server.stop()
    if clean and not stopped:
        die("wooly-serve did not exit cleanly")
    return 0 if clean else 130


if __name__ == "__main__":
    sys.exit(main())
