#!/usr/bin/env python3
"""The fault-containment suite: misbehaving tenants next to healthy ones.

    containment.py --serve build/bin/wooly-serve --capture build/capture \
        --apps build/apps/cuda [--backend cpu] [--modes trap,assert,...]

Starts ONE wooly-serve (on a fresh ipc:// path in a temporary directory,
with a tenants file: each tenant its own token, the greedy one a 256 MiB
quota, and a 3 s watchdog) and, for each mode of test/apps/cuda/misbehave.cu
(trap, assert, wild pointer, spin forever, unbounded recursion, quota,
disconnect mid-copy, misaligned address) and for malformed messages sent
straight to the socket (libzmq through ctypes), runs three healthy tenants
at the same time: `reduce` (reductions), `vector_add` (copies) and
`multi_kernel` (a multi-kernel program). Each checks its own results
exactly against the host and prints PASS. A case passes when the faulty
tenant reports the expected error (it prints `PASS misbehave-MODE`), every
healthy tenant passes, and the server is still running. After all cases,
the healthy tenants run once more, alone, and the server must stop cleanly
on SIGTERM. Prints one line per case and a summary; exit 0 when all pass.
"""

import argparse
import ctypes
import ctypes.util
import os
import subprocess
import sys
import time

from serve_process import ServeProcess

HEALTHY = ["reduce", "vector_add", "multi_kernel"]
MODES = ["trap", "assert", "wild", "spin", "recurse", "quota", "disconnect",
         "misaligned", "malformed"]


def send_malformed(endpoint):
    """Sends garbage frames, a truncated call and an empty message to the
    server as a ZeroMQ DEALER would; returns a description."""
    lib = ctypes.CDLL(ctypes.util.find_library("zmq") or "libzmq.so.5")
    lib.zmq_ctx_new.restype = ctypes.c_void_p
    lib.zmq_socket.restype = ctypes.c_void_p
    lib.zmq_socket.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.zmq_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.zmq_send.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                             ctypes.c_int]
    lib.zmq_close.argtypes = [ctypes.c_void_p]
    lib.zmq_ctx_term.argtypes = [ctypes.c_void_p]
    lib.zmq_setsockopt.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                   ctypes.c_void_p, ctypes.c_size_t]
    ZMQ_DEALER, ZMQ_SNDMORE, ZMQ_LINGER = 5, 2, 17
    ctx = lib.zmq_ctx_new()
    sock = lib.zmq_socket(ctx, ZMQ_DEALER)
    linger = ctypes.c_int(1000)
    lib.zmq_setsockopt(sock, ZMQ_LINGER, ctypes.byref(linger), 4)
    if lib.zmq_connect(sock, endpoint.encode()) != 0:
        raise RuntimeError("zmq_connect failed")
    messages = [
        [b""],
        [b"\xff" * 64],
        [b"\x0a\x05hello", b"payload-without-a-call"],
        [bytes(range(256)) * 16, b"", b"\x00"],
        [b"\x08\x01\x12\x00" + b"\x80" * 100],  # a varint that never ends
    ]
    for frames in messages:
        for i, f in enumerate(frames):
            lib.zmq_send(sock, f, len(f), ZMQ_SNDMORE if i + 1 < len(frames)
                         else 0)
    time.sleep(0.5)
    lib.zmq_close(sock)
    lib.zmq_ctx_term(ctx)
    return "%d malformed messages sent" % len(messages)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", required=True)
    parser.add_argument("--capture", required=True)
    parser.add_argument("--apps", required=True,
                        help="the folder of the CUDA test programs")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--timeout", type=float, default=120,
                        help="seconds each tenant program may take")
    parser.add_argument("--keep-log", default="",
                        help="copy the server's log here once it stopped")
    parser.add_argument("--serve-arg", action="append", default=[])
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]

    server = ServeProcess(args.serve, [], prefix="wooly-contain-")
    tenants = os.path.join(server.tmp, "tenants.yaml")
    names = HEALTHY + ["misbehave"]
    with open(tenants, "w") as f:
        f.write("tenants:\n")
        for n in names:
            f.write("  - name: %s\n    token: tok-%s\n" % (n, n))
            if n == "misbehave":
                f.write("    memory: 256MiB\n")
    server.args = ["--backend", args.backend, "--tenants", tenants,
                   "--kernel-timeout-ms", "3000"] + args.serve_arg
    try:
        server.__enter__()
    except RuntimeError as x:
        print("FAIL: %s" % x)
        return 1
    endpoint = server.endpoint
    env = dict(os.environ)
    env["WOOLY_SERVER"] = endpoint
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in [args.capture, os.environ.get("LD_LIBRARY_PATH", "")] if p)

    def run(name, argv):
        e = dict(env)
        e["WOOLY_TENANT"] = name
        e["WOOLY_TOKEN"] = "tok-" + name
        return subprocess.Popen(argv, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)

    def finish(p):
        try:
            out, _ = p.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            return 124, out.decode(errors="replace") + "\n(timed out)"
        return p.returncode, out.decode(errors="replace")

    failures = 0
    try:
        for mode in modes:
            start = time.time()
            healthy = [(h, run(h, [os.path.join(args.apps, h)]))
                       for h in HEALTHY]
            if mode == "malformed":
                try:
                    what = send_malformed(endpoint)
                    bad_rc, bad_out = 0, what + "\nPASS misbehave-malformed"
                except Exception as x:  # noqa: BLE001 - reported as a failure
                    bad_rc, bad_out = 1, "cannot send: %s" % x
            else:
                bad_rc, bad_out = finish(run(
                    "misbehave", [os.path.join(args.apps, "misbehave"), mode]))
            problems = []
            if bad_rc != 0 or ("PASS misbehave-" + mode) not in bad_out:
                problems.append("the faulty tenant did not get the expected "
                                "error:\n" + bad_out)
            for h, p in healthy:
                rc, out = finish(p)
                if rc != 0 or ("PASS " + h) not in out:
                    problems.append("healthy tenant %s failed:\n%s" % (h, out))
            if not server.running():
                problems.append("wooly-serve exited with %d"
                                % server.proc.returncode)
            err = [l for l in bad_out.splitlines() if l.startswith("wooly:")]
            print("%-5s %-11s %5.1f s  %s" % (
                "ok" if not problems else "FAIL", mode, time.time() - start,
                err[0][:400] if err else bad_out.splitlines()[0][:400]
                if bad_out else ""))
            for p in problems:
                print("    " + p.replace("\n", "\n    "))
            failures += bool(problems)
            if not server.running():
                break

        # Still serving: the healthy programs once more, alone.
        if server.running():
            for h in HEALTHY:
                rc, out = finish(run(h, [os.path.join(args.apps, h)]))
                ok = rc == 0 and ("PASS " + h) in out
                print("%-5s %-11s after all cases" % ("ok" if ok else "FAIL", h))
                failures += not ok
    finally:
        rc = server.stop(timeout=30)
        if server.stop_failure:
            print("FAIL: " + server.stop_failure)
            failures += 1
        if rc != 0:
            print("FAIL: wooly-serve exited with %d" % rc)
            failures += 1
        server.keep_log(args.keep_log)
        if failures:
            sys.stdout.write("---- wooly-serve log ----\n" +
                             server.log(last=20000))
        server.cleanup()
    total = len(modes)
    print("containment: %d of %d cases passed; server %s" % (
        total - min(failures, total), total,
        "stopped cleanly" if rc == 0 else "FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
