package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
)

// maxEcho is steps.unknown_args.max_echo.
const maxEcho = 5

// unknownFindings is the unknown-arguments step's deny and warn reasons
// (rego/mcpx/steps/unknown_args.rego) for a call whose tool's inputSchema
// is absent or plain and closed (plainProperties), and whose nested
// objects hold no unknown key by the Go predicate: the unknown keys are
// then the top-level keys neither declared nor exempt. ok is false for any
// other call, and when a key or a path would be redacted.
func (r *refusals) unknownFindings(in ast.Object, ga *callArgs, facts ast.Object, label string) (deny, warn []decision.Reason, ok bool) {
	mode, ok := field(facts, kUAMode).(ast.String)
	if !ok {
		return nil, nil, false
	}
	if mode != "reject" && mode != "warn" {
		return nil, nil, true
	}
	tool, ok := field(in, kTool).(ast.Object)
	if !ok {
		return nil, nil, false
	}
	props, known, ok := schemaProperties(tool)
	if !ok {
		return nil, nil, false
	}
	if known {
		return nil, nil, true // no inputSchema: nothing is unknown
	}
	if !nestedKeysKnown(ga, in) {
		return nil, nil, false
	}
	exempt, _ := field(facts, kExempt).(ast.Set)
	var unknown []string
	for k := range ga.goArgs {
		if lookup(props, k) == nil && !setHas(exempt, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil, nil, true
	}
	sort.Strings(unknown)
	vn, ok := r.validOf(props)
	if !ok {
		return nil, nil, false
	}
	valid := vn.names

	shown := unknown[:min(len(unknown), maxEcho)]
	more := len(unknown) - len(shown)
	items := make([]any, len(shown))
	keyTexts := make([]string, len(shown))
	for i, k := range shown {
		path, ok1 := r.plainText("/" + escapeKey(k))
		key, ok2 := r.plainText(k)
		if !ok1 || !ok2 {
			return nil, nil, false
		}
		suggestion := nearest(k, valid, vn.shapes)
		items[i] = map[string]any{"path": cut(path, 200), "key": cut(key, 80), "suggestion": suggestion}
		keyTexts[i] = quote(key, 80)
		if suggestion != "" {
			keyTexts[i] = fmt.Sprintf("%s (did you mean %s?)", keyTexts[i], jsonString(suggestion))
		}
	}
	validList := make([]any, len(valid))
	for i, v := range valid {
		validList[i] = v
	}
	details := map[string]any{"unknown": items, "more": float64(more), "valid": validList}

	noun := "argument"
	if len(unknown) > 1 {
		noun = "arguments"
	}
	keys := strings.Join(keyTexts, ", ")
	if more > 0 {
		keys = fmt.Sprintf("%s and %d more", keys, more)
	}
	summary := fmt.Sprintf("unknown %s %s; valid %s: %s", noun, keys, "arguments", vn.text)
	reason := func(codeName, tail string) (decision.Reason, bool) {
		code, step, ok := r.code(codeName)
		return decision.Reason{Code: code, Step: step, Message: fmt.Sprintf("%s: %s; %s", label, summary, tail), Details: details}, ok
	}
	if mode == "reject" {
		d, ok := reason("UnknownArguments", "the call was not executed")
		return []decision.Reason{d}, nil, ok
	}
	w, ok := reason("IgnoredArguments", "the call went ahead without them being checked")
	return nil, []decision.Reason{w}, ok
}

// namesText is steps.unknown_args._names_text: the names as JSON texts.
func namesText(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = jsonString(n)
	}
	return strings.Join(parts, ", ")
}

// validNames are a tool's declared argument names, sorted, and what the
// step derives from them alone: their text (namesText) and their shapes
// for the suggestions (shapeOf). Kept per list of names (refusals.valids),
// shared by the decisions, which copy what they hold.
type validNames struct {
	names  []string
	text   string
	shapes []shape
}

// validOf is the validNames of an inputSchema's properties; ok is false
// when a property's name is not a string.
func (r *refusals) validOf(props ast.Object) (*validNames, bool) {
	valid := make([]string, 0, props.Len())
	props.Foreach(func(k, _ *ast.Term) {
		if s, isString := k.Value.(ast.String); isString {
			valid = append(valid, string(s))
		}
	})
	if len(valid) != props.Len() {
		return nil, false
	}
	sort.Strings(valid)
	var key strings.Builder
	for _, n := range valid {
		key.WriteString(strconv.Itoa(len(n)))
		key.WriteByte(':')
		key.WriteString(n)
	}
	r.mu.RLock()
	vn := r.valids[key.String()]
	r.mu.RUnlock()
	if vn != nil {
		return vn, true
	}
	vn = &validNames{names: valid, text: namesText(valid), shapes: make([]shape, len(valid))}
	for i, n := range valid {
		vn.shapes[i] = shapeOf(n)
	}
	r.mu.Lock()
	if len(r.valids) < memoSize {
		r.valids[key.String()] = vn
	}
	r.mu.Unlock()
	return vn, true
}
