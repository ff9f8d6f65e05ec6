#!/usr/bin/env python3
"""Runs commands as tenants of a wooly-serve started for them, then stops it.

    with-server.py --serve build/bin/wooly-serve --capture build/capture \
        [--backend cpu] [--serve-arg=--executors=2 ...] [--parallel] \
        [--keep-log=FILE] \
        -- PROGRAM ARGS... [--- PROGRAM2 ARGS...]

The server listens on a fresh ipc:// path in a temporary directory (never a
network address); each command runs with WOOLY_SERVER pointing at it and
LD_LIBRARY_PATH starting with the capture directory, so unmodified CUDA
programs load Wooly's libcudart.so.13 and libcuda.so.1. Several commands are
separated by '---'; with --parallel they run at the same time.

The exit status is the first failing command's (or 0). The server is always
stopped (SIGTERM, then SIGKILL after 20 s); its log is printed when a command
fails or when the server itself does not exit cleanly, which is a failure too.
"""

import argparse
import os
import subprocess
import sys

from serve_process import ServeProcess


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("with-server.py: give the command after '--'")
    split = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", required=True, help="the wooly-serve binary")
    parser.add_argument("--capture", required=True,
                        help="the folder with Wooly's libcudart.so.13")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--serve-arg", action="append", default=[],
                        help="one more wooly-serve option (repeatable)")
    parser.add_argument("--parallel", action="store_true",
                        help="run the commands at the same time")
    parser.add_argument("--timeout", type=float, default=300,
                        help="seconds each command may take")
    parser.add_argument("--keep-log", default="",
                        help="copy the server's log here once it stopped")
    args = parser.parse_args(argv[:split])

    commands, current = [], []
    for word in argv[split + 1:]:
        if word == "---":
            commands.append(current)
            current = []
        else:
            current.append(word)
    commands.append(current)
    if any(not c for c in commands):
        sys.exit("with-server.py: empty command")

    server = ServeProcess(args.serve, ["--backend", args.backend]
                          + args.serve_arg)
    try:
        server.__enter__()
    except RuntimeError as x:
        sys.stderr.write("with-server.py: %s\n" % x)
        server.cleanup()
        return 1

    status = 0
    try:
        env = dict(os.environ)
        env["WOOLY_SERVER"] = server.endpoint
        env["LD_LIBRARY_PATH"] = os.pathsep.join(
            p for p in [args.capture, os.environ.get("LD_LIBRARY_PATH", "")] if p)
        sys.stdout.flush()
        procs = []
        for i, cmd in enumerate(commands):
            tenant_env = dict(env)
            # Each command is its own tenant.
            tenant_env["WOOLY_TENANT"] = (
                "tenant%d" % i if len(commands) > 1
                else env.get("WOOLY_TENANT", "test"))
            p = subprocess.Popen(cmd, env=tenant_env)
            procs.append((cmd, p))
            if not args.parallel:
                status = wait(p, cmd, args.timeout) or status
                if status:
                    break
        if args.parallel:
            for cmd, p in procs:
                status = wait(p, cmd, args.timeout) or status
    finally:
        rc = server.stop(timeout=20)
        if server.stop_failure:
            sys.stderr.write("with-server.py: %s\n" % server.stop_failure)
            status = status or 1
        if rc != 0 and status == 0:
            sys.stderr.write("with-server.py: wooly-serve exited with %d\n" % rc)
            status = 1
        if status != 0:
            sys.stderr.write("---- wooly-serve log ----\n" + server.log())
        server.keep_log(args.keep_log)
        server.cleanup()
    return status


def wait(p, cmd, timeout):
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        sys.stderr.write("with-server.py: %s timed out after %g s\n"
                         % (cmd[0], timeout))
        return 1
    if rc != 0:
        sys.stderr.write("with-server.py: %s exited with %d\n" % (cmd[0], rc))
    return rc


if __name__ == "__main__":
    sys.exit(main())
