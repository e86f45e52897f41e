package bundle

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// RuleEvaluator prepares one generated rule package for deciding values as
// the argument-rules step does: module is the source the SchemaCompiler
// returned for package mcpx.rules.<pkgName>. The function it returns gives
// the violations the package reports for value sitting at the JSON Pointer
// pointer ("" for the whole arguments): none means the rule accepts the
// value. Each violation is the object the generated code yields (path,
// constraint, expected, …). The real one is schemarego.Evaluator.
type RuleEvaluator func(module, pkgName string) (func(value any, pointer string) ([]map[string]any, error), error)

// maxExampleText caps how much of an example a message quotes.
const maxExampleText = 120

// checkExamples decides each of r's examples with the rule's generated
// package (pkg, whose source is out.Modules) and reports every example the
// rule disagrees with at the example's own file and line. prepared keeps
// the evaluator of each package across rules. It returns how many examples
// hold.
func (out *Compiled) checkExamples(r *ruleDef, pkg string, ev RuleEvaluator, prepared map[string]func(any, string) ([]map[string]any, error), c *collector) int {
	if len(r.examples) == 0 {
		return 0
	}
	decide, ok := prepared[pkg]
	if !ok {
		var err error
		switch {
		case ev == nil:
			err = fmt.Errorf("no rule evaluator is configured to check them")
		default:
			decide, err = ev(out.Modules["generated/"+pkg+".rego"], pkg)
		}
		if err != nil {
			c.add(r.at.file, r.at.line, r.at.path, "rule %q: its examples cannot be decided: %s", r.id, oneLine(err.Error()))
			return 0
		}
		prepared[pkg] = decide
	}
	ptr := pointer(r.argument)
	held := 0
	for _, ex := range r.examples {
		vs, err := decide(ex.value, ptr)
		switch {
		case err != nil:
			c.add(ex.at.file, ex.at.line, ex.at.path, "rule %q: example %s could not be decided: %s", r.id, exampleText(ex.value), oneLine(err.Error()))
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
func violationsText(vs []map[string]any) string {
	parts := make([]string, 0, len(vs))
	for _, v := range vs {
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
