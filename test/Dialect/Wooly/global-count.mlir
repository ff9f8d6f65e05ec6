// RUN: wooly-opt %s --verify-diagnostics

// Negative element counts and alignments are rejected by the verifier.

// expected-error @+1 {{'wooly.global' op element count must not be negative}}
wooly.global global @a : i32[-1] align 4
