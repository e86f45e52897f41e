package engine

import (
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// The engine-only refusal details (docs/decisions/0024-refusals-in-go.md).
// The Rego is the reference for every reason, violation and message, and a
// stock OPA answers with it. The embedded engine may build a refusal's
// details in Go instead, where a test proves them byte for byte the
// Rego's, and falls back to the Rego whenever it meets something it does
// not build exactly.
//
// The engine's first query, data.mcpx.common_or_planned, answers without
// the arguments either the common case's document or, for a call whose
// only findings can be unknown arguments and argument rules, the call's
// planned document, the tool's facts and whether its server is in shadow
// mode. For such a call the engine builds those two steps' findings in Go
// (unknownFindings, ruleFindings) and assembles the decision as
// uncommon_decision's first body does (rego/mcpx/decision.rego): one
// evaluation, no conversion of the arguments, no second walk of the
// failing rule packages. Whatever it does not build exactly — a nested
// unknown key, a value the secret table would redact, a rule package with
// unevaluated*, a schema santhosh and the Go violations disagree on, a
// shape of data it does not expect — makes buildPlanned give up (ok
// false), and the engine asks uncommon_decision: the Rego answers.

// refusals is what the builder reads besides the call: the policy's data
// (codes and the config's rules) and, per generated package, its
// Explainer.
type refusals struct {
	preds *predicates
	codes map[string]any // data.mcpx.codes
	rules map[string]any // data.mcpx.config.rules

	// violations is how a value's violations are computed: the
	// Explainer's, or what a test puts in their place (export_test.go)
	violations func(x *schemarego.Explainer, v ast.Value, pointer string) []schemarego.Violation

	mu         sync.RWMutex
	explainers map[string]*schemarego.Explainer // nil: no Go violations for the package
	docs       map[ast.Value]plannedDoc         // planned documents decoded, by term value
	valids     map[string]*validNames           // tools' argument names, by list (refusal_unknown.go)
	memo       findings                         // findings of scalar values (refusal_memo.go)
	shown      lastShown                        // the last string shown (refusal_text.go)
}

func newRefusals(preds *predicates, data map[string]any) *refusals {
	r := &refusals{preds: preds, explainers: map[string]*schemarego.Explainer{}, docs: map[ast.Value]plannedDoc{}, valids: map[string]*validNames{}, violations: (*schemarego.Explainer).Violations}
	r.codes, _ = data["codes"].(map[string]any)
	if cfg, ok := data["config"].(map[string]any); ok {
		r.rules, _ = cfg["rules"].(map[string]any)
	}
	return r
}

// planned is common_or_planned's answer for a call decided over its plan.
type planned struct {
	doc    ast.Value // the planned document (plan.document)
	facts  ast.Object
	shadow bool
}

// plannedDoc is a planned document decoded; shared by the decisions
// built from it, which never change it.
type plannedDoc struct {
	d  decision.Decision
	ok bool
}

// plannedOf reads common_or_planned's "planned" answer.
func plannedOf(obj ast.Object) (planned, bool) {
	facts, ok := field(obj, kFacts).(ast.Object)
	if !ok {
		return planned{}, false
	}
	sh, ok := field(obj, kShadow).(ast.Boolean)
	if !ok {
		return planned{}, false
	}
	doc := field(obj, kPlanned)
	if doc == nil {
		return planned{}, false
	}
	return planned{doc: doc, facts: facts, shadow: bool(sh)}, true
}

var (
	kPlanned = ast.StringTerm("planned")
	kFacts   = ast.StringTerm("facts")
	kShadow  = ast.StringTerm("shadow")
)

// document decodes a planned document (memoized terms repeat: decoded
// once each, at most memoSize kept).
func (r *refusals) document(v ast.Value) (decision.Decision, bool) {
	r.mu.RLock()
	pd, hit := r.docs[v]
	r.mu.RUnlock()
	if hit {
		return pd.d, pd.ok
	}
	obj, ok := v.(ast.Object)
	if ok {
		dc := decoder{}
		pd.d.Outcome = decision.Outcome(dc.str(obj, "outcome"))
		pd.d.Step = decision.Step(dc.str(obj, "step"))
		pd.d.Reasons = dc.reasons(obj, "reasons")
		pd.d.Warnings = dc.reasons(obj, "warnings")
		pd.d.Write = dc.boolean(obj, "write")
		pd.d.Destructive = dc.boolean(obj, "destructive")
		pd.ok = dc.err == nil && obj.Get(keyOf("shadow")) == nil && obj.Get(keyOf("call")) == nil
	}
	r.mu.Lock()
	if len(r.docs) < memoSize {
		r.docs[v] = pd
	}
	r.mu.Unlock()
	return pd.d, pd.ok
}

// code is data.mcpx.codes[name] as a reason's code and step.
func (r *refusals) code(name string) (decision.Code, decision.Step, bool) {
	c, ok := r.codes[name].(map[string]any)
	if !ok {
		return "", "", false
	}
	code, ok1 := c["code"].(string)
	step, ok2 := c["step"].(string)
	return decision.Code(code), decision.Step(step), ok1 && ok2
}

// buildPlanned is the decision of a planned call (common_or_planned's
// answer pl for input in, whose arguments ga reads): the findings of the
// unknown-arguments and argument-rules steps built in Go, added to the
// planned document as uncommon_decision's first body adds them, shadow
// mode applied. ok is false when any part is not built exactly: then the
// Rego decides.
func (r *refusals) buildPlanned(call decision.Call, in ast.Object, ga *callArgs, pl planned) (decision.Decision, bool) {
	f, ok := r.plannedFindings(call, in, ga, pl, false)
	if !ok {
		return decision.Decision{}, false
	}
	return r.assemble(call, pl, f)
}

// stepFindings are a planned call's findings of the unknown-arguments and
// argument-rules steps.
type stepFindings struct {
	uaDeny, uaWarn, ar []decision.Reason
}

// any reports whether either step found something: then neither step's
// predicate holds on a stock OPA (each holds exactly when its step finds
// nothing), so the common case does not decide the call.
func (f stepFindings) any() bool { return len(f.uaDeny)+len(f.uaWarn)+len(f.ar) > 0 }

// plannedFindings builds the two steps' findings in Go (ok false when
// either is not built exactly).
// noUnknown tells that the unknown-arguments step finds nothing (its Go
// predicate said so): its findings are not built.
func (r *refusals) plannedFindings(call decision.Call, in ast.Object, ga *callArgs, pl planned, noUnknown bool) (stepFindings, bool) {
	label := call.Server + "." + call.Tool.Name
	var f stepFindings
	var ok bool
	if !noUnknown {
		if f.uaDeny, f.uaWarn, ok = r.unknownFindings(in, ga, pl.facts, label); !ok {
			return stepFindings{}, false
		}
	}
	if f.ar, ok = r.ruleFindings(ga, pl.facts, label); !ok {
		return stepFindings{}, false
	}
	return f, true
}

// assemble is the decision of a planned call with findings f.
func (r *refusals) assemble(call decision.Call, pl planned, f stepFindings) (decision.Decision, bool) {
	d, ok := r.document(pl.doc)
	if !ok {
		return decision.Decision{}, false
	}
	uaDeny, uaWarn, ar := f.uaDeny, f.uaWarn, f.ar
	out := decision.Decision{Write: d.Write, Destructive: d.Destructive}
	switch {
	case len(uaDeny) > 0:
		out.Outcome, out.Step = decision.Deny, decision.StepUnknownArgs
	case len(ar) > 0:
		out.Outcome, out.Step = decision.Deny, decision.StepArgumentRules
	default:
		out.Outcome, out.Step = d.Outcome, d.Step
	}
	out.Reasons = make([]decision.Reason, 0, len(uaDeny)+len(ar)+len(d.Reasons))
	out.Reasons = append(append(append(out.Reasons, uaDeny...), ar...), d.Reasons...)
	out.Warnings = make([]decision.Reason, 0, len(uaWarn)+len(d.Warnings))
	out.Warnings = append(append(out.Warnings, uaWarn...), d.Warnings...)
	if pl.shadow {
		out = shadowed(out)
	}
	out.Call = decision.CallRef{Server: call.Server, Tool: call.Tool.Name}
	out, err := check(out)
	return out, err == nil
}

// binding are the reason codes shadow mode never relaxes (lib.shadow's
// binding; TestShadowBindingIsTheRegos ties the two).
var binding = map[decision.Code]bool{
	decision.HiddenTool:            true,
	decision.UnknownOutcomePending: true,
	decision.LedgerUnreadable:      true,
	decision.InvalidInput:          true,
	decision.PolicyError:           true,
	decision.ToolDefinitionChanged: true,
}

// shadowed is lib.shadow.document(d): d with its outcome, step and reasons
// under Shadow; an allow, or a decision whose deciding step has a binding
// reason, stands; otherwise an ask on the binding reasons, else an allow
// with none.
func shadowed(d decision.Decision) decision.Decision {
	d.Shadow = &decision.Shadow{Outcome: d.Outcome, Step: d.Step, Reasons: d.Reasons}
	if d.Outcome == decision.Allow {
		return d
	}
	var kept []decision.Reason
	for _, r := range d.Reasons {
		if binding[r.Code] {
			if r.Step == d.Step {
				return d
			}
			kept = append(kept, r)
		}
	}
	if len(kept) > 0 {
		d.Outcome, d.Step, d.Reasons = decision.Ask, kept[0].Step, kept
		return d
	}
	d.Outcome, d.Step, d.Reasons = decision.Allow, "", []decision.Reason{}
	return d
}
