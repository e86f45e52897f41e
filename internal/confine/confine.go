// Package confine decides whether a file path stays inside a set of roots
// and whether a URL stays inside an allowlist of schemes, hosts and ports:
// the argument-rule keywords pathWithin and urlWithin
// (docs/argument-rules.md#paths-and-urls).
//
// Both are written twice, once here in Go and once in Rego (rego.go), and
// the two forms must agree exactly, verdict and words: the generated rule
// packages run the Rego (embedded, under opa test and on a stock OPA), and
// the embedded engine's Go check of a rule (santhosh v6 with this
// package's vocabulary) runs the Go. Exactly, not merely "Go stricter":
// a rule may put either keyword under not, anyOf or oneOf, where a Go
// check stricter than its Rego would accept more. The tests hold the two
// to each other on tables, generated inputs and a fuzzer, and hold the Go
// to the standard library's path cleaning and URL parsing.
//
// The semantics are strict by design: anything a server, a shell or a URL
// parser could read in more than one way is refused, not interpreted.
// Everything here is a pure function of its arguments and safe for
// concurrent use.
package confine

import (
	"fmt"
	"strings"
)

// maxResolve caps the segments of a path whose ".." segments are resolved
// to show where the path leads (a refusal's detail). The Rego resolves
// with a quadratic walk; past the cap the detail just names the "..".
const maxResolve = 256

// listOf reads a keyword's value as a non-empty list of strings.
func listOf(v any, what string) ([]string, error) {
	xs, ok := v.([]any)
	if !ok || len(xs) == 0 {
		return nil, fmt.Errorf("want a non-empty list of %s", what)
	}
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("want a list of %s, got %v", what, x)
		}
		out = append(out, s)
	}
	return out, nil
}

// controlRune reports whether r is a C0 or C1 control character or DEL:
// the characters a path or URL may never hold (NUL ends a C string, a
// newline or an escape sequence forges what a log or a terminal shows).
func controlRune(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

func hasControl(s string) bool {
	return strings.IndexFunc(s, controlRune) >= 0
}
