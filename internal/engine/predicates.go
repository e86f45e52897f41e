package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/types"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// The engine-only predicates (docs/decisions/0009-engine-only-predicates.md).
// rego/mcpx/lib/predicates.rego defines three yes/no rules in plain Rego:
// the input is well formed, no argument is unknown, every matched argument
// rule accepts the arguments. The decision asks them before it takes its
// common path. At prepare, the engine replaces that module, whole, by
// predicatesGo, whose rules ask Go builtins instead: a direct walk of the
// input's AST, and santhosh-tekuri/jsonschema/v6 compiled once per schema
// with the schema compiler's own options (schemarego.Validator).
//
// Each builtin may only be stricter than the rule it replaces: when it
// says yes, the Rego rule holds too (TestPredicatesImplyRego and
// FuzzPredicates hold the engine to it); when it says no, or cannot tell,
// the decision's full Rego path decides. So the decision is the same
// document either way, and every reason is built in Rego.
//
// Not a `with` on the query: a with pushes a frame of OPA's virtual cache,
// and the memo answers only at the outermost frame, so every memoized
// fact would be computed again on every call.
const (
	predicatesFile    = "mcpx/lib/predicates.rego"
	predicatesPackage = "data.mcpx.lib.predicates"
	// predicatesGo is the engine's form of the module; %s is where the
	// common case also checks the operator overrides (overrideChecks), left
	// out when the policy has none.
	predicatesGo = `package mcpx.lib.predicates

import data.mcpx.lib.tool

well_formed if mcpx_engine.well_formed(input)

no_unknown_args if mcpx_engine.no_unknown_args(input, _facts)

nested_keys_known if mcpx_engine.nested_keys_known(input)

rules_accept if mcpx_engine.rules_accept(input, _facts)

common_case if {
	is_string(input.server)
	is_string(input.tool.name)
	mcpx_engine.common_case(input, tool.facts(input.server, input.tool.name))%s
}

package_accepts(pkg) if _vouched[pkg]

accepting_packages := _vouched

_vouched := mcpx_engine.vouched(input, _facts)

plain_text(s) if mcpx_engine.plain_text(s)

plain_value(key, v) if mcpx_engine.plain_value(key, v)

plain_args(args) if mcpx_engine.plain_args(args)

_facts := tool.facts(input.server, input.tool.name) if {
	is_string(input.server)
	is_string(input.tool.name)
}
`
	overrideChecks = `
	count([f | some f in data.mcpx.overrides.deny]) == 0
	count([f | some f in data.mcpx.overrides.ask]) == 0`
)

// predicatesModule is the engine's predicates module for a policy with or
// without operator overrides: without, no override can find anything
// (data.mcpx.overrides is undefined), so the common case does not ask.
func predicatesModule(overrides bool) string {
	if overrides {
		return fmt.Sprintf(predicatesGo, overrideChecks)
	}
	return fmt.Sprintf(predicatesGo, "")
}

// overridesRef is where operator overrides put their findings.
var overridesRef = ast.MustParseRef(overridesPackage)

// hasOverrides reports whether mods or the data define anything at or
// under data.mcpx.overrides (or at a ref that could hold it).
func hasOverrides(mods []*ast.Module, data map[string]any) bool {
	if _, ok := data["overrides"]; ok {
		return true
	}
	for _, m := range mods {
		for _, r := range m.Rules {
			if path := r.Path(); path.HasPrefix(overridesRef) || overridesRef.HasPrefix(path) {
				return true
			}
		}
	}
	return false
}

// engineBuiltins are the builtins only the embedded engine has; policy
// modules other than predicatesGo may not call them (guardOverrides).
const engineBuiltinPrefix = "mcpx_engine."

// predicates holds what the builtins need: the argument rules' schemas by
// generated package, compiled on first use.
type predicates struct {
	schemas  map[string]any // package → schema (the caller's map: never changed)
	compiler *ast.Compiler  // the compiled policy (keep)
	secrets  *secretTable   // data.mcpx.secrets read in Go

	mu       sync.RWMutex
	compiled map[string]*jsonschema.Schema // nil: the schema did not compile
	scalars  map[scalarKey]bool            // verdicts on scalar values (valid)
}

func newPredicates(schemas map[string]any, secrets any) *predicates {
	return &predicates{schemas: schemas, secrets: newSecretTable(secrets), compiled: map[string]*jsonschema.Schema{}, scalars: map[scalarKey]bool{}}
}

