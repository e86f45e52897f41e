package render_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// benchArgs are arguments like the reference workload M's (about 1 KB: a
// path, 600 characters of prose, tags, options), with a PEM private key
// at the start of the prose when pem.
func benchArgs(rng *rand.Rand, c int, pem bool) map[string]any {
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	var content strings.Builder
	if pem {
		content.WriteString("-----BEGIN RSA PRIVATE KEY-----\nMIIE")
	}
	for content.Len() < 600 {
		content.WriteString(words[rng.IntN(len(words))])
		content.WriteByte(' ')
	}
	tags := []any{}
	for i := range 8 {
		tags = append(tags, fmt.Sprintf("%s%d", words[rng.IntN(len(words))], i))
	}
	return map[string]any{
		"path":    fmt.Sprintf("/workspace/project%d/src/file_%d.go", c%37, c),
		"content": content.String(),
		"mode":    "overwrite",
		"count":   json.Number(fmt.Sprint(rng.IntN(900))),
		"tags":    tags,
		"options": map[string]any{"force": false, "depth": json.Number("3"), "encoding": "utf-8"},
		"meta":    map[string]any{"request": fmt.Sprintf("req-%06d", c), "attempt": json.Number("1")},
	}
}

// BenchmarkRedactAnswer is the redaction one answer of serve makes, by
// the kind of decision (the reference workload's refusals and asks): the
// decision redacted with the call's arguments (redact.Of) and, for an
// ask, its prompt (render.Prompt, which shows the arguments redacted).
// An allow reads no argument.
//
//	go test -run '^$' -bench '^BenchmarkRedactAnswer$' -benchmem ./internal/render/
func BenchmarkRedactAnswer(b *testing.B) {
	ref := decision.CallRef{Server: "srv008", Tool: "edit_23"}
	rule := decision.RuleRef{ID: "pool-0", Origin: "mcpx-policy.yaml:11", Description: "paths stay in the workspace"}
	cases := []struct {
		name string
		pem  bool
		d    func(args map[string]any) decision.Decision
	}{
		{"allow", false, func(map[string]any) decision.Decision {
			return decision.Decision{Outcome: decision.Allow, Reasons: []decision.Reason{}, Warnings: []decision.Reason{}, Call: ref}
		}},
		{"deny-argument-rule", false, func(args map[string]any) decision.Decision {
			p := args["path"].(string)
			d := decision.Denied(ref, decision.ArgumentRuleViolation, fmt.Sprintf("srv008.edit_23: /path %q does not match ^/(workspace|tmp)/ (rule pool-0, mcpx-policy.yaml:11)", p))
			d.Reasons[0].Violations = []decision.Violation{{Path: "/path", Value: p, Constraint: "pattern", Expected: "^/(workspace|tmp)/", Detail: "does not match", Rule: rule}}
			return d
		}},
		{"deny-unknown-args", false, func(map[string]any) decision.Decision {
			return decision.Denied(ref, decision.UnknownArguments, `srv010.edit_18: unknown argument "verbose"; valid arguments: "content", "count", "cursor", "meta", "mode", "options", "path", "ratio", "tags"; the call was not executed`)
		}},
		{"deny-private-key", true, func(args map[string]any) decision.Decision {
			d := decision.Denied(ref, decision.ArgumentRuleViolation, "srv008.edit_23: /content holds a private key (rule pool-1, mcpx-policy.yaml:19)")
			d.Reasons[0].Violations = []decision.Violation{{Path: "/content", Value: args["content"], Constraint: "not", Expected: false, Detail: "holds a private key", Rule: rule}}
			return d
		}},
		{"ask", false, func(map[string]any) decision.Decision {
			return decision.Decision{Outcome: decision.Ask, Write: true, Call: ref, Reasons: []decision.Reason{{Code: decision.WriteNeedsConfirmation,
				Message: "srv008.edit_23 is a write and writes to srv008 need confirmation (write mode ask)"}}}
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(28, 4))
			calls := make([]decision.Call, b.N)
			ds := make([]decision.Decision, b.N)
			for i := range calls {
				calls[i] = decision.Call{Server: ref.Server, Tool: decision.Tool{Name: ref.Tool}, Args: benchArgs(rng, i, c.pem)}
				ds[i] = c.d(calls[i].Args)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				r := redact.Of(ds[i], calls[i].Args)
				if ds[i].Outcome == decision.Ask {
					if _, err := render.Prompt(calls[i], r); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
