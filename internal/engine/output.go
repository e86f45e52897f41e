package engine

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
)

// FromValue reads the policy's decision document. Anything that is not a
// well-formed decision with a known outcome and known codes is an error, so
// the caller denies.
func FromValue(v any) (decision.Decision, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return decision.Decision{}, fmt.Errorf("decision: %w", err)
	}
	return Parse(raw)
}

// Parse reads a decision document from JSON (the engine's own output, or a
// stock OPA server's) and checks it (see FromValue).
func Parse(raw []byte) (decision.Decision, error) {
	var d decision.Decision
	if err := json.Unmarshal(raw, &d); err != nil {
		return decision.Decision{}, fmt.Errorf("decision: %w", err)
	}
	return check(d)
}

// fromTerm reads the policy's decision straight from the evaluation's
// ast.Value, without the JSON round trip of FromValue, and checks it the
// same way. It decodes exactly as FromValue does (encoding/json into
// decision.Decision): numbers in the free-form fields (details, violation
// values) become float64 (a number beyond float64 is an error, as it is for
// encoding/json), sets become arrays, a field of the wrong type is an
// error, unknown fields are ignored.
func fromTerm(v ast.Value) (decision.Decision, error) {
	obj, ok := v.(ast.Object)
	if !ok {
		return decision.Decision{}, fmt.Errorf("decision: not an object: %s", ast.ValueName(v))
	}
	var d decision.Decision
	var err error
	dec := decoder{}
	d.Outcome = decision.Outcome(dec.str(obj, "outcome"))
	d.Step = decision.Step(dec.str(obj, "step"))
	d.Reasons = dec.reasons(obj, "reasons")
	d.Warnings = dec.reasons(obj, "warnings")
	d.Write = dec.boolean(obj, "write")
	d.Destructive = dec.boolean(obj, "destructive")
	if call := dec.object(obj, "call"); call != nil {
		d.Call = decision.CallRef{Server: dec.str(call, "server"), Tool: dec.str(call, "tool"), SHA256: dec.str(call, "sha256")}
	}
	if sh := dec.object(obj, "shadow"); sh != nil {
		d.Shadow = &decision.Shadow{Outcome: decision.Outcome(dec.str(sh, "outcome")), Step: decision.Step(dec.str(sh, "step")), Reasons: dec.reasons(sh, "reasons")}
	}
	if dec.err != nil {
		return decision.Decision{}, fmt.Errorf("decision: %w", dec.err)
	}
	if d, err = check(d); err != nil {
		return decision.Decision{}, err
	}
	return d, nil
}

// check applies Parse's checks to a decoded decision. A shadow member
// (shadow mode) is checked as the decision is, and may differ from the
// outcome only as shadow mode does: a less severe outcome in its place
// (an ask, or an allow with no reason).
func check(d decision.Decision) (decision.Decision, error) {
	if err := checkVerdict(d.Outcome, d.Reasons); err != nil {
		return decision.Decision{}, fmt.Errorf("decision: %w", err)
	}
	for _, r := range d.Warnings {
		if !r.Code.Known() {
			return decision.Decision{}, fmt.Errorf("decision: unknown reason code %q", r.Code)
		}
	}
	if d.Reasons == nil {
		d.Reasons = []decision.Reason{}
	}
	if d.Warnings == nil {
		d.Warnings = []decision.Reason{}
	}
	if sh := d.Shadow; sh != nil {
		if err := checkVerdict(sh.Outcome, sh.Reasons); err != nil {
			return decision.Decision{}, fmt.Errorf("decision: shadow: %w", err)
		}
		if sh.Outcome != d.Outcome && (d.Outcome.Severity() >= sh.Outcome.Severity() || d.Outcome == decision.Allow && len(d.Reasons) > 0) {
			return decision.Decision{}, fmt.Errorf("decision: shadow: outcome %s under shadow %s; shadow mode only relaxes (to an ask, or an allow with no reason)", d.Outcome, sh.Outcome)
		}
		if sh.Reasons == nil {
			sh.Reasons = []decision.Reason{}
		}
	}
	return d, nil
}

// checkVerdict checks an outcome and its reasons: a known outcome, a
// reason for anything but an allow, known codes.
func checkVerdict(outcome decision.Outcome, reasons []decision.Reason) error {
	switch outcome {
	case decision.Allow, decision.Ask, decision.Deny:
	default:
		return fmt.Errorf("unknown outcome %q", outcome)
	}
	if outcome != decision.Allow && len(reasons) == 0 {
		return fmt.Errorf("%s without a reason", outcome)
	}
	for _, r := range reasons {
		if !r.Code.Known() {
			return fmt.Errorf("unknown reason code %q", r.Code)
		}
	}
	return nil
}

// decoder reads typed fields of ast objects, keeping the first error.
type decoder struct{ err error }

func (dc *decoder) fail(format string, args ...any) {
	if dc.err == nil {
		dc.err = fmt.Errorf(format, args...)
	}
}

// decodedKeys are the key terms of the members the decoder reads, made
// once: OPA interns few strings, and a term built per read is an
// allocation.
var decodedKeys = func() map[string]*ast.Term {
	m := map[string]*ast.Term{}
	for _, k := range []string{
		"outcome", "step", "reasons", "warnings", "write", "destructive", "call", "server", "tool", "sha256",
		"shadow", "code", "message", "violations", "details", "path", "constraint", "detail", "value", "expected",
		"rule", "id", "origin", "description",
	} {
		m[k] = ast.StringTerm(k)
	}
	return m
}()

