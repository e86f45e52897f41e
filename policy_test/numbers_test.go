package policy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// numbersConfig forbids one value per argument. A server that reads JSON
// numbers as doubles (JavaScript, most MCP servers) reads 9007199254740993
// as 9007199254740992 and 1.0000000000000001 as 1: the forbidden values.
const numbersConfig = `version: 1
policy:
  write: allow
servers:
  calc:
    argumentRules:
      - id: not-2p53
        tools: ["set"]
        argument: n
        schema: {not: {const: 9007199254740992}}
      - id: not-one
        tools: ["set"]
        argument: m
        schema: {not: {const: 1}}
`

var setTool = decision.Tool{Name: "set", Annotations: readOnly, InputSchema: map[string]any{"type": "object", "additionalProperties": true}}

// argsOf decodes JSON arguments as every surface does (UseNumber: the
// numbers keep their text).
func argsOf(t *testing.T, raw string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		t.Fatal(err)
	}
	return args
}

// TestNumbersAreJudgedAsTheServerReadsThem: a number that a double reader
// would read as another value is an InvalidInput deny naming its argument
// path; every number such a reader reads as written is judged by the
// rules as before.
func TestNumbersAreJudgedAsTheServerReadsThem(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, numbersConfig)
	cases := []struct {
		args    string
		code    decision.Code // first reason; "" means allow
		message string        // a piece of its message
	}{
		{`{"n": 9007199254740993}`, decision.InvalidInput, "args /n: the number 9007199254740993 reads as 9.007199254740992e+15 in a double"},
		{`{"m": 1.0000000000000001}`, decision.InvalidInput, "args /m: the number 1.0000000000000001 reads as 1 in a double"},
		{`{"n": 1e400}`, decision.InvalidInput, "args /n: the number 1e400 is beyond the range of a double"},
		{`{"deep": {"a/b": [0, 12345678901234567890]}}`, decision.InvalidInput, "args /deep/a~1b/1: the number 12345678901234567890 reads as 1.2345678901234567e+19"},
		{`{"n": 9007199254740992}`, decision.ArgumentRuleViolation, "/n 9007199254740992 matches a schema it must not match (rule not-2p53"},
		{`{"m": 1}`, decision.ArgumentRuleViolation, "(rule not-one"},
		{`{"m": 1.0}`, decision.ArgumentRuleViolation, "(rule not-one"},
		{`{"n": 9007199254740991, "m": 0.1}`, "", ""},
		{`{"n": 1e20, "m": 0.30000000000000004, "k": [5e-324, -0, 1.7976931348623157e308]}`, "", ""},
	}
	for _, c := range cases {
		d, err := eng.Decide(context.Background(), decision.Call{Server: "calc", Tool: setTool, Args: argsOf(t, c.args)})
		if c.code == "" {
			if err != nil || d.Outcome != decision.Allow {
				t.Errorf("%s: %s %v %v; want allow", c.args, d.Outcome, codes(d.Reasons), err)
			}
			continue
		}
		if d.Outcome != decision.Deny || d.First().Code != c.code || !strings.Contains(d.First().Message, c.message) {
			t.Errorf("%s: %s %s %q; want a %s deny with %q", c.args, d.Outcome, d.First().Code, d.First().Message, c.code, c.message)
		}
	}
}

// A Go caller's own numbers are held to the same rule: an int64 beyond
// 2^53 is refused, a float64 is always what it says.
func TestSDKNumbersOfGoTypes(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, numbersConfig)
	for _, c := range []struct {
		v    any
		code decision.Code
	}{
		{int64(9007199254740993), decision.InvalidInput},
		{uint64(1 << 63), decision.InvalidInput},
		{float64(9007199254740993), decision.ArgumentRuleViolation}, // it is 2^53
		{0.1, ""},
		{int64(1 << 53), decision.ArgumentRuleViolation},
	} {
		d, _ := eng.Decide(context.Background(), decision.Call{Server: "calc", Tool: setTool, Args: map[string]any{"n": c.v}})
		got := d.First().Code
		if d.Outcome == decision.Allow {
			got = ""
		}
		if got != c.code {
			t.Errorf("%T %v: %s %s %q; want %q", c.v, c.v, d.Outcome, got, d.First().Message, c.code)
		}
	}
}

// TestStockOPANumbers: a stock OPA server running the bundle decides these
// calls exactly as the embedded engine does: the check is in the policy's
// Rego, so a fleet needs no gateway code for it (docs/fleet.md).
func TestStockOPANumbers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a stock OPA server")
	}
	t.Parallel()
	eng, dir := newEngine(t, numbersConfig)
	tarball := filepath.Join(dir, "bundle.tar.gz")
	opts := mcpxpolicy.Options{ConfigPaths: []string{filepath.Join(dir, "mcpx-policy.yaml")}, Env: []string{}}
	writeBundle(t, opts, tarball, nil)
	base := opaServer(t, tarball)
	for _, raw := range []string{
		`{"n": 9007199254740993}`,
		`{"m": 1.0000000000000001}`,
		`{"n": 1e400, "m": -1e-400}`,
		`{"n": 9007199254740992}`,
		`{"n": 0.1, "m": 1e23, "x": [1.5000000000000000001e21, 0.1000000000000000000001]}`,
		`{"n": 12.5}`,
	} {
		call := decision.Call{Server: "calc", Tool: setTool, Args: argsOf(t, raw)}
		want, _ := eng.Decide(context.Background(), call)
		input, err := eng.OPAInput(call)
		if err != nil {
			t.Fatalf("%s: OPAInput: %v", raw, err)
		}
		status, result, body := postDecision(t, base, input)
		if status != http.StatusOK {
			t.Fatalf("%s: opa answered %d %s", raw, status, body)
		}
		got, err := eng.ParseDecision(call, result)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if g, w := generic(t, got), generic(t, want); !reflect.DeepEqual(g, w) {
			t.Errorf("%s: stock OPA decided\n%v\nthe engine decided\n%v", raw, g, w)
		}
	}
}

// TestEvalNumbers runs the rule through the built binary: eval refuses the
// number as malformed input (exit 1) and prints the path.
func TestEvalNumbers(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"mcpx-policy.yaml": numbersConfig,
		"call.json":        `{"server": "calc", "tool": {"name": "set", "annotations": {"readOnlyHint": true}}, "args": {"n": 9007199254740993}}`,
	})
	code, _, stderr := cli(t, "eval", "--config", filepath.Join(dir, "mcpx-policy.yaml"), "--state-dir", filepath.Join(dir, "state"), filepath.Join(dir, "call.json"))
	if code != 1 || !strings.Contains(stderr, "InvalidInput: invalid call: args /n: the number 9007199254740993 reads as 9.007199254740992e+15 in a double") {
		t.Fatalf("eval: exit %d\n%s", code, stderr)
	}
}
