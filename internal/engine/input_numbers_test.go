package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
)

// TestNumbersThatAreNotJSONDenied: an SDK caller's argument that is a
// number but not a JSON one (NaN, ±Inf, a json.Number whose text is not a
// number) is an InvalidInput deny with an error wherever a rule reads it;
// OPA, handed such a number, panicked comparing it.
func TestNumbersThatAreNotJSONDenied(t *testing.T) {
	eng, err := engine.Prepare(context.Background(), policyOfYAML(t, refusalConfig))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{math.Inf(1), math.Inf(-1), math.NaN(), float32(math.Inf(1)), json.Number("abc"), json.Number("NaN"), json.Number("+Inf"), json.Number(""), json.Number("1."), json.Number("01")} {
		for _, k := range []string{"n", "o", "tags", "path", "unknown"} {
			what := fmt.Sprintf("%s = %#v", k, v)
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: the engine panicked: %v", what, r)
					}
				}()
				d, err := eng.Decide(context.Background(), decision.Call{Server: "s", Tool: decision.Tool{Name: "plain"}, Args: map[string]any{k: v}}, &engine.Ledger{})
				if err == nil || d.Outcome != decision.Deny || d.First().Code != decision.InvalidInput {
					t.Errorf("%s: %s %s, %v; want an InvalidInput deny and an error", what, d.Outcome, d.First().Code, err)
				}
			}()
		}
	}
}
