package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// RuleEvaluator evaluates generated rule packages on values the way the
// argument-rules step does (ADR 0001): modules maps each package name to
// the source the SchemaCompiler returned for it; targets is what the
// step's data.mcpx.steps.rules.targets would hold — for each package,
// values by a key of the caller's, each {"value": v, "path": "<JSON
// Pointer>"} — and the result is each package's violations by the same
// keys (each violation the object the generated code yields: path,
// constraint, expected, …; an empty list for a valid value). The real one
// is schemarego.Evaluate.
type RuleEvaluator func(modules map[string]string, targets map[string]map[string]any) (map[string]map[string][]any, error)

// maxExampleText caps how much of an example a message quotes.
const maxExampleText = 120

// exampleCase is one example waiting for its verdict.
type exampleCase struct {
	rule *ruleDef
	ex   ruleExample
	pkg  string
	key  string
}

// checkExamples decides every example of rules (each rule's generated
// package is pkgs[rule id]) in one evaluation, and reports every example
// its rule disagrees with at the example's own file and line. It returns
// how many hold.
func (out *Compiled) checkExamples(rules []*ruleDef, pkgs map[string]string, ev RuleEvaluator, c *collector) int {
	var cases []exampleCase
	targets := map[string]map[string]any{}
	modules := map[string]string{}
	for _, r := range rules {
		if len(r.examples) == 0 {
			continue
		}
		if ev == nil {
			c.add(r.at.file, r.at.line, r.at.path, "rule %q: its examples cannot be decided: no rule evaluator is configured to check them", r.id)
			continue
		}
		pkg := pkgs[r.id]
		modules[pkg] = out.Modules["generated/"+pkg+".rego"]
		if targets[pkg] == nil {
			targets[pkg] = map[string]any{}
		}
		for _, ex := range r.examples {
			key := "e" + strconv.Itoa(len(cases))
			targets[pkg][key] = map[string]any{"value": ex.value, "path": pointer(r.argument)}
			cases = append(cases, exampleCase{rule: r, ex: ex, pkg: pkg, key: key})
		}
	}
	if len(cases) == 0 {
		return 0
	}
	verdicts, err := ev(modules, targets)
	if err != nil {
		r := cases[0].rule
		c.add(r.at.file, r.at.line, r.at.path, "rule examples cannot be decided: %s", oneLine(err.Error()))
		return 0
	}
	held := 0
	for _, k := range cases {
		r, ex := k.rule, k.ex
		vs, ok := verdicts[k.pkg][k.key]
		switch {
		case !ok:
			c.add(ex.at.file, ex.at.line, ex.at.path, "rule %q: example %s got no verdict", r.id, exampleText(ex.value))
		case ex.valid && len(vs) > 0:
			c.add(ex.at.file, ex.at.line, ex.at.path, "rule %q: example %s is listed as valid, but the rule refuses it (%s)", r.id, exampleText(ex.value), violationsText(vs))
		case !ex.valid && len(vs) == 0:
			c.add(ex.at.file, ex.at.line, ex.at.path, "rule %q: example %s is listed as invalid, but the rule accepts it", r.id, exampleText(ex.value))
		default:
			held++
		}
	}
	return held
}

// exampleText is an example as a message quotes it: its JSON, cut.
func exampleText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := string(b)
	if utf8.RuneCountInString(s) <= maxExampleText {
		return s
	}
	n := 0
	for i := range s {
		if n == maxExampleText {
			return fmt.Sprintf("%s…[cut, %d chars in full]", s[:i], utf8.RuneCountInString(s))
		}
		n++
	}
	return s
}

// violationsText names each violation by its keyword, expected value and
// place: "minimum 1 at /head; pattern \"^/workspace/\" at /path".
func violationsText(vs []any) string {
	parts := make([]string, 0, len(vs))
	for _, x := range vs {
		v, _ := x.(map[string]any)
		constraint, _ := v["constraint"].(string)
		if constraint == "" {
			constraint = "a constraint"
		}
		text := constraint
		if exp, ok := v["expected"]; ok && exp != nil && constraint != "required" {
			text += " " + exampleText(exp)
		}
		if path, _ := v["path"].(string); path != "" {
			text += " at " + path
		} else {
			text += " at the root"
		}
		parts = append(parts, text)
	}
	return strings.Join(parts, "; ")
}