// options are the rego options that declare and implement the builtins.
func (p *predicates) options() []func(*rego.Rego) {
	decl := func(name string) *rego.Function {
		return &rego.Function{Name: engineBuiltinPrefix + name, Decl: types.NewFunction(types.Args(types.A, types.A), types.B)}
	}
	return []func(*rego.Rego){
		rego.Function1(&rego.Function{Name: engineBuiltinPrefix + "well_formed", Decl: types.NewFunction(types.Args(types.A), types.B)},
			func(bctx rego.BuiltinContext, in *ast.Term) (*ast.Term, error) {
				return ast.InternedTerm(wellFormed(goArgsOf(bctx), in.Value)), nil
			}),
		rego.Function2(decl("no_unknown_args"), func(bctx rego.BuiltinContext, in, facts *ast.Term) (*ast.Term, error) {
			return ast.InternedTerm(noUnknownArgs(goArgsOf(bctx), in.Value, facts.Value)), nil
		}),
		rego.Function1(&rego.Function{Name: engineBuiltinPrefix + "nested_keys_known", Decl: types.NewFunction(types.Args(types.A), types.B)},
			func(bctx rego.BuiltinContext, in *ast.Term) (*ast.Term, error) {
				return ast.InternedTerm(nestedKeysKnown(goArgsOf(bctx), in.Value)), nil
			}),
		rego.Function2(decl("rules_accept"), func(bctx rego.BuiltinContext, in, facts *ast.Term) (*ast.Term, error) {
			return ast.InternedTerm(p.rulesAccept(goArgsOf(bctx), in.Value, facts.Value)), nil
		}),
		rego.Function2(decl("common_case"), func(bctx rego.BuiltinContext, in, facts *ast.Term) (*ast.Term, error) {
			ga := goArgsOf(bctx)
			ok := wellFormed(ga, in.Value) && noUnknownArgs(ga, in.Value, facts.Value) && p.rulesAccept(ga, in.Value, facts.Value)
			return ast.InternedTerm(ok), nil
		}),
		rego.Function3(&rego.Function{Name: engineBuiltinPrefix + "package_accepts", Decl: types.NewFunction(types.Args(types.A, types.A, types.A), types.B)},
			func(bctx rego.BuiltinContext, in, facts, pkg *ast.Term) (*ast.Term, error) {
				return ast.InternedTerm(p.packageAccepts(goArgsOf(bctx), in.Value, facts.Value, pkg.Value)), nil
			}),
		rego.Function2(&rego.Function{Name: engineBuiltinPrefix + "vouched", Decl: types.NewFunction(types.Args(types.A, types.A), types.NewSet(types.S))},
			func(bctx rego.BuiltinContext, in, facts *ast.Term) (*ast.Term, error) {
				return ast.NewTerm(p.vouched(goArgsOf(bctx), in.Value, facts.Value)), nil
			}),
		rego.Function1(&rego.Function{Name: engineBuiltinPrefix + "plain_text", Decl: types.NewFunction(types.Args(types.A), types.B)},
			func(_ rego.BuiltinContext, s *ast.Term) (*ast.Term, error) {
				str, ok := s.Value.(ast.String)
				return ast.InternedTerm(ok && !p.secrets.suspect(string(str))), nil
			}),
		rego.Function2(decl("plain_value"), func(_ rego.BuiltinContext, key, v *ast.Term) (*ast.Term, error) {
			return ast.InternedTerm(p.secrets.plainValue(key.Value, v.Value)), nil
		}),
		rego.Function1(&rego.Function{Name: engineBuiltinPrefix + "plain_args", Decl: types.NewFunction(types.Args(types.A), types.B)},
			func(_ rego.BuiltinContext, args *ast.Term) (*ast.Term, error) {
				return ast.InternedTerm(p.secrets.plainArgs(args.Value)), nil
			}),
	}
}

// declarations are the builtins' declarations for a compiler built by the
// engine (rego.FunctionN declares them only to a compiler rego builds).
func predicateDeclarations() map[string]*ast.Builtin {
	two := types.NewFunction(types.Args(types.A, types.A), types.B)
	return map[string]*ast.Builtin{
		engineBuiltinPrefix + "well_formed":       {Name: engineBuiltinPrefix + "well_formed", Decl: types.NewFunction(types.Args(types.A), types.B)},
		engineBuiltinPrefix + "no_unknown_args":   {Name: engineBuiltinPrefix + "no_unknown_args", Decl: two},
		engineBuiltinPrefix + "rules_accept":      {Name: engineBuiltinPrefix + "rules_accept", Decl: two},
		engineBuiltinPrefix + "nested_keys_known": {Name: engineBuiltinPrefix + "nested_keys_known", Decl: types.NewFunction(types.Args(types.A), types.B)},
		engineBuiltinPrefix + "common_case":       {Name: engineBuiltinPrefix + "common_case", Decl: two},
		engineBuiltinPrefix + "package_accepts":   {Name: engineBuiltinPrefix + "package_accepts", Decl: types.NewFunction(types.Args(types.A, types.A, types.A), types.B)},
		engineBuiltinPrefix + "vouched":           {Name: engineBuiltinPrefix + "vouched", Decl: types.NewFunction(types.Args(types.A, types.A), types.NewSet(types.S))},
		engineBuiltinPrefix + "plain_text":        {Name: engineBuiltinPrefix + "plain_text", Decl: types.NewFunction(types.Args(types.A), types.B)},
		engineBuiltinPrefix + "plain_value":       {Name: engineBuiltinPrefix + "plain_value", Decl: two},
		engineBuiltinPrefix + "plain_args":        {Name: engineBuiltinPrefix + "plain_args", Decl: types.NewFunction(types.Args(types.A), types.B)},
	}
}

