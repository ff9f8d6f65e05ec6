#!/usr/bin/env python3
"""Compiles PTX files to AMDGPU code objects with `wooly-translate
--target=T` (the compile API) and reads every result back with
`llvm-readelf --notes --symbols`: each `.entry` kernel of the PTX must be
described in the AMDGPU metadata note (`.symbol: NAME.kd`) and have its kernel
descriptor `NAME.kd` in the symbol table.

Prints one line per file that is not compiled (`not supported on AMD NAME:
first error` when the compile API refuses it with an error located in the
PTX, i.e. the lowering has no AMD equivalent for a construct; `REJECTED
NAME: ...` for any other compile error (backend, linker), a crash or a
missing descriptor) and a summary

  N compiled (K kernels with descriptors), M not supported on AMD, R rejected

Exits non-zero when a file is rejected, or when the set of files not
supported differs from the list in --expected-unsupported (one file name a
line, `#` comments; each difference is printed as `UNEXPECTED not supported:
NAME` or `NOW SUPPORTED: NAME`).

  amdgpu_all.py --translate T --readelf R --target gfx942 --out OUTDIR
                --files 'DIR/*.sm_90.ptx' [--zluda ZLUDA_DIR]
                [--expected-unsupported FILE] [--rocm-device-libs DIR]

With --zluda, the PTX of every test that ZLUDA_DIR/expected.json enables is
added.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

# first_error: the same diagnostics summary as the NVPTX corpus test.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "NVPTX", "Inputs"))
from ptxas_all import first_error  # noqa: E402

ENTRY = re.compile(r"\.entry\s+([A-Za-z_$%][\w$]*)")
# A diagnostic located in the input: the lowering refusing a construct.
LOCATED_ERROR = re.compile(r"^\S+:\d+:\d+: error: ", re.M)
NOTE_SYMBOL = re.compile(r"^\s*\.symbol:\s*'?([^'\s]+)'?\s*$", re.M)


def zluda_files(zluda_dir):
    with open(os.path.join(zluda_dir, "expected.json")) as f:
        tests = json.load(f)
    return sorted(os.path.join(zluda_dir, t["ptx"])
                  for t in tests.values() if t.get("enabled") and "ptx" in t)


def read_expected(path):
    names = set()
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.add(line)
    return names


def check_code_object(readelf, path, kernels):
    """The problems of the code object at `path` (empty if none)."""
    notes = subprocess.run([readelf, "--notes", path], capture_output=True,
                           text=True)
    syms = subprocess.run([readelf, "--symbols", path], capture_output=True,
                          text=True)
    for run in (notes, syms):
        if run.returncode != 0:
            return ["llvm-readelf: " + first_error(run.stderr)]
    if "NT_AMDGPU_METADATA" not in notes.stdout:
        return ["no AMDGPU metadata note"]
    described = set(NOTE_SYMBOL.findall(notes.stdout))
    symbols = set(line.split()[-1] for line in syms.stdout.splitlines()
                  if line.strip())
    problems = []
    for k in kernels:
        if k + ".kd" not in described:
            problems.append("kernel %s not in amdhsa.kernels" % k)
        if k + ".kd" not in symbols:
            problems.append("no kernel descriptor symbol %s.kd" % k)
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--translate", required=True)
    ap.add_argument("--readelf", required=True)
    ap.add_argument("--target", default="gfx942")
    ap.add_argument("--files", action="append", default=[],
                    help="a glob pattern of input files")
    ap.add_argument("--zluda", help="ZLUDA conformance directory")
    ap.add_argument("--expected-unsupported")
    ap.add_argument("--rocm-device-libs",
                    help="passed on to wooly-translate")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    files = []
    for pattern in args.files:
        files += sorted(glob.glob(pattern))
    if args.zluda:
        files += zluda_files(args.zluda)
    if not files:
        print("no files match")
        return 1
    compiled = kernels_ok = rejected = 0
    unsupported = {}
    for path in files:
        name = os.path.basename(path)
        out = os.path.join(args.out, name + ".hsaco")
        cmd = [args.translate, "--target=" + args.target, path, "-o", out]
        if args.rocm_device_libs:
            cmd.append("--rocm-device-libs=" + args.rocm_device_libs)
        comp = subprocess.run(cmd, capture_output=True, text=True)
        if comp.returncode != 0:
            crashed = (comp.returncode < 0 or "LLVM ERROR" in comp.stderr or
                       "Stack dump" in comp.stderr)
            if LOCATED_ERROR.search(comp.stderr) and not crashed:
                unsupported[name] = first_error(comp.stderr)
            else:
                rejected += 1
                print("REJECTED %s: %s%s" % (name, "CRASH " if crashed else "",
                                             first_error(comp.stderr)))
            continue
        with open(path, errors="replace") as f:
            kernels = ENTRY.findall(f.read())
        problems = check_code_object(args.readelf, out, kernels)
        if problems:
            rejected += 1
            print("REJECTED %s: %s" % (name, "; ".join(problems)))
            continue
        compiled += 1
        kernels_ok += len(kernels)
    for name in sorted(unsupported):
        print("not supported on AMD %s: %s" % (name, unsupported[name]))
    print("%d compiled (%d kernels with descriptors), %d not supported on "
          "AMD, %d rejected" % (compiled, kernels_ok, len(unsupported),
                                rejected))
    changed = False
    if args.expected_unsupported:
        expected = read_expected(args.expected_unsupported)
        for name in sorted(set(unsupported) - expected):
            print("UNEXPECTED not supported: %s" % name)
            changed = True
        for name in sorted(expected - set(unsupported)):
            print("NOW SUPPORTED: %s (remove it from %s)" %
                  (name, args.expected_unsupported))
            changed = True
    return 1 if rejected or changed else 0


if __name__ == "__main__":
    sys.exit(main())
