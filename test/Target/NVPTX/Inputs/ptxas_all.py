#!/usr/bin/env python3
"""Compiles every PTX file matching a glob to PTX for one target with
`wooly-translate --target=T` (the compile API) and assembles each output with
`ptxas -arch=T`.

Prints one line per file (`not supported yet NAME: first error`, `REJECTED
NAME: ptxas's first error`, `FAIL NAME: ...` for any other compile error) and
a summary `N compiled and accepted by ptxas, M not supported yet, K rejected`.
Exits non-zero when a file is rejected by ptxas or fails for another reason
than "not supported yet".

  ptxas_all.py --translate T --ptxas P --target sm_90 --out OUTDIR
               --files 'DIR/*.ptx' [--files 'DIR2/*.sm_90.ptx' ...]
               [--reimport --opt wooly-opt] [--passes PIPELINE]

With --per-kernel, every .entry of every file is compiled on its own
(`--kernel=NAME`) and counted as one unit; NAME is `file:kernel`.

With --passes, every file is compiled with `--passes=PIPELINE` (Wooly passes
before lowering, e.g. wooly-constrain); a refusal of a pass (a located
"cannot be lowered for a GPU" error, or a kernel that "synchronises its
whole grid") counts as "refused", not as a failure, and the summary gains
", R refused".

A file that uses an instruction the target GPU lacks (PTX written for a
newer one: "... needs sm_90 or later; compiling for sm_80") prints
`needs a newer GPU NAME: ...`, and a line `N need a newer GPU` follows the
summary when there are any.

With --reimport, every accepted output is also imported again with
`wooly-translate --import-ptx` and verified with `wooly-opt` (`REIMPORT FAIL
NAME: ...` otherwise), and a second line `N re-imported and verified`
follows the summary.
"""

import argparse
import glob
import os
import re
import subprocess
import sys


def first_error(text):
    for line in text.splitlines():
        if "error" in line:
            return line.strip()
    lines = text.strip().splitlines()
    return lines[0] if lines else "(no diagnostic)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--translate", required=True)
    ap.add_argument("--ptxas", required=True)
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--files", action="append", required=True,
                    help="a glob pattern of input files")
    ap.add_argument("--out", required=True)
    ap.add_argument("--reimport", action="store_true")
    ap.add_argument("--opt", default="wooly-opt")
    ap.add_argument("--passes", default="")
    ap.add_argument("--per-kernel", action="store_true",
                    help="compile and count every .entry on its own")
    args = ap.parse_args()

    os.makedirs(args.out, exist_ok=True)
    files = []
    for pattern in args.files:
        files += sorted(glob.glob(pattern))
    if not files:
        print("no files match")
        return 1
    # (path, kernel or None) units to compile.
    units = []
    for path in files:
        if args.per_kernel:
            with open(path) as f:
                kernels = re.findall(r"\.entry\s+([A-Za-z_$][\w$]*)", f.read())
            units += [(path, k) for k in kernels]
        else:
            units.append((path, None))
    accepted = unsupported = rejected = failed = reimported = refused = 0
    newer = 0
    for path, kernel in units:
        name = os.path.basename(path) + (":" + kernel if kernel else "")
        out = os.path.join(args.out, name.replace(":", "."))
        cmd = [args.translate, "--target=" + args.target, path, "-o", out]
        if kernel:
            cmd.append("--kernel=" + kernel)
        if args.passes:
            cmd.append("--passes=" + args.passes)
        comp = subprocess.run(cmd, capture_output=True, text=True)
        if comp.returncode != 0:
            if args.passes and ("cannot be lowered for a GPU" in comp.stderr or
                                "synchronises its whole grid" in comp.stderr):
                refused += 1
                print("refused %s: %s" % (name, first_error(comp.stderr)))
            elif "or later; compiling for" in comp.stderr:
                # PTX for a newer GPU using what the target lacks.
                newer += 1
                print("needs a newer GPU %s: %s" %
                      (name, first_error(comp.stderr)))
            elif "not supported yet" in comp.stderr:
                unsupported += 1
                print("not supported yet %s: %s" %
                      (name, first_error(comp.stderr)))
            else:
                failed += 1
                print("FAIL %s: %s" % (name, first_error(comp.stderr)))
            continue
        asm = subprocess.run(
            [args.ptxas, "-arch=" + args.target, out, "-o", os.devnull],
            capture_output=True, text=True)
        if asm.returncode != 0 and "Unresolved extern" in asm.stderr:
            # Calls a function defined in another module: assemble it as a
            # relocatable object (`-c`), as nvcc -rdc does.
            asm = subprocess.run(
                [args.ptxas, "-c", "-arch=" + args.target, out, "-o",
                 os.devnull], capture_output=True, text=True)
        if asm.returncode != 0:
            rejected += 1
            print("REJECTED %s: %s" % (name, first_error(asm.stderr)))
            continue
        accepted += 1
        if args.reimport:
            imp = subprocess.run([args.translate, "--import-ptx", out],
                                 capture_output=True, text=True)
            ver = subprocess.run([args.opt, "-o", os.devnull],
                                 input=imp.stdout, capture_output=True,
                                 text=True) if imp.returncode == 0 else imp
            if ver.returncode != 0:
                failed += 1
                print("REIMPORT FAIL %s: %s" % (name, first_error(ver.stderr)))
            else:
                reimported += 1
    print("%d compiled and accepted by ptxas, %d not supported yet, "
          "%d rejected%s" % (accepted, unsupported, rejected,
                            ", %d refused" % refused if args.passes else ""))
    if newer:
        print("%d need a newer GPU" % newer)
    if args.reimport:
        print("%d re-imported and verified" % reimported)
    if failed:
        print("%d failed" % failed)
    return 1 if rejected or failed else 0


if __name__ == "__main__":
    sys.exit(main())
