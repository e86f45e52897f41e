package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// Native is the baseline: the same steps in plain Go, with the argument
// rules validated by santhosh-tekuri/jsonschema/v6. It decides the same
// outcome and step as the policy on the workloads (a test checks it) and
// builds comparable reasons (messages with the values, rule origins,
// suggestions), but it is not the product: no redaction, no overrides, no
// ledger messages.
type Native struct {
	pool    nativeScope
	servers map[string]*nativeScope
	write   string
	exempt  map[string]bool
	ua      string
	destr   bool
}

type nativeScope struct {
	write, ua   string
	hidden      []config.Pattern
	writeTools  []config.Pattern
	exactRules  map[string][]*nativeRule
	regexRules  []regexRule
	exemptExtra map[string]bool
}

type regexRule struct {
	pat  config.Pattern
	rule *nativeRule
}

type nativeRule struct {
	id, desc string
	path     []string
	schema   *jsonschema.Schema
}

// NewNative compiles w's config for the native baseline.
func NewNative(w *Workload) (*Native, error) {
	n := &Native{servers: map[string]*nativeScope{}, write: "ask", ua: "warn", destr: true, exempt: map[string]bool{}}
	for _, k := range w.Exempt {
		n.exempt[k] = true
	}
	scope := func(hidden, writeTools []string, rules []Rule) (*nativeScope, error) {
		s := &nativeScope{exactRules: map[string][]*nativeRule{}}
		for _, h := range hidden {
			p, err := config.ParsePattern(h)
			if err != nil {
				return nil, err
			}
			s.hidden = append(s.hidden, p)
		}
		for _, h := range writeTools {
			p, err := config.ParsePattern(h)
			if err != nil {
				return nil, err
			}
			s.writeTools = append(s.writeTools, p)
		}
		for _, r := range rules {
			sch, err := compileNative(r.Schema)
			if err != nil {
				return nil, fmt.Errorf("rule %s: %w", r.ID, err)
			}
			nr := &nativeRule{id: r.ID, desc: r.Description, schema: sch}
			if r.Argument != "" {
				nr.path = strings.Split(strings.TrimPrefix(r.Argument, "/"), "/")
			}
			for _, t := range r.Tools {
				p, err := config.ParsePattern(t)
				if err != nil {
					return nil, err
				}
				if p.Kind == config.Exact {
					s.exactRules[t] = append(s.exactRules[t], nr)
				} else {
					s.regexRules = append(s.regexRules, regexRule{p, nr})
				}
			}
		}
		return s, nil
	}
	pool, err := scope([]string{"admin_*"}, nil, w.RulesOf(""))
	if err != nil {
		return nil, err
	}
	n.pool = *pool
	for _, sv := range w.Servers {
		s, err := scope(sv.Hidden, sv.WriteTools, w.RulesOf(sv.Name))
		if err != nil {
			return nil, err
		}
		s.write, s.ua = sv.Write, sv.UnknownArgs
		n.servers[sv.Name] = s
	}
	return n, nil
}

func compileNative(schema map[string]any) (*jsonschema.Schema, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	// santhosh as the engine's Go check sets it up (draft 2020-12, nothing
	// fetched, pathWithin and urlWithin enforced), so a path-form rule
	// costs the baseline what it costs a Go gateway
	return schemarego.Validator(doc)
}

func matchAny(ps []config.Pattern, name string) bool {
	for _, p := range ps {
		if p.Match(name) {
			return true
		}
	}
	return false
}

