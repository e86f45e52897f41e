// Package schemarego compiles one JSON Schema (draft 2020-12) into one
// specialized Rego v1 module, the "generated rule package" of ADR 0001.
//
// The schema is validated and its references resolved by
// santhosh-tekuri/jsonschema/v6; the compiled *jsonschema.Schema is then
// walked and every subschema becomes its own Rego function, so the module is
// straight-line code without recursion. The module is built as OPA AST from
// fixed templates whose user-supplied parts (property names, patterns, enum
// values, numbers) are inserted as AST terms, never as source text, and is
// printed with OPA's formatter.
//
// Anything the generated code could not decide exactly is refused with an
// *Error instead of being evaluated approximately: see Compile.
package schemarego

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"

	"github.com/mcpx/mcpx-policy/internal/decision"
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

// PackageName returns the generated package name of schema, by ADR 0001's
// rule (the same as bundle.SchemaPackage, which is the one namer the
// configuration uses): "s_" and the first 16 hex digits of the SHA-256 of
// the schema's RFC 8785 canonical JSON, so identical schemas share one
// package whatever their key order; a schema holding a number that float64
// would change (9007199254740993, 0.1000000000000000001, 1e400) is named
// by the SHA-256 of "exact:" and its JSON with the numbers as written, so
// two such schemas never share a package. For a value that is not JSON,
// which Compile refuses as well, PackageName returns "".
func PackageName(schema any) string {
	if !floatExact(schema) {
		b, err := json.Marshal(schema)
		if err != nil {
			return ""
		}
		return "s_" + decision.SHA256Hex(append([]byte("exact:"), b...))[:16]
	}
	b, err := decision.Canonical(schema)
	if err != nil {
		return ""
	}
	return "s_" + decision.SHA256Hex(b)[:16]
}

// floatExact reports whether RFC 8785 keeps the value of every number in v.
func floatExact(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if !floatExact(x) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !floatExact(x) {
				return false
			}
		}
	case json.Number:
		var exact big.Rat
		if _, ok := exact.SetString(string(v)); !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return false
		}
		var shortest big.Rat
		shortest.SetString(strconv.FormatFloat(f, 'g', -1, 64))
		return shortest.Cmp(&exact) == 0
	}
	return true
}

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
	// the root's predicate is _v0 and its violation function _s0
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
