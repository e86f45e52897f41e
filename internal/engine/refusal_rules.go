package engine

import (
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

var kPointer = ast.StringTerm("pointer")

// ruleFindings is the argument-rules step's deny reasons
// (rego/mcpx/steps/rules.rego) for the tool's facts: the violations of
// every matched package the rules predicate does not vouch for, computed
// by the package's Explainer, and of every required argument that is
// absent, each rendered and worded as the step does. ok is false when a
// package has no Explainer, when santhosh and the Explainer disagree on a
// value, when a value, path, expected value or detail would be redacted,
// and for any data the step would read otherwise.
func (r *refusals) ruleFindings(ga *callArgs, facts ast.Object, label string) ([]decision.Reason, bool) {
	if missing, ok := field(facts, kMissingRules).(ast.Set); !ok || missing.Len() > 0 {
		return nil, false
	}
	packages, ok := field(facts, kPackages).(ast.Object)
	if !ok {
		return nil, false
	}
	required, ok := field(facts, kRequired).(*ast.Array)
	if !ok {
		return nil, false
	}
	args := argReader{goArgs: ga.goArgs, native: true, verdicts: ga.verdicts}
	found := map[string]*finding{}
	ok = true
	packages.Until(func(pkgT, rulesT *ast.Term) bool {
		pkg, isString := pkgT.Value.(ast.String)
		rules, isArray := rulesT.Value.(*ast.Array)
		if !isString || !isArray {
			ok = false
			return true
		}
		if r.preds.validator(string(pkg)) != nil && r.preds.verdict(args, string(pkg), rules) {
			return false // vouched for: the step does not evaluate it
		}
		ok = r.packageViolations(args, string(pkg), rules, found)
		return !ok
	})
	if !ok {
		return nil, false
	}
	for i := 0; i < required.Len(); i++ {
		id, pointer, ok := ruleEntry(required.Elem(i))
		if !ok {
			return nil, false
		}
		_, present, fine := args.read(required.Elem(i))
		if !fine {
			return nil, false
		}
		if present {
			continue
		}
		if _, dup := found[id]; dup {
			return nil, false
		}
		k := findingKey{id: id, pointer: pointer, value: scalarKey{kind: 'm'}}
		fd := r.memo.get(k)
		if fd == nil {
			fd = r.memo.put(k, &finding{vs: []schemarego.Violation{{Path: pointer, Value: ast.Null{}, Constraint: "required", Expected: ast.Boolean(true)}}})
		}
		found[id] = fd
	}
	if len(found) == 0 {
		return nil, true
	}
	// a violation's value is shown as text.show_at shows it: judged by
	// itself and its path's names only when no structure of the arguments
	// names a secret (lib.predicates.plain_args); otherwise a name beside
	// it or beside an ancestor may hide it, which the Rego decides
	if !r.preds.secrets.plainGoArgs(ga.goArgs) {
		return nil, false
	}
	code, step, ok := r.code("ArgumentRuleViolation")
	if !ok {
		return nil, false
	}
	reasons := make([]decision.Reason, 0, len(found))
	for id, fd := range found {
		reason, ok := r.ruleReason(id, fd, label)
		if !ok {
			return nil, false
		}
		reason.Code, reason.Step = code, step
		reasons = append(reasons, reason)
	}
	// the step's reasons are a set: OPA orders them by value, which for
	// reasons of one code is by message
	sort.Slice(reasons, func(i, j int) bool { return reasons[i].Message < reasons[j].Message })
	for i := 1; i < len(reasons); i++ {
		if reasons[i].Message == reasons[i-1].Message {
			return nil, false
		}
	}
	return reasons, true
}

// ruleEntry reads a matched rule's entry of the facts: its id and JSON
// Pointer.
func ruleEntry(t *ast.Term) (id, pointer string, ok bool) {
	o, isObject := t.Value.(ast.Object)
	if !isObject {
		return "", "", false
	}
	i, ok1 := field(o, kID).(ast.String)
	p, ok2 := field(o, kPointer).(ast.String)
	return string(i), string(p), ok1 && ok2
}

// packageViolations adds to found the violations of every value the rules
// of pkg check (the package's violations rule): ok is false when there is
// no Explainer for pkg, when a value cannot be read as the step reads it,
// and when santhosh's verdict on a value is not the Explainer's. The
// verdicts the predicates reached on this call's values are used, not
// asked again; a scalar value's finding comes from the memo.
func (r *refusals) packageViolations(args argReader, pkg string, rules *ast.Array, found map[string]*finding) bool {
	x := r.explainer(pkg)
	if x == nil {
		return false
	}
	for i := 0; i < rules.Len(); i++ {
		id, pointer, ok := ruleEntry(rules.Elem(i))
		if !ok {
			return false
		}
		target, present, fine := args.read(rules.Elem(i))
		if !fine {
			return false
		}
		if !present {
			continue
		}
		sk, keyed := scalarKeyOf(pkg, target)
		k := findingKey{id: id, pointer: pointer, value: sk}
		var fd *finding
		if keyed {
			fd = r.memo.get(k)
		}
		if fd == nil {
			fd = r.find(args, x, pkg, i, pointer, target)
			if keyed {
				fd = r.memo.put(k, fd)
			}
		}
		if fd.difference {
			return false // a difference: the Rego decides
		}
		if len(fd.vs) == 0 {
			continue
		}
		if _, dup := found[id]; dup {
			return false
		}
		found[id] = fd
	}
	return true
}

// find is the finding of the value target that rule i of pkg checks at
// pointer: the Explainer's violations, and whether santhosh's verdict
// (the one the predicates reached on this call, else asked now) differs.
func (r *refusals) find(args argReader, x *schemarego.Explainer, pkg string, i int, pointer string, target any) *finding {
	tv, err := value(target)
	if err != nil {
		return &finding{difference: true}
	}
	vs := r.violations(x, tv, pointer)
	valid, known := args.knownValid(pkg, i)
	if !known {
		valid = r.preds.valid(pkg, target)
	}
	return &finding{vs: vs, difference: valid != (len(vs) == 0)}
}

// explainer is pkg's Explainer, nil when the policy holds no package pkg,
// there is no schema for it, or the Explainer does not cover it.
func (r *refusals) explainer(pkg string) *schemarego.Explainer {
	r.mu.RLock()
	x, ok := r.explainers[pkg]
	r.mu.RUnlock()
	if ok {
		return x
	}
	if doc, ok := r.preds.schemas[pkg]; ok && r.preds.held(pkg) {
		x, _ = schemarego.NewExplainer(doc)
	}
	r.mu.Lock()
	r.explainers[pkg] = x
	r.mu.Unlock()
	return x
}

// ruleRef is steps.rules._rule_ref(id): the rule as the config names it.
func (r *refusals) ruleRef(id string) (decision.RuleRef, bool) {
	rule, ok := r.rules[id].(map[string]any)
	if !ok {
		return decision.RuleRef{}, false
	}
	ref := decision.RuleRef{ID: id, Origin: "?"}
	if o, present := rule["origin"]; present {
		if ref.Origin, ok = o.(string); !ok {
			return decision.RuleRef{}, false
		}
	}
	if d, present := rule["description"]; present {
		if ref.Description, ok = d.(string); !ok {
			return decision.RuleRef{}, false
		}
	}
	return ref, true
}

// silent are the constraints whose phrase does not show the value
// (steps.rules._silent_value).
var silent = map[string]bool{
	"required": true, "additionalProperties": true, "minProperties": true, "maxProperties": true,
	"dependentRequired": true, "propertyNames": true, "false": true,
}

// ruleReason is the reason rule id's finding makes (the step's deny),
// less its code and step: the finding's violations rendered (ruleParts)
// and the message.
func (r *refusals) ruleReason(id string, fd *finding, label string) (decision.Reason, bool) {
	phrases, out, origin, ok := fd.rendered(r, id)
	if !ok {
		return decision.Reason{}, false
	}
	msg := label + ": " + strings.Join(phrases, "; ") + " (rule " + id + ", " + origin + ")"
	// the rendered violations are shared by every decision made from the
	// finding: each decision gets its own slice
	return decision.Reason{Message: msg, Violations: append([]decision.Violation(nil), out...)}, true
}

// ruleParts renders rule id's violations vs as _render renders each (path,
// expected value and detail as the secret table leaves them, the value
// shown and cut, the rule's reference) and phrases them as the step's
// message does; origin is the rule's. ok is false when something would be
// redacted or the data is not of the shape the step reads.
func (r *refusals) ruleParts(id string, vs []schemarego.Violation) (phrases []string, out []decision.Violation, origin string, ok bool) {
	ref, ok := r.ruleRef(id)
	if !ok {
		return nil, nil, "", false
	}
	phrases = make([]string, len(vs))
	out = make([]decision.Violation, len(vs))
	dc := decoder{}
	for i, v := range vs {
		path, ok1 := r.plainText(v.Path)
		detail, ok2 := v.Detail, true
		if v.HasDetail {
			detail, ok2 = r.plainText(v.Detail)
		}
		key, ok3 := lastKey(v.Path)
		if !ok1 || !ok2 || !ok3 || !r.preds.secrets.plainValue(ast.String(""), v.Expected) || r.namedAbove(v.Path) {
			return nil, nil, "", false
		}
		shown, ok := r.show(key, v.Value)
		if !ok {
			return nil, nil, "", false
		}
		constraint, ok := constraintText(v.Constraint, v.Expected, detail, v.HasDetail)
		if !ok {
			return nil, nil, "", false
		}
		where := path
		if where == "" {
			where = "arguments"
		}
		if silent[v.Constraint] {
			phrases[i] = where + " " + constraint
		} else {
			text, ok := jsonText(shown)
			if !ok {
				return nil, nil, "", false
			}
			phrases[i] = where + " " + text + " " + constraint
		}
		out[i] = decision.Violation{Path: path, Value: dc.any(shown), Constraint: v.Constraint, Expected: dc.any(v.Expected), Detail: detail, Rule: ref}
	}
	if dc.err != nil {
		return nil, nil, "", false
	}
	return phrases, out, ref.Origin, true
}

// templates are steps.rules._templates.
var templates = map[string]string{
	"type":                 "is not of type %s",
	"enum":                 "is not one of %s",
	"const":                "is not %s",
	"pattern":              "does not match %s",
	"minLength":            "is shorter than %s characters",
	"maxLength":            "is longer than %s characters",
	"minimum":              "is less than %s",
	"maximum":              "is greater than %s",
	"exclusiveMinimum":     "is not greater than %s",
	"exclusiveMaximum":     "is not less than %s",
	"multipleOf":           "is not a multiple of %s",
	"minItems":             "has fewer than %s items",
	"maxItems":             "has more than %s items",
	"uniqueItems":          "has duplicate items",
	"contains":             "has no item that matches its contains schema",
	"minContains":          "has fewer than %s items that match its contains schema",
	"maxContains":          "has more than %s items that match its contains schema",
	"minProperties":        "has fewer than %s properties",
	"maxProperties":        "has more than %s properties",
	"additionalProperties": "is not allowed",
	"propertyNames":        "has a property name that is not allowed",
	"dependentRequired":    "lacks properties %s",
	"anyOf":                "matches none of the anyOf schemas",
	"oneOf":                "does not match exactly one of the oneOf schemas",
	"not":                  "matches a schema it must not match",
	"pathWithin":           "is not a path inside %s",
	"urlWithin":            "is not a URL allowed by %s",
	"false":                "is not allowed (false schema)",
}

// constraintText is steps.rules._constraint: the constraint's words with
// the expected value, then the detail in parentheses.
func constraintText(constraint string, expected ast.Value, detail string, hasDetail bool) (string, bool) {
	var base string
	t, known := templates[constraint]
	switch {
	case known && strings.Contains(t, "%s"):
		e, ok := expected.(ast.String)
		text := string(e)
		if !ok {
			if text, ok = jsonText(expected); !ok {
				return "", false
			}
		}
		base = fmt.Sprintf(t, text)
	case known:
		base = t
	case constraint == "required" && expected.Compare(ast.Boolean(true)) == 0:
		base = "is missing"
	default:
		text, ok := jsonText(expected)
		if !ok {
			return "", false
		}
		if constraint == "required" {
			base = "lacks required properties " + text
		} else {
			base = "fails " + constraint + " " + text
		}
	}
	if hasDetail {
		base += " (" + detail + ")"
	}
	return base, true
}

// namedAbove is text._named_above(ptr): a key of the pointer above its
// last names a secret (show_at then hides the value whole; the Rego
// decides). A pointer the secret table cannot read is a yes.
func (r *refusals) namedAbove(ptr string) bool {
	parts := strings.Split(ptr, "/")
	if len(parts) <= 2 {
		return false
	}
	for _, t := range parts[1 : len(parts)-1] {
		if r.preds.secrets.secretKey(unescape(t)) {
			return true
		}
	}
	return false
}
