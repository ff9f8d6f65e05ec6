# -*- Python -*-
# Runs Wooly's GoogleTest binaries (build/unittests/**/*Tests) from lit,
# as upstream MLIR's test/Unit does.

import os

import lit.formats

config.name = "WOOLY-Unit"
config.suffixes = []  # Only GoogleTest executables, found by the format.

config.test_exec_root = os.path.join(config.wooly_obj_root, "unittests")
config.test_source_root = config.test_exec_root

# Every executable whose name ends in "Tests" (see add_wooly_unittest).
config.test_format = lit.formats.GoogleTest(config.llvm_build_mode, "Tests")

# Propagate the temp directory (some tests write scratch files).
for var in ["TMP", "TEMP", "TMPDIR", "HOME"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
