// RUN: wooly-opt %s --wooly-slice="kernels=picked" --split-input-file --verify-diagnostics | FileCheck %s

// Only the kernels named are sliced (launch parameters appended, a
// dispatch loop); the others stay as written.
// CHECK-LABEL: wooly.func @picked
// CHECK-SAME: wooly.launch_param = "slice_begin"
// CHECK: atom global add
// CHECK-LABEL: wooly.func @left
// CHECK-SAME: (%{{[^:]*}}: i64 {wooly.type = "u64"}) attributes {kernel}
// CHECK-NEXT: sreg ctaid x
// CHECK-NEXT: st global
// CHECK-NEXT: ret
wooly.func @picked(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %b = wooly.sreg ctaid x : i32
  wooly.st global %out, %b : i64, i32
  wooly.ret
}
wooly.func @left(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
  %b = wooly.sreg ctaid x : i32
  wooly.st global %out, %b : i64, i32
  wooly.ret
}

// -----

// A name that is no kernel of the module is an error.
// expected-error @+1 {{wooly-slice: no kernel named 'picked'}}
module {
  wooly.func @other(%out: i64 {wooly.type = "u64"}) attributes {kernel} {
    wooly.ret
  }
}
