package render_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
	"github.com/mcpx/mcpx-policy/internal/secretcorpus"
)

// leaves lists every JSON Pointer of v's scalars with the value there.
func leaves(ptr string, v any, out map[string]any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			leaves(ptr+"/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"), e, out)
		}
	case []any:
		for i, e := range t {
			leaves(ptr+"/"+strconv.Itoa(i), e, out)
		}
	default:
		out[ptr] = v
	}
}

// corpusDecisions are the decisions a case's call is rendered with: a
// deny whose violations name every top-level argument and every leaf
// with its raw value, a deny by an override that quotes the arguments as
// JSON, and an ask for both reasons.
func corpusDecisions(t *testing.T, call decision.Call) []decision.Decision {
	t.Helper()
	cref := ref(t, call)
	rule := reason(decision.ArgumentRuleViolation, "ops.run: the arguments do not match (rule ops-safe, ops.yaml:3)")
	paths := map[string]any{}
	leaves("", call.Args, paths)
	for k, v := range call.Args {
		paths["/"+k] = v
	}
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		rule.Violations = append(rule.Violations, decision.Violation{Path: p, Value: paths[p], Constraint: "const", Expected: "safe",
			Rule: decision.RuleRef{ID: "ops-safe", Origin: "ops.yaml:3"}})
	}
	b, err := json.Marshal(call.Args)
	if err != nil {
		t.Fatal(err)
	}
	od := reason(decision.OverrideDeny, "refusing "+string(b))
	od.Details = map[string]any{"override_code": "Echo", "args": call.Args}
	oa := reason(decision.OverrideAsk, "confirm "+string(b))
	return []decision.Decision{
		{Outcome: decision.Deny, Step: decision.StepArgumentRules, Reasons: []decision.Reason{rule}, Warnings: []decision.Reason{}, Write: true, Call: cref},
		{Outcome: decision.Deny, Step: decision.StepOverrides, Reasons: []decision.Reason{od}, Warnings: []decision.Reason{}, Write: true, Call: cref},
		{Outcome: decision.Ask, Step: decision.StepOverrides, Reasons: []decision.Reason{oa, rule}, Warnings: []decision.Reason{}, Write: true, Call: cref},
	}
}

// TestCorpusNeverRendered puts every secret of the corpus — cloud keys,
// tokens, private keys, JWTs, passwords, data source names, basic and
// bearer credentials, in a secret-named key, a name/value object, a header
// list, [K, V] pairs, an argument vector, KEY=VALUE text, YAML, INI and
// .env blocks, JSON text in a string and command lines — in a call, in
// violations naming every argument and leaf, in messages and details that
// quote the arguments, and checks that no rendering on any surface shows
// it: refusals, asks, prompts (text, JSON, elicitation, input_required),
// after Unavailable and Declined, and RedactArgs. Like every caller that
// holds the arguments, it redacts the decision with them first.
func TestCorpusNeverRendered(t *testing.T) {
	t.Parallel()
	cases := secretcorpus.Cases()
	if len(cases) < 200 {
		t.Fatalf("the corpus has %d cases; it needs at least 200", len(cases))
	}
	cases = append(cases, secretcorpus.Shapes("hunter2")...) // hidden by the structure alone
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			call := decision.Call{Server: "ops", Tool: decision.Tool{Name: "run"}, Args: c.Args}
			all := map[string]string{}
			for i, raw := range corpusDecisions(t, call) {
				// Every caller that holds the arguments redacts with them
				// first; the surfaces then see only the decision.
				d := redact.Redact(raw, call.Args)
				for name, out := range renderings(t, call, d) {
					all[fmt.Sprint(i, " ", name)] = out
				}
				if d.Outcome == decision.Ask {
					p, err := render.Prompt(call, redact.Of(d, call.Args))
					if err != nil {
						t.Fatal(err)
					}
					b, _ := json.Marshal(p.InputRequired("state"))
					all["input_required"] = string(b)
					for name, out := range renderings(t, call, render.Unavailable(d)) {
						all["unavailable "+name] = out
					}
					for name, out := range renderings(t, call, render.Declined(d)) {
						all["declined "+name] = out
					}
				}
			}
			shown, _ := redact.RedactArgs(c.Args)
			b, _ := json.Marshal(shown)
			all["RedactArgs"] = string(b)
			for _, leak := range c.Leaks {
				assertNoLeak(t, leak, all)
			}
		})
	}
}

