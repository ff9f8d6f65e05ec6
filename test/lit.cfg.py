# -*- Python -*-
# Configuration file for Wooly's lit test suite.

import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "WOOLY"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)

# Tests are .mlir, .ptx and .test files. test/corpus holds PTX *inputs* (and
# their CUDA sources), not tests, so it is excluded.
config.suffixes = [".mlir", ".ptx", ".test"]
config.excludes = ["corpus", "lit.cfg.py", "CMakeLists.txt", "README.md", "Inputs"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.wooly_obj_root, "test")

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()  # FileCheck, not, count, %python

# Wooly's tools first on PATH, then LLVM's (FileCheck, not, split-file, ...).
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.wooly_tools_dir, append_path=True)

tool_dirs = [config.wooly_tools_dir, config.llvm_tools_dir]
tools = [
    "wooly-opt",
    "wooly-translate",
    "wooly-run",
    "wooly-conformance",
    "wooly-fuzz-ptx",
    "wooly-fuzz-fatbin",
    "wooly-fuzz-protocol",
    "split-file",
    ToolSubst("%PYTHON", config.python_executable, unresolved="ignore"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# PTX inputs shared by many tests.
config.substitutions.append(
    ("%corpus_dir", os.path.join(config.test_source_root, "corpus"))
)

# ZLUDA's PTX conformance data, beside the checkout (../shared/conformance/zluda).
zluda_dir = os.path.realpath(config.wooly_zluda_dir)
config.substitutions.append(("%zluda_dir", zluda_dir))
if os.path.isdir(zluda_dir):
    config.available_features.add("zluda")
else:
    lit_config.note(
        "ZLUDA conformance folder %s not found: 'REQUIRES: zluda' tests are "
        "unsupported" % zluda_dir
    )


# Capture: unmodified CUDA programs run against a wooly-serve that the test
# starts (test/apps/with-server.py), through build/capture. The programs of
# test/apps/cuda are built where nvcc is installed ('REQUIRES: cuda-apps');
# prebuilt copies of two of them run everywhere.
config.substitutions.append(
    (
        "%with-server",
        "%s %s --serve %s --capture %s"
        % (
            config.python_executable,
            os.path.join(config.wooly_src_root, "test", "apps", "with-server.py"),
            os.path.join(config.wooly_tools_dir, "wooly-serve"),
            os.path.join(config.wooly_obj_root, "capture"),
        ),
    )
)
config.substitutions.append(
    ("%prebuilt_apps", os.path.join(config.wooly_src_root, "test", "apps", "cuda", "prebuilt"))
)
config.substitutions.append(("%cuda_apps", config.wooly_cuda_apps_dir))
config.substitutions.append(("%wooly_src_root", config.wooly_src_root))
config.substitutions.append(("%wooly_obj_root", config.wooly_obj_root))
# The stand-in CUDA driver without a GPU (unittests/Runtime/FakeCudaDriver.cpp,
# built with the unit tests): its folder, to put first in LD_LIBRARY_PATH of
# `wooly-serve --backend cuda` ('REQUIRES: fake-cuda').
fake_cuda = os.path.join(config.wooly_obj_root, "unittests", "Runtime",
                         "fake-cuda-full")
config.substitutions.append(("%fake_cuda", fake_cuda))
if os.path.exists(os.path.join(fake_cuda, "libcuda.so.1")):
    config.available_features.add("fake-cuda")
config.substitutions.append(
    ("%wooly_capture", os.path.join(config.wooly_obj_root, "capture"))
)
if config.wooly_have_cuda_apps in ("ON", "1", "TRUE", "YES") and os.path.isdir(
    config.wooly_cuda_apps_dir
):
    config.available_features.add("cuda-apps")
else:
    lit_config.note(
        "the CUDA test programs were not built (no nvcc): 'REQUIRES: cuda-apps' "
        "tests are unsupported"
    )
# The drop-in cuBLAS and the programs that use it: where the toolkit has
# cuBLAS ('REQUIRES: cublas').
if config.wooly_have_cublas_apps in ("ON", "1", "TRUE", "YES"):
    config.available_features.add("cublas")
elif "cuda-apps" in config.available_features:
    lit_config.note(
        "no cuBLAS in the CUDA toolkit: 'REQUIRES: cublas' tests are unsupported"
    )


def _has_nvidia_gpu():
    if os.path.exists("/dev/nvidia0"):
        return True
    nvidia_smi = shutil.which("nvidia-smi")
    if not nvidia_smi:
        return False
    try:
        subprocess.run(
            [nvidia_smi, "-L"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=20,
            check=True,
        )
        return True
    except (OSError, subprocess.SubprocessError):
        return False


# Tests that need a GPU (test/Integration) say 'REQUIRES: cuda'.
if _has_nvidia_gpu():
    config.available_features.add("cuda")
else:
    lit_config.note("no NVIDIA GPU found: 'REQUIRES: cuda' tests are unsupported")

# ptxas from the CUDA toolkit, to check that generated PTX assembles.
ptxas = "/usr/local/cuda/bin/ptxas"
if not os.path.isfile(ptxas):
    ptxas = shutil.which("ptxas") or ""
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
else:
    config.substitutions.append(("%ptxas", "ptxas"))
    lit_config.note("ptxas not found: 'REQUIRES: ptxas' tests are unsupported")

# ld.lld links AMDGPU code objects (the compile API finds it the same way:
# ld.lld-<major> or ld.lld on PATH, else LLVM's bin directory).
ld_lld = (
    shutil.which("ld.lld-22")
    or shutil.which("ld.lld")
    or shutil.which("ld.lld", path=config.llvm_tools_dir)
)
if ld_lld:
    config.available_features.add("ld.lld")
else:
    lit_config.note("ld.lld not found: 'REQUIRES: ld.lld' tests are unsupported")

# LLVM's binary tools, to read code objects back (llvm-22-tools).
llvm_config.add_tool_substitutions(
    [ToolSubst(t, unresolved="ignore") for t in ["llvm-readelf", "llvm-as"]],
    [config.llvm_tools_dir],
)

