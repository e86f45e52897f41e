package engine

import (
	"fmt"
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
	compiled map[string]checker // per package, made on first use
	scalars  map[scalarKey]bool // verdicts on scalar values (valid)
}

func newPredicates(schemas map[string]any, secrets any) *predicates {
	return &predicates{schemas: schemas, secrets: newSecretTable(secrets), compiled: map[string]checker{}, scalars: map[scalarKey]bool{}}
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
			return ast.InternedTerm(noUnknownArgsOnce(goArgsOf(bctx), in.Value, facts.Value)), nil
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
			ok := p.commonCase(ga, in.Value, facts.Value)
			if ok && ga != nil {
				ga.commonFacts = facts.Value
			}
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

// commonCase is the common_case builtin: the input is well formed, no
// argument is unknown and every matched rule accepts the arguments (facts
// the tool's, tool.facts).
func (p *predicates) commonCase(ga *callArgs, in, facts ast.Value) bool {
	return wellFormed(ga, in) && noUnknownArgsOnce(ga, in, facts) && p.rulesAccept(ga, in, facts)
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
	s, _ := p.checkers(pkg)
	return s
}

// checker is a package's compiled schema (nil: none, or it did not
// compile) and its quickCheck (nil: santhosh decides every value).
type checker struct {
	s *jsonschema.Schema
	q *quickCheck
}

// checkers is pkg's checker, made on first use.
func (p *predicates) checkers(pkg string) (*jsonschema.Schema, *quickCheck) {
	p.mu.RLock()
	c, ok := p.compiled[pkg]
	p.mu.RUnlock()
	if ok {
		return c.s, c.q
	}
	doc, ok := p.schemas[pkg]
	if !ok {
		return nil, nil
	}
	if p.held(pkg) {
		if v, err := schemarego.Validator(doc); err == nil {
			c = checker{s: v, q: quickOf(v)}
		}
	}
	p.mu.Lock()
	p.compiled[pkg] = c
	p.mu.Unlock()
	return c.s, c.q
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