// TestNestedSecretsNeverRendered is the property over generated nestings:
// a corpus case wrapped at random depths in objects, arrays and JSON text
// in strings stays hidden in the prompt (text and JSON), in every
// rendering of a deny that quotes the arguments, and in what every other
// output redacts with (RedactArgs, RedactShown, RedactReplacing).
func TestNestedSecretsNeverRendered(t *testing.T) {
	t.Parallel()
	cases := secretcorpus.Cases()
	rng := rand.New(rand.NewPCG(23, 5))
	for i := 0; i < 600; i++ {
		c := secretcorpus.Nest(rng, cases[rng.IntN(len(cases))], 1+rng.IntN(5))
		call := decision.Call{Server: "ops", Tool: decision.Tool{Name: "run"}, Args: c.Args}
		ds := corpusDecisions(t, call)
		all := map[string]string{}
		for name, out := range renderings(t, call, redact.Redact(ds[1], call.Args)) {
			all[name] = out
		}
		p, err := render.Prompt(call, redact.Of(ds[2], call.Args))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		pj, _ := json.Marshal(p)
		all["prompt"], all["prompt json"] = p.Text(), string(pj)
		for name, f := range map[string]func(map[string]any) (map[string]any, []string){
			"RedactArgs": redact.RedactArgs, "RedactShown": redact.RedactShown,
			"RedactReplacing": func(a map[string]any) (map[string]any, []string) { return redact.RedactReplacing(a, "[REDACTED]") },
		} {
			out, _ := f(c.Args)
			b, _ := json.Marshal(out)
			all[name] = string(b)
		}
		for _, leak := range c.Leaks {
			q, _ := json.Marshal(leak)
			esc := strings.Trim(string(q), `"`)
			for name, s := range all {
				if strings.Contains(s, leak) || strings.Contains(s, esc) {
					t.Fatalf("%s: %s leaks %q:\n%s", c.Name, name, leak, s)
				}
			}
		}
	}
}

// TestStructureNamesSecrets pins what each structure hides, and that the
// names themselves and the values beside a non-secret name stay.
func TestStructureNamesSecrets(t *testing.T) {
	t.Parallel()
	args := map[string]any{
		"env":     []any{map[string]any{"name": "DB_PASSWORD", "value": "pw1"}, map[string]any{"name": "LOG_LEVEL", "value": "debug"}},
		"headers": []any{[]any{"X-Api-Key", "k2"}, []any{"Accept", "json"}},
		"argv":    []any{"tool", "--password", "pw3", "--port", "5432"},
		"command": "mysql",
		"args":    []any{"-u", "root", "-ppw4x", "shop"},
		"ref":     map[string]any{"name": "db-creds", "key": "password"},
		"unknown": []any{map[string]any{"key": "api_key", "path": "/api_key", "suggestion": ""}},
	}
	out, changed := redact.RedactShown(args)
	want := map[string]any{
		"env":     []any{map[string]any{"name": "DB_PASSWORD", "value": "[REDACTED by key name, 3 chars]"}, map[string]any{"name": "LOG_LEVEL", "value": "debug"}},
		"headers": []any{[]any{"X-Api-Key", "[REDACTED by key name, 2 chars]"}, []any{"Accept", "json"}},
		"argv":    []any{"tool", "--password", "[REDACTED by key name, 3 chars]", "--port", "5432"},
		"command": "mysql",
		"args":    []any{"-u", "root", "-p[REDACTED password-flag, 4 chars]", "shop"},
		"ref":     map[string]any{"name": "db-creds", "key": "password"},
		"unknown": []any{map[string]any{"key": "api_key", "path": "/api_key", "suggestion": ""}},
	}
	got, _ := json.Marshal(out)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("RedactShown =\n%s\nwant\n%s", got, exp)
	}
	if fmt.Sprint(changed) != "[/args/2 /argv/2 /env/0/value /headers/0/1]" {
		t.Errorf("changed = %v", changed)
	}
	// A violation at a path a structure hides is hidden whole, however
	// short its value: "pw1" is too short to be searched for in text.
	call := decision.Call{Server: "ops", Tool: decision.Tool{Name: "run"}, Args: args}
	r := reason(decision.ArgumentRuleViolation, "ops.run: /env/0/value is not allowed (rule r, ops.yaml:3)")
	r.Violations = []decision.Violation{{Path: "/env/0/value", Value: "pw1", Constraint: "const", Expected: "x"}}
	d := decision.Decision{Outcome: decision.Deny, Step: decision.StepArgumentRules, Reasons: []decision.Reason{r}, Warnings: []decision.Reason{}, Call: ref(t, call)}
	if v := redact.Redact(d, args).Reasons[0].Violations[0].Value; v != "[REDACTED by key name, 3 chars]" {
		t.Errorf("the violation's value shows %v", v)
	}
	rec, _ := redact.RedactReplacing(args, "[REDACTED]")
	b, _ := json.Marshal(rec)
	if !strings.Contains(string(b), `{"name":"DB_PASSWORD","value":"[REDACTED]"}`) || strings.Contains(string(b), "pw3") {
		t.Errorf("RedactReplacing = %s", b)
	}
}