// Decide runs the steps of the check order (docs/check-order.md) in Go.
func (n *Native) Decide(call decision.Call) decision.Decision {
	sum, _ := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	ref := decision.CallRef{Server: call.Server, Tool: call.Tool.Name, SHA256: sum}
	srv := n.servers[call.Server]
	if srv == nil {
		srv = &nativeScope{}
	}
	name := call.Tool.Name
	label := call.Server + "." + name
	if matchAny(n.pool.hidden, name) || matchAny(srv.hidden, name) {
		return decision.Decision{Outcome: decision.Deny, Step: decision.StepHidden, Call: ref, Warnings: []decision.Reason{},
			Reasons: []decision.Reason{{Code: decision.HiddenTool, Step: decision.StepHidden,
				Message: fmt.Sprintf("tool %q on %q is hidden by its hiddenTools configuration", name, call.Server)}}}
	}
	ann := call.Tool.Annotations
	write := ann == nil || ann.ReadOnlyHint == nil || !*ann.ReadOnlyHint
	write = write || matchAny(n.pool.writeTools, name) || matchAny(srv.writeTools, name)
	destructive := write && (ann == nil || ann.DestructiveHint == nil || *ann.DestructiveHint)
	d := decision.Decision{Write: write, Destructive: destructive, Call: ref, Reasons: []decision.Reason{}, Warnings: []decision.Reason{}}
	var deny, ask []decision.Reason

	// unknown arguments
	mode := n.ua
	if srv.ua != "" {
		mode = srv.ua
	}
	if props, ok := call.Tool.InputSchema["properties"].(map[string]any); ok && mode != "off" {
		var unknown []string
		for k := range call.Args {
			if _, ok := props[k]; !ok && !n.exempt[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			valid := make([]string, 0, len(props))
			for k := range props {
				valid = append(valid, k)
			}
			sort.Strings(valid)
			var parts []string
			for _, u := range unknown {
				s := fmt.Sprintf("%q", u)
				if near := nearest(u, valid); near != "" {
					s += fmt.Sprintf(" (did you mean %q?)", near)
				}
				parts = append(parts, s)
			}
			msg := fmt.Sprintf("%s: unknown arguments %s; valid arguments: %s", label, strings.Join(parts, ", "), strings.Join(valid, ", "))
			r := decision.Reason{Code: decision.UnknownArguments, Step: decision.StepUnknownArgs, Message: msg,
				Details: map[string]any{"unknown": unknown, "valid": valid}}
			if mode == "reject" {
				deny = append(deny, r)
			} else {
				r.Code = decision.IgnoredArguments
				d.Warnings = append(d.Warnings, r)
			}
		}
	}

	// argument rules: exact lookups, then the non-exact patterns
	seen := map[*nativeRule]bool{}
	var rules []*nativeRule
	for _, s := range []*nativeScope{&n.pool, srv} {
		for _, r := range s.exactRules[name] {
			if !seen[r] {
				seen[r] = true
				rules = append(rules, r)
			}
		}
		for _, rr := range s.regexRules {
			if !seen[rr.rule] && rr.pat.Match(name) {
				seen[rr.rule] = true
				rules = append(rules, rr.rule)
			}
		}
	}
	for _, r := range rules {
		var v any = call.Args
		present := true
		for _, k := range r.path {
			m, ok := v.(map[string]any)
			if !ok {
				present = false
				break
			}
			if v, ok = m[k]; !ok {
				present = false
				break
			}
		}
		if !present {
			continue
		}
		err := r.schema.Validate(v)
		if err == nil {
			continue
		}
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			continue
		}
		var vs []decision.Violation
		var phrases []string
		leaves(ve, func(e *jsonschema.ValidationError) {
			path := "/" + strings.Join(append(append([]string{}, r.path...), e.InstanceLocation...), "/")
			kw := strings.Join(e.ErrorKind.KeywordPath(), "/")
			vs = append(vs, decision.Violation{Path: path, Constraint: kw, Expected: nil, Rule: decision.RuleRef{ID: r.id, Description: r.desc}})
			phrases = append(phrases, fmt.Sprintf("%s %s", path, e.ErrorKind))
		})
		deny = append(deny, decision.Reason{Code: decision.ArgumentRuleViolation, Step: decision.StepArgumentRules, Violations: vs,
			Message: fmt.Sprintf("%s: %s (rule %s)", label, strings.Join(phrases, "; "), r.id)})
	}

	// write mode and the destructive floor
	wm := n.write
	if srv.write != "" {
		wm = srv.write
	}
	if call.Mode != "" {
		wm = call.Mode
	}
	if write {
		switch wm {
		case "deny":
			deny = append(deny, decision.Reason{Code: decision.WriteDenied, Step: decision.StepWriteMode,
				Message: fmt.Sprintf("%s is a write and writes to %s are denied (write mode deny)", label, call.Server)})
		case "ask":
			ask = append(ask, decision.Reason{Code: decision.WriteNeedsConfirmation, Step: decision.StepWriteMode,
				Message: fmt.Sprintf("%s is a write and writes to %s need confirmation (write mode ask)", label, call.Server)})
		}
	}
	if n.destr && destructive && wm != "deny" {
		ask = append(ask, decision.Reason{Code: decision.DestructiveNeedsConfirmation, Step: decision.StepDestructiveFloor,
			Message: fmt.Sprintf("%s may be destructive (destructiveHint is not false) and policy.confirmDestructive asks for every destructive write", label)})
	}
	d.Reasons = append(append(d.Reasons, deny...), ask...)
	switch {
	case len(deny) > 0:
		d.Outcome, d.Step = decision.Deny, deny[0].Step
	case len(ask) > 0:
		d.Outcome, d.Step = decision.Ask, ask[0].Step
	default:
		d.Outcome = decision.Allow
	}
	return d
}

func leaves(e *jsonschema.ValidationError, f func(*jsonschema.ValidationError)) {
	if len(e.Causes) == 0 {
		f(e)
		return
	}
	for _, c := range e.Causes {
		leaves(c, f)
	}
}

// nearest is the policy's suggestion: the Dice coefficient over bigrams.
func nearest(key string, candidates []string) string {
	best, score := "", 0.5
	for _, c := range candidates {
		if s := dice(key, c); s >= score {
			if s > score || best == "" {
				best, score = c, s
			}
		}
	}
	return best
}

func dice(a, b string) float64 {
	bg := func(s string) map[string]bool {
		s = " " + strings.ToLower(s) + " "
		m := map[string]bool{}
		for i := 0; i+2 <= len(s); i++ {
			m[s[i:i+2]] = true
		}
		return m
	}
	x, y := bg(a), bg(b)
	n := 0
	for k := range x {
		if y[k] {
			n++
		}
	}
	return 2 * float64(n) / float64(len(x)+len(y))
}