func keyOf(key string) *ast.Term {
	if t, ok := decodedKeys[key]; ok {
		return t
	}
	return ast.StringTerm(key)
}

func get(obj ast.Object, key string) (ast.Value, bool) {
	t := obj.Get(keyOf(key))
	if t == nil {
		return nil, false
	}
	if _, null := t.Value.(ast.Null); null {
		return nil, false // JSON null leaves a Go field at its zero value
	}
	return t.Value, true
}

func (dc *decoder) str(obj ast.Object, key string) string {
	v, ok := get(obj, key)
	if !ok {
		return ""
	}
	s, ok := v.(ast.String)
	if !ok {
		dc.fail("%s: want a string, got %s", key, ast.ValueName(v))
		return ""
	}
	return string(s)
}

func (dc *decoder) boolean(obj ast.Object, key string) bool {
	v, ok := get(obj, key)
	if !ok {
		return false
	}
	b, ok := v.(ast.Boolean)
	if !ok {
		dc.fail("%s: want a boolean, got %s", key, ast.ValueName(v))
		return false
	}
	return bool(b)
}

func (dc *decoder) object(obj ast.Object, key string) ast.Object {
	v, ok := get(obj, key)
	if !ok {
		return nil
	}
	o, ok := v.(ast.Object)
	if !ok {
		dc.fail("%s: want an object, got %s", key, ast.ValueName(v))
		return nil
	}
	return o
}

// list returns the elements of an array (or a set, which JSON renders as
// an array).
func (dc *decoder) list(obj ast.Object, key string) ([]*ast.Term, bool) {
	v, ok := get(obj, key)
	if !ok {
		return nil, false
	}
	switch x := v.(type) {
	case *ast.Array:
		out := make([]*ast.Term, 0, x.Len())
		x.Foreach(func(t *ast.Term) { out = append(out, t) })
		return out, true
	case ast.Set: // as rego renders sets: in iteration order
		out := make([]*ast.Term, 0, x.Len())
		x.Foreach(func(t *ast.Term) { out = append(out, t) })
		return out, true
	}
	dc.fail("%s: want an array, got %s", key, ast.ValueName(v))
	return nil, false
}

func (dc *decoder) reasons(obj ast.Object, key string) []decision.Reason {
	ts, ok := dc.list(obj, key)
	if !ok {
		return nil
	}
	out := make([]decision.Reason, 0, len(ts))
	for _, t := range ts {
		ro, ok := t.Value.(ast.Object)
		if !ok {
			if _, null := t.Value.(ast.Null); !null {
				dc.fail("%s: want objects, got %s", key, ast.ValueName(t.Value))
			}
			out = append(out, decision.Reason{})
			continue
		}
		r := decision.Reason{Code: decision.Code(dc.str(ro, "code")), Step: decision.Step(dc.str(ro, "step")), Message: dc.str(ro, "message")}
		if vs, ok := dc.list(ro, "violations"); ok {
			r.Violations = make([]decision.Violation, 0, len(vs))
			for _, vt := range vs {
				r.Violations = append(r.Violations, dc.violation(vt.Value))
			}
		}
		if det := dc.object(ro, "details"); det != nil {
			if m, ok := dc.any(det).(map[string]any); ok {
				r.Details = m
			}
		}
		out = append(out, r)
	}
	return out
}

func (dc *decoder) violation(v ast.Value) decision.Violation {
	o, ok := v.(ast.Object)
	if !ok {
		if _, null := v.(ast.Null); !null {
			dc.fail("violations: want objects, got %s", ast.ValueName(v))
		}
		return decision.Violation{}
	}
	out := decision.Violation{Path: dc.str(o, "path"), Constraint: dc.str(o, "constraint"), Detail: dc.str(o, "detail")}
	if t := o.Get(keyOf("value")); t != nil {
		out.Value = dc.any(t.Value)
	}
	if t := o.Get(keyOf("expected")); t != nil {
		out.Expected = dc.any(t.Value)
	}
	if rule := dc.object(o, "rule"); rule != nil {
		out.Rule = decision.RuleRef{ID: dc.str(rule, "id"), Origin: dc.str(rule, "origin"), Description: dc.str(rule, "description")}
	}
	return out
}

// any converts a value as encoding/json decodes it into an interface:
// float64 numbers, []any, map[string]any.
func (dc *decoder) any(v ast.Value) any {
	switch x := v.(type) {
	case ast.Null:
		return nil
	case ast.Boolean:
		return bool(x)
	case ast.String:
		return string(x)
	case ast.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			dc.fail("number %s: %v", x, err)
			return nil
		}
		return f
	case *ast.Array:
		out := make([]any, 0, x.Len())
		x.Foreach(func(t *ast.Term) { out = append(out, dc.any(t.Value)) })
		return out
	case ast.Set:
		out := make([]any, 0, x.Len())
		x.Foreach(func(t *ast.Term) { out = append(out, dc.any(t.Value)) })
		return out
	case ast.Object:
		out := make(map[string]any, x.Len())
		x.Foreach(func(k, t *ast.Term) {
			ks, ok := k.Value.(ast.String)
			if !ok {
				// ast.JSON renders a non-string key as its JSON text
				b, err := json.Marshal(mustJSON(k.Value))
				if err != nil {
					dc.fail("object key %s: %v", k, err)
					return
				}
				ks = ast.String(b)
			}
			out[string(ks)] = dc.any(t.Value)
		})
		return out
	}
	dc.fail("value %s cannot be JSON", ast.ValueName(v))
	return nil
}

func mustJSON(v ast.Value) any {
	x, err := ast.JSON(v)
	if err != nil {
		return nil
	}
	return x
}
