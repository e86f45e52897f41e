// Package schemarego compiles one JSON Schema (draft 2020-12) into one
// specialized Rego v1 module, the "generated rule package" of ADR 0001.
//
// The schema is validated and its references resolved by
// santhosh-tekuri/jsonschema/v6; the compiled *jsonschema.Schema is then
// walked twice, so the module is straight-line code without recursion: once
// for the fast predicate "the value is valid", the first body of _check,
// into which a subschema used in one place is copied (valid.go), and once
// for the violation functions, one per subschema, which run only for an
// invalid value (violations.go). The module is built as OPA AST from fixed
// templates whose user-supplied parts (property names, patterns, enum
// values, numbers) are inserted as AST terms, never as source text, is
// printed with OPA's formatter, and is checked to re-parse to that AST and
// to compile (module.go).
//
// Anything the generated code could not decide exactly is refused with an
// *Error instead of being evaluated approximately: see Compile.
package schemarego

import (
	"fmt"
	"regexp"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxModuleSize is the cap on the size of one generated module, in bytes of
// formatted Rego source. A schema whose module would be larger is refused
// (keyword "$size"); 256 KiB is about 100 times the module of a typical
// rule and keeps policy load and bundle size bounded.
const MaxModuleSize = 256 << 10

// Error is the one error type Compile returns. Keyword is the JSON Schema
// keyword at fault ("" when the schema as a whole is invalid and no keyword
// can be named, "$size" for the size cap, "name" for a bad package name),
// Pointer is a JSON Pointer into the schema document ("" is the root) and
// Msg says what is wrong.
type Error struct {
	Keyword string
	Pointer string
	Msg     string
}

func (e *Error) Error() string {
	kw := e.Keyword
	if kw == "" {
		kw = "schema"
	}
	ptr := e.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return fmt.Sprintf("schemarego: %s at %s: %s", kw, ptr, e.Msg)
}

// SchemaPointer returns Pointer: where in the schema the error is, for a
// caller that maps it back to the schema's source (a YAML line).
func (e *Error) SchemaPointer() string { return e.Pointer }

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Compile validates schema (decoded JSON: objects map[string]any, numbers
// json.Number or float64) as JSON Schema 2020-12 and returns the formatted
// source of one Rego v1 module `package mcpx.rules.<name>` whose rule
// `violations[key]` yields, for every target in
// data.mcpx.steps.rules.targets[name], the array of violations of the
// target's value (empty when valid), as ADR 0001 specifies.
//
// A schema without "$schema" is read as 2020-12; a "$schema" naming another
// draft is refused. Refused, each as an *Error naming the keyword: an invalid
// schema, $dynamicRef, $recursiveRef, a recursive $ref, a $ref to anything
// outside the schema document (nothing is ever fetched, so the metaschema,
// which uses $dynamicRef, is refused too), a pattern that Go's regexp (RE2)
// cannot compile, and a module larger than MaxModuleSize. Every other
// 2020-12 keyword, unevaluatedProperties and unevaluatedItems included, is
// evaluated exactly; format and content* are annotations.
//
// The generated code never raises a builtin error on any JSON value under
// StrictBuiltinErrors. Compile is safe for concurrent use.
func Compile(schema any, name string) (string, error) {
	if !identRE.MatchString(name) {
		return "", &Error{Keyword: "name", Msg: fmt.Sprintf("package name %q is not a Rego identifier", name)}
	}
	sch, raw, err := compileSchema(schema)
	if err != nil {
		return "", err
	}
	g := newGen(raw)
	g.root = sch
	g.countUses(sch)
	// the root's predicate is _v0 (the first body of _check) and its
	// violation function _s0
	rv, err := g.valid(sch)
	if err != nil {
		return "", err
	}
	root, err := g.schema(sch)
	if err != nil {
		return "", err
	}
	return g.module(name, root, rv)
}

// Validator compiles schema with santhosh v6 exactly as Compile reads it
// (draft 2020-12 unless "$schema" says otherwise, nothing ever fetched,
// format and content* as annotations) and returns the compiled schema, for
// a Go check that must agree with the generated Rego (the embedded
// engine's argument-rules predicate, internal/engine). A schema Compile
// would refuse may still compile here; the caller uses Validator only for
// schemas Compile accepted. Safe for concurrent use; the returned schema's
// Validate is too.
func Validator(schema any) (*jsonschema.Schema, error) {
	sch, _, err := compileSchema(schema)
	return sch, err
}