// keep notes the compiled policy: a package it holds no violations rule
// for has no validator (the Rego path reports it, a PolicyError, so the
// builtins must never vouch for it).
func (p *predicates) keep(c *ast.Compiler) { p.compiler = c }

// held reports whether the policy has pkg's violations rule.
func (p *predicates) held(pkg string) bool {
	ref := ast.Ref{ast.DefaultRootDocument, ast.StringTerm("mcpx"), ast.StringTerm("rules"), ast.StringTerm(pkg), ast.StringTerm("violations")}
	return p.compiler != nil && len(p.compiler.GetRulesExact(ref)) > 0
}

// validator is pkg's compiled schema, or nil when there is none.
func (p *predicates) validator(pkg string) *jsonschema.Schema {
	p.mu.RLock()
	s, ok := p.compiled[pkg]
	p.mu.RUnlock()
	if ok {
		return s
	}
	doc, ok := p.schemas[pkg]
	if !ok {
		return nil
	}
	s = nil
	if p.held(pkg) {
		if v, err := schemarego.Validator(doc); err == nil {
			s = v
		}
	}
	p.mu.Lock()
	p.compiled[pkg] = s
	p.mu.Unlock()
	return s
}

var (
	kServer        = ast.StringTerm("server")
	kTool          = ast.StringTerm("tool")
	kPin           = ast.StringTerm("pin")
	kName          = ast.StringTerm("name")
	kArgs          = ast.StringTerm("args")
	kAnnotations   = ast.StringTerm("annotations")
	kReadOnly      = ast.StringTerm("readOnlyHint")
	kDestructive   = ast.StringTerm("destructiveHint")
	kInputSchema   = ast.StringTerm("inputSchema")
	kMode          = ast.StringTerm("mode")
	kLedger        = ast.StringTerm("ledger")
	kEntries       = ast.StringTerm("entries")
	kTotal         = ast.StringTerm("total")
	kClear         = ast.StringTerm("clear")
	kPrincipal     = ast.StringTerm("principal")
	kSurface       = ast.StringTerm("surface")
	kCallSHA256    = ast.StringTerm("call_sha256")
	kUAMode        = ast.StringTerm("unknown_args_mode")
	kExempt        = ast.StringTerm("exempt")
	kMissingRules  = ast.StringTerm("missing_rules")
	kPackages      = ast.StringTerm("packages")
	kRequired      = ast.StringTerm("required")
	kPaths         = ast.StringTerm("paths")
	kProperties    = ast.StringTerm("properties")
	kAdditional    = ast.StringTerm("additionalProperties")
	openSchemaKeys = []*ast.Term{ast.StringTerm("patternProperties"), ast.StringTerm("$ref"), ast.StringTerm("allOf"), ast.StringTerm("anyOf"), ast.StringTerm("oneOf")}
)

