// Package sweep sizes the long equivalence sweeps of the tests — the
// embedded engine against the policy's plain Rego on the reference
// workloads, the JSON Schema suite and the Rego tests' inputs — so that
// `go test ./...` and `make test` run in minutes and `make test-full`
// runs every case.
//
// A quick run (the default) decides every Stride-th case of each sweep,
// starting at the first: the same cases on every run, spread over the
// whole sweep, and meeting every variant the workloads mix in (bench's
// Variant repeats every 3, 9, 13, 17 and 19 calls, the pins every 11;
// Stride is prime to each). A full run, MCPX_POLICY_TEST_FULL=1 (make
// test-full, .ci/run), decides them all.
package sweep

import (
	"fmt"
	"os"
)

// Env names the variable that asks for the full sweeps: "1" is a full
// run; unset or "0" a quick one; any other value is a mistake the tests
// report (Stride panics) rather than guess at.
const Env = "MCPX_POLICY_TEST_FULL"

// QuickStride is the step between the cases a quick run decides: a prime,
// and prime to the periods of the reference workloads' variants (3, 9,
// 13, 17 and 19: bench.Variant), so a sample meets every variant. It was
// 7 until make test outgrew its 6 minutes (ADR 0019).
const QuickStride = 11

// Full reports whether this is a full run.
func Full() bool { return Stride() == 1 }

// Stride is the step between the cases this run decides: 1 in a full
// run, QuickStride in a quick one.
func Stride() int {
	switch v := os.Getenv(Env); v {
	case "1":
		return 1
	case "", "0":
		return QuickStride
	default:
		panic(fmt.Sprintf("%s=%q: want 1 (every case) or 0 (a sample)", Env, v))
	}
}

// Take reports whether case i of a sweep is decided in this run.
func Take(i int) bool { return i%Stride() == 0 }

// Count is how many of the first n cases this run decides.
func Count(n int) int {
	s := Stride()
	return (n + s - 1) / s
}

// Describe says, for a test's log, how much of a sweep of n cases ran.
func Describe(n int) string {
	if Full() {
		return fmt.Sprintf("all %d cases (%s=1)", n, Env)
	}
	return fmt.Sprintf("%d of %d cases, every %dth (%s=1 runs all: make test-full)", Count(n), n, Stride(), Env)
}
