#!/usr/bin/env python3
"""Imports every PTX file matching a glob with wooly-translate and re-verifies
the result with `wooly-opt --verify-roundtrip`.

Prints one line per file that fails (`FAIL name: first error line`), one line
per expected failure (`expected error: name:LINE:COL: error: message`), and a
summary `imported N of M, expected errors K`. Exits non-zero when a file fails
unexpectedly or an expected failure does not fail with its message.

  import_all.py --translate T --opt O --dir D [--glob '*.ptx']
                [--expect-error FILE=MESSAGE ...]
"""

import argparse
import glob
import os
import re
import subprocess
import sys


def first_error(text):
    for line in text.splitlines():
        if "error:" in line:
            return line.strip()
    lines = text.strip().splitlines()
    return lines[0] if lines else "(no diagnostic)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--translate", required=True)
    ap.add_argument("--opt", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--glob", default="*.ptx")
    ap.add_argument("--expect-error", action="append", default=[],
                    metavar="FILE=MESSAGE")
    args = ap.parse_args()

    expected = {}
    for item in args.expect_error:
        name, _, message = item.partition("=")
        expected[name] = message

    files = sorted(glob.glob(os.path.join(args.dir, args.glob)))
    if not files:
        print("no files match %s" % os.path.join(args.dir, args.glob))
        return 1

    ok = True
    imported = 0
    expected_errors = 0
    seen = set()
    for path in files:
        name = os.path.basename(path)
        seen.add(name)
        imp = subprocess.run([args.translate, "--import-ptx", path],
                             capture_output=True, text=True)
        if name in expected:
            # Must fail with `path:LINE:COL: error: MESSAGE`.
            pattern = re.compile(r"^%s:(\d+):(\d+): error: %s$" %
                                 (re.escape(path), re.escape(expected[name])),
                                 re.M)
            m = pattern.search(imp.stderr)
            if imp.returncode == 0 or not m:
                ok = False
                print("FAIL %s: expected error '%s', got: %s" %
                      (name, expected[name],
                       "success" if imp.returncode == 0
                       else first_error(imp.stderr)))
            else:
                expected_errors += 1
                print("expected error: %s:%s:%s: error: %s" %
                      (name, m.group(1), m.group(2), expected[name]))
            continue
        if imp.returncode != 0:
            ok = False
            print("FAIL %s: %s" % (name, first_error(imp.stderr)))
            continue
        rt = subprocess.run([args.opt, "--verify-roundtrip", "-"],
                            input=imp.stdout, capture_output=True, text=True)
        if rt.returncode != 0:
            ok = False
            print("FAIL %s (round trip): %s" % (name, first_error(rt.stderr)))
            continue
        imported += 1

    for name in sorted(set(expected) - seen):
        ok = False
        print("FAIL %s: expected to fail but not found" % name)

    print("imported %d of %d, expected errors %d" %
          (imported, len(files), expected_errors))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