// wellFormed is the Go form of predicates.well_formed: the input has the
// shape the engine builds, field by field (lib.req's well_shaped), and every
// number of the arguments is written in at most 15 characters of digits,
// a sign and a point, which lib.req accepts without further checks. It is
// stricter than req: a ledger total written other than as plain digits,
// a number in another form, any value that is not JSON is a no.
func wellFormed(ga *callArgs, v ast.Value) bool {
	in, ok := v.(ast.Object)
	if !ok {
		return false
	}
	if s, ok := field(in, kServer).(ast.String); !ok || s == "" {
		return false
	}
	tool, ok := field(in, kTool).(ast.Object)
	if !ok {
		return false
	}
	if s, ok := field(tool, kName).(ast.String); !ok || s == "" {
		return false
	}
	switch ann := field(tool, kAnnotations).(type) {
	case nil:
	case ast.Object:
		for _, k := range []*ast.Term{kReadOnly, kDestructive} {
			switch field(ann, k).(type) {
			case nil, ast.Boolean:
			default:
				return false
			}
		}
	default:
		return false
	}
	switch field(tool, kInputSchema).(type) {
	case nil, ast.Null, ast.Object:
	default:
		return false
	}
	if m := field(in, kMode); m != nil {
		if s, ok := m.(ast.String); !ok || (s != "ask" && s != "allow" && s != "deny") {
			return false
		}
	}
	switch led := field(in, kLedger).(type) {
	case nil:
	case ast.Object:
		switch es := field(led, kEntries).(type) {
		case nil:
		case *ast.Array:
			for i := 0; i < es.Len(); i++ {
				if _, ok := es.Elem(i).Value.(ast.Object); !ok {
					return false
				}
			}
		default:
			return false
		}
		if t := field(led, kTotal); t != nil {
			if n, ok := t.(ast.Number); !ok || !digits(string(n)) {
				return false
			}
		}
	default:
		return false
	}
	if p := field(in, kPrincipal); p != nil {
		if _, ok := p.(ast.Object); !ok {
			return false
		}
	}
	if s := field(in, kSurface); s != nil {
		if _, ok := s.(ast.String); !ok {
			return false
		}
	}
	if s := field(in, kCallSHA256); s != nil {
		if h, ok := s.(ast.String); !ok || !lowerHex64(string(h)) {
			return false
		}
	}
	if in.Get(kArgs) == nil && ga.isLite() {
		return plainGo(ga.goArgs, 0)
	}
	args, ok := field(in, kArgs).(ast.Object)
	return ok && plainJSON(args, 0)
}

// plainGo is plainJSON for the caller's decoded arguments: only the Go
// types the engine converts to JSON values (map[string]any, []any,
// string, bool, nil, json.Number, float64, int, int64), numbers checked on
// the text their AST would have. Any other type is a no.
func plainGo(v any, depth int) bool {
	if depth > maxDepth {
		return false
	}
	var buf [32]byte
	switch x := v.(type) {
	case nil, bool, string:
		return true
	case json.Number:
		return shortDecimal(string(x))
	case float64:
		return shortDecimal(string(strconv.AppendFloat(buf[:0], x, 'g', -1, 64)))
	case int:
		return shortDecimal(string(strconv.AppendInt(buf[:0], int64(x), 10)))
	case int64:
		return shortDecimal(string(strconv.AppendInt(buf[:0], x, 10)))
	case []any:
		for _, e := range x {
			if !plainGo(e, depth+1) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range x {
			if !plainGo(e, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// maxDepth bounds the nesting the Go predicates walk; deeper values are
// left to Rego.
const maxDepth = 1000

// plainJSON reports whether v holds only JSON values (no sets, no string
// keys missing) whose numbers are all short plain decimals.
func plainJSON(v ast.Value, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch x := v.(type) {
	case ast.Null, ast.Boolean, ast.String:
		return true
	case ast.Number:
		return shortDecimal(string(x))
	case *ast.Array:
		for i := 0; i < x.Len(); i++ {
			if !plainJSON(x.Elem(i).Value, depth+1) {
				return false
			}
		}
		return true
	case ast.Object:
		ok := true
		x.Until(func(k, e *ast.Term) bool {
			_, isString := k.Value.(ast.String)
			ok = isString && plainJSON(e.Value, depth+1)
			return !ok
		})
		return ok
	}
	return false
}

// shortDecimal reports whether s is a JSON number of at most 15 characters
// with no exponent (lib.req: `^[-0-9.]{1,15}$` on its text): any such
// decimal is the shortest text of the double it reads as.
func shortDecimal(s string) bool {
	if len(s) == 0 || len(s) > 15 {
		return false
	}
	i := 0
	if s[0] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start || (s[start] == '0' && i-start > 1) {
		return false
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' {
		return false
	}
	i++
	return i < len(s) && digits(s[i:])
}

// digits reports whether s is one or more ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func lowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// field is o[k]'s value, nil when absent.
func field(o ast.Object, k *ast.Term) ast.Value {
	if t := o.Get(k); t != nil {
		return t.Value
	}
	return nil
}

// noUnknownArgs is the Go form of predicates.no_unknown_args for the
// tool's facts (lib.tool.facts). It says yes when the tool's
// unknown-arguments mode is off, when the tool has no inputSchema, or when
// the schema is plain and closed (an object with a properties object, no
// patternProperties, $ref, allOf, anyOf or oneOf, additionalProperties
// absent or false), declares (or exempts) every argument, and every
// argument that is an object or an array either sits under a property
// schema with no "properties" key anywhere in it (the step walks no
// deeper) or is an object of scalars whose own plain schema declares each
// of its keys. Otherwise it says no and the step decides.
func noUnknownArgs(ga *callArgs, v, factsV ast.Value) bool {
	facts, ok := factsV.(ast.Object)
	if !ok {
		return false
	}
	tool, args, lite, ok := callTool(ga, v)
	if !ok {
		return false
	}
	mode, ok := field(facts, kUAMode).(ast.String)
	if !ok {
		return false
	}
	if mode == "off" {
		return true
	}
	props, known, ok := schemaProperties(tool)
	if !ok || known {
		return ok
	}
	exempt, _ := field(facts, kExempt).(ast.Set)
	if lite {
		return goArgsKnown(ga.goArgs, props, exempt, true)
	}
	ok = true
	args.Until(func(k, a *ast.Term) bool {
		sub := props.Get(k)
		if sub == nil {
			// an exempt key is not reported, and the step walks into an
			// argument only through its declared property schema
			ok = exempt != nil && exempt.Contains(k)
			return !ok
		}
		ok = nestedKnown(sub.Value, a.Value)
		return !ok
	})
	return ok
}

// callTool reads the input v of the key predicates: its tool, and its
// arguments, or lite when the arguments are read from the caller's Go
// values (an input without them, in the common half). ok is false when v
// is not such an input.
func callTool(ga *callArgs, v ast.Value) (tool, args ast.Object, lite, ok bool) {
	in, ok := v.(ast.Object)
	if !ok {
		return nil, nil, false, false
	}
	tool, ok = field(in, kTool).(ast.Object)
	if !ok {
		return nil, nil, false, false
	}
	lite = in.Get(kArgs) == nil && ga.isLite()
	args, ok = field(in, kArgs).(ast.Object)
	if !ok && !lite {
		return nil, nil, false, false
	}
	return tool, args, lite, true
}

// schemaProperties is the properties object of tool's inputSchema when it
// is a plain closed schema (plainProperties). known is true when the tool
// has no inputSchema (no argument can be unknown); ok is false when the
// schema is neither absent nor plain (Rego decides).
func schemaProperties(tool ast.Object) (props ast.Object, known, ok bool) {
	switch s := field(tool, kInputSchema).(type) {
	case nil, ast.Null:
		return nil, true, true
	case ast.Object:
		props, ok := plainProperties(s)
		return props, false, ok
	}
	return nil, false, false
}

// nestedKeysKnown is the Go form of predicates.nested_keys_known: the tool
// has no inputSchema, or a plain closed one (plainProperties) under which
// every argument that is an object or an array either sits under a
// property schema with no "properties" key anywhere in it (the step does
// not walk into it) or is an object of scalars whose own plain schema
// declares each of its keys. Arguments the schema does not declare are
// not walked into either.
func nestedKeysKnown(ga *callArgs, v ast.Value) bool {
	tool, args, lite, ok := callTool(ga, v)
	if !ok {
		return false
	}
	props, known, ok := schemaProperties(tool)
	if !ok || known {
		return ok
	}
	if lite {
		return goArgsKnown(ga.goArgs, props, nil, false)
	}
	ok = true
	args.Until(func(k, a *ast.Term) bool {
		if sub := props.Get(k); sub != nil {
			ok = nestedKnown(sub.Value, a.Value)
		}
		return !ok
	})
	return ok
}

// goArgsKnown is the argument check of noUnknownArgs (top: every key
// declared or exempt too) and nestedKeysKnown on the caller's decoded
// arguments: a declared argument's value passes nestedKnownGo.
func goArgsKnown(args map[string]any, props ast.Object, exempt ast.Set, top bool) bool {
	for k, a := range args {
		sub := lookup(props, k)
		if sub == nil {
			if top && !setHas(exempt, k) {
				return false
			}
			continue
		}
		if !nestedKnownGo(sub.Value, a) {
			return false
		}
	}
	return true
}

// nestedKnownGo is nestedKnown for a decoded value a: the Go types the
// engine converts to scalars are scalars, map[string]any an object,
// []any an array; any other type is a no.
func nestedKnownGo(sub ast.Value, a any) bool {
	switch x := a.(type) {
	case nil, bool, string, json.Number, float64, int, int64:
		return true
	case []any:
		return !namesProperties(sub, 0)
	case map[string]any:
		if !namesProperties(sub, 0) {
			return true
		}
		nested, plain := plainProperties(sub)
		if !plain {
			return false
		}
		for kk, xv := range x {
			switch xv.(type) {
			case nil, bool, string, json.Number, float64, int, int64:
			default:
				return false
			}
			if lookup(nested, kk) == nil {
				return false
			}
		}
		return true
	}
	return false
}

// lookup is o[k] for a Go string key, with the key's interned term
// (keyTerm): argument names repeat, and a schema's property names are
// interned the same way when it is converted.
func lookup(o ast.Object, k string) *ast.Term { return o.Get(keyTerm(k)) }

// setHas reports whether set s holds the string k.
func setHas(s ast.Set, k string) bool {
	found := false
	if s != nil {
		s.Until(func(t *ast.Term) bool {
			str, isString := t.Value.(ast.String)
			found = isString && string(str) == k
			return found
		})
	}
	return found
}

// nestedKnown reports that the step finds no unknown key inside argument
// value a whose property schema is sub (noUnknownArgs's container check).
func nestedKnown(sub, a ast.Value) bool {
	switch a.(type) {
	case ast.Object, *ast.Array:
	default:
		return true
	}
	if !namesProperties(sub, 0) {
		return true
	}
	obj, isObj := a.(ast.Object)
	if !isObj {
		return false
	}
	nested, plain := plainProperties(sub)
	if !plain {
		return false
	}
	ok := true
	obj.Until(func(kk, x *ast.Term) bool {
		switch x.Value.(type) {
		case ast.String, ast.Number, ast.Boolean, ast.Null:
			ok = nested.Get(kk) != nil
		default:
			ok = false
		}
		return !ok
	})
	return ok
}

// plainProperties is the properties object of a plain closed schema
// (lib.tool's plain_properties).
func plainProperties(v ast.Value) (ast.Object, bool) {
	s, ok := v.(ast.Object)
	if !ok {
		return nil, false
	}
	if ap := s.Get(kAdditional); ap != nil {
		if b, ok := ap.Value.(ast.Boolean); !ok || bool(b) {
			return nil, false
		}
	}
	for _, k := range openSchemaKeys {
		if s.Get(k) != nil {
			return nil, false
		}
	}
	props, ok := field(s, kProperties).(ast.Object)
	return props, ok
}

// namesProperties reports whether some object key in v is "properties"
// (the unknown-arguments step walks into an argument only then).
// Undecided (too deep) counts as yes.
func namesProperties(v ast.Value, depth int) bool {
	if depth > maxDepth {
		return true
	}
	found := false
	switch x := v.(type) {
	case ast.Object:
		x.Until(func(k, e *ast.Term) bool {
			ks, isString := k.Value.(ast.String)
			found = (isString && ks == "properties") || namesProperties(e.Value, depth+1)
			return found
		})
	case *ast.Array:
		for i := 0; i < x.Len() && !found; i++ {
			found = namesProperties(x.Elem(i).Value, depth+1)
		}
	case ast.Set:
		return true
	}
	return found
}

// rulesAccept is the Go form of predicates.rules_accept for the tool's
// facts: every matched rule is compiled (no missing rule), every required
// argument is present, and every value a matched rule checks (read along
// its paths exactly as the rules step reads it) is valid for the rule's
// schema by santhosh v6. A package with no schema, or whose schema did not
// compile, is a no.
func (p *predicates) rulesAccept(ga *callArgs, v, factsV ast.Value) bool {
	in, ok := v.(ast.Object)
	if !ok {
		return false
	}
	facts, ok := factsV.(ast.Object)
	if !ok {
		return false
	}
	args, ok := ga.reader(in)
	if !ok {
		return false
	}
	if missing, ok := field(facts, kMissingRules).(ast.Set); !ok || missing.Len() > 0 {
		return false
	}
	packages, ok := field(facts, kPackages).(ast.Object)
	if !ok {
		return false
	}
	ok = true
	packages.Until(func(pkgT, rulesT *ast.Term) bool {
		pkg, isString := pkgT.Value.(ast.String)
		rules, isArray := rulesT.Value.(*ast.Array)
		ok = isString && isArray && p.verdict(args, string(pkg), rules)
		return !ok
	})
	if !ok {
		return false
	}
	required, ok := field(facts, kRequired).(*ast.Array)
	if !ok {
		return false
	}
	for i := 0; i < required.Len(); i++ {
		if _, present, fine := args.read(required.Elem(i)); !fine || !present {
			return false
		}
	}
	return true
}

// packageAccepts is the Go form of predicates.package_accepts(pkg) for the
// tool's facts: pkg is one of the tool's matched packages, its schema
// compiled, and every value its rules check is valid (rulesAccept for one
// package, without the required and missing-rule checks, which are not the
// package's).
func (p *predicates) packageAccepts(ga *callArgs, v, factsV, pkgV ast.Value) bool {
	in, ok := v.(ast.Object)
	if !ok {
		return false
	}
	facts, ok := factsV.(ast.Object)
	if !ok {
		return false
	}
	pkg, ok := pkgV.(ast.String)
	if !ok {
		return false
	}
	args, ok := ga.reader(in)
	if !ok {
		return false
	}
	packages, ok := field(facts, kPackages).(ast.Object)
	if !ok {
		return false
	}
	rules, ok := field(packages, ast.NewTerm(pkg)).(*ast.Array)
	if !ok {
		return false
	}
	return p.validator(string(pkg)) != nil && p.verdict(args, string(pkg), rules)
}

// vouched is the set of the tool's matched packages for which
// packageAccepts holds: the Go form of package_accepts asks it once per
// evaluation instead of once per package.
func (p *predicates) vouched(ga *callArgs, v, factsV ast.Value) ast.Set {
	out := ast.NewSet()
	facts, ok := factsV.(ast.Object)
	if !ok {
		return out
	}
	packages, ok := field(facts, kPackages).(ast.Object)
	if !ok {
		return out
	}
	packages.Foreach(func(pkgT, _ *ast.Term) {
		if p.packageAccepts(ga, v, factsV, pkgT.Value) {
			out.Add(pkgT)
		}
	})
	return out
}

// verdict reports whether every value the rules of pkg check in the
// arguments is valid for pkg's schema (a package with a value to check
// needs its compiled schema). Kept for the evaluation when args are its
// own: the common case, the argument-rules step and its packages ask the
// same question of the same values.
func (p *predicates) verdict(args argReader, pkg string, rules *ast.Array) bool {
	if args.verdicts != nil {
		if v, ok := args.verdicts[pkg]; ok {
			return v
		}
	}
	ok := true
	for i := 0; i < rules.Len() && ok; i++ {
		target, present, fine := args.read(rules.Elem(i))
		switch {
		case !fine:
			ok = false
		case present:
			ok = p.valid(pkg, target)
		}
	}
	if args.verdicts != nil {
		args.verdicts[pkg] = ok
	}
	return ok
}

// valid reports whether pkg's compiled schema accepts v. Verdicts on
// scalars (a string of at most maxScalarKey bytes, a number, a boolean,
// null) are kept per package: a gateway's calls repeat such values (a
// mode, a flag, a small count), santhosh's verdict on them never changes,
// and a validation costs allocations. At most memoSize verdicts are kept.
func (p *predicates) valid(pkg string, v any) bool {
	s := p.validator(pkg)
	if s == nil {
		return false
	}
	k, keyed := scalarKeyOf(pkg, v)
	if keyed {
		p.mu.RLock()
		ok, hit := p.scalars[k]
		p.mu.RUnlock()
		if hit {
			return ok
		}
	}
	ok := s.Validate(v) == nil
	if keyed {
		p.mu.Lock()
		if len(p.scalars) < memoSize {
			p.scalars[k] = ok
		}
		p.mu.Unlock()
	}
	return ok
}

// scalarKey identifies a scalar value exactly (its Go type and text or
// bits) for a package.
type scalarKey struct {
	pkg  string
	kind byte
	text string
	bits uint64
}

const maxScalarKey = 64

func scalarKeyOf(pkg string, v any) (scalarKey, bool) {
	switch x := v.(type) {
	case nil:
		return scalarKey{pkg: pkg, kind: 'z'}, true
	case bool:
		k := scalarKey{pkg: pkg, kind: 'b'}
		if x {
			k.bits = 1
		}
		return k, true
	case string:
		return scalarKey{pkg: pkg, kind: 's', text: x}, len(x) <= maxScalarKey
	case json.Number:
		return scalarKey{pkg: pkg, kind: 'n', text: string(x)}, len(x) <= maxScalarKey
	case float64:
		return scalarKey{pkg: pkg, kind: 'f', bits: math.Float64bits(x)}, true
	case int:
		return scalarKey{pkg: pkg, kind: 'i', bits: uint64(int64(x))}, true
	case int64:
		return scalarKey{pkg: pkg, kind: 'i', bits: uint64(x)}, true
	}
	return scalarKey{}, false
}

// callArgs ties an evaluation's input arguments (the "args" object the
// engine built) to the caller's decoded arguments it was converted from,
// so that the rules predicates hand santhosh, which reads Go values, the
// caller's own values instead of converting the AST back. The two are the
// same JSON: the AST was built from these values for this evaluation
// (identity of the object checked). A Go value that is not decoded JSON
// fails santhosh's validation: a no, and Rego decides.
type callArgs struct {
	ast      ast.Value // nil before the input holds the arguments (lite)
	goArgs   map[string]any
	lite     bool            // the input has no arguments yet: read goArgs
	verdicts map[string]bool // package → verdict on these arguments
}

// isLite reports whether the evaluation's input leaves the arguments out
// and the predicates read the caller's (Prepared.evaluate's first query).
func (ga *callArgs) isLite() bool { return ga != nil && ga.lite }

type callArgsKey struct{}

// withCallArgs notes on ctx the evaluation's arguments (input.args as
// built, and what it was built from).
func withCallArgs(ctx context.Context, args ast.Value, goArgs map[string]any) context.Context {
	return context.WithValue(ctx, callArgsKey{}, &callArgs{ast: args, goArgs: goArgs, verdicts: map[string]bool{}})
}

func goArgsOf(bctx rego.BuiltinContext) *callArgs {
	if bctx.Context == nil {
		return nil
	}
	ga, _ := bctx.Context.Value(callArgsKey{}).(*callArgs)
	return ga
}

// reader returns the reader of input in's arguments: the caller's values
// when in has none yet (lite) or holds the object built from them, else
// the AST converted value by value. ok is false when in has no arguments
// object.
func (ga *callArgs) reader(in ast.Object) (argReader, bool) {
	argsT := in.Get(kArgs)
	if argsT == nil {
		if ga.isLite() {
			return argReader{goArgs: ga.goArgs, native: true, verdicts: ga.verdicts}, true
		}
		return argReader{}, false
	}
	if _, ok := argsT.Value.(ast.Object); !ok {
		return argReader{}, false
	}
	if ga != nil && ga.goArgs != nil && ga.ast == argsT.Value {
		return argReader{goArgs: ga.goArgs, native: true, verdicts: ga.verdicts}, true
	}
	return argReader{ast: argsT}, true
}

// argReader reads rule targets from the arguments, along a rule's paths
// as object.get does for the rules step: from the caller's decoded values
// (native) or from the input's AST.
type argReader struct {
	ast      *ast.Term
	goArgs   map[string]any
	native   bool
	verdicts map[string]bool // nil: keep none
}

// read returns the value a rule checks, converted for santhosh. fine is
// false when the rule is not in the shape the step reads, more than one
// path finds a value, or the value is not JSON.
func (a argReader) read(rule *ast.Term) (value any, present, fine bool) {
	r, ok := rule.Value.(ast.Object)
	if !ok {
		return nil, false, false
	}
	paths, ok := field(r, kPaths).(*ast.Array)
	if !ok {
		return nil, false, false
	}
	for i := 0; i < paths.Len(); i++ {
		path, ok := paths.Elem(i).Value.(*ast.Array)
		if !ok {
			return nil, false, false
		}
		v, found, known := a.at(path)
		if !known {
			return nil, false, false
		}
		if !found {
			continue
		}
		if present {
			return nil, false, false
		}
		value, present = v, true
	}
	return value, present, true
}

// at follows path: found tells whether a value is there; known is false
// when the caller's values hold a Go type the AST reading cannot be
// mirrored for.
func (a argReader) at(path *ast.Array) (v any, found, known bool) {
	if !a.native {
		curr := a.ast
		for j := 0; j < path.Len() && curr != nil; j++ {
			curr = curr.Get(path.Elem(j))
		}
		if curr == nil {
			return nil, false, true
		}
		doc, ok := toGo(curr.Value, 0)
		return doc, true, ok
	}
	var curr any = a.goArgs
	for j := 0; j < path.Len(); j++ {
		// as ast.Term.Get: a string key of an object, an integer index of
		// an array; anything else finds nothing
		switch c := curr.(type) {
		case map[string]any:
			k, ok := path.Elem(j).Value.(ast.String)
			if !ok {
				return nil, false, true
			}
			if curr, ok = c[string(k)]; !ok {
				return nil, false, true
			}
		case []any:
			n, ok := path.Elem(j).Value.(ast.Number)
			if !ok {
				return nil, false, true
			}
			i, ok := n.Int()
			if !ok || i < 0 || i >= len(c) {
				return nil, false, true
			}
			curr = c[i]
		case nil, bool, string, json.Number, float64, float32, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
			return nil, false, true
		default:
			return nil, false, false
		}
	}
	return curr, true, true
}

// toGo converts a JSON value of the input to what santhosh validates:
// numbers as json.Number with their exact text. Anything that is not JSON
// is not ok.
func toGo(v ast.Value, depth int) (any, bool) {
	if depth > maxDepth {
		return nil, false
	}
	switch x := v.(type) {
	case ast.Null:
		return nil, true
	case ast.Boolean:
		return bool(x), true
	case ast.Number:
		return json.Number(x), true
	case ast.String:
		return string(x), true
	case *ast.Array:
		out := make([]any, x.Len())
		for i := range out {
			e, ok := toGo(x.Elem(i).Value, depth+1)
			if !ok {
				return nil, false
			}
			out[i] = e
		}
		return out, true
	case ast.Object:
		out := make(map[string]any, x.Len())
		ok := true
		x.Until(func(k, e *ast.Term) bool {
			ks, isString := k.Value.(ast.String)
			if !isString {
				ok = false
				return true
			}
			var ev any
			ev, ok = toGo(e.Value, depth+1)
			out[string(ks)] = ev
			return !ok
		})
		return out, ok
	}
	return nil, false
}
