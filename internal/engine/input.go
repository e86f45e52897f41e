package engine

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/internal/decision"
)

// Input builds the policy input (SPEC §1.2) as an ast.Value directly from
// the call, without a JSON round trip. It carries "call_sha256", the SHA-256
// of the RFC 8785 canonical call, which the policy echoes in
// decision.call.sha256 (Rego cannot canonicalize JSON exactly; see
// docs/fleet.md). Arguments with no canonical form (a number beyond a
// double's range) leave call_sha256 out: the policy denies them as
// InvalidInput, naming the argument. Arguments that are not JSON values
// are an error.
func Input(call decision.Call, led *Ledger) (ast.Value, error) {
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		sum = ""
	}
	return input(call, led, sum, toolSchema{doc: call.Tool.InputSchema}, nil)
}

// input builds the input, without call_sha256 when sum is ""; schemas,
// when not nil, holds tool inputSchemas already converted.
func input(call decision.Call, led *Ledger, sum string, schema toolSchema, schemas *schemaCache) (ast.Value, error) {
	obj := ast.NewObject(
		ast.Item(ast.InternedTerm("server"), ast.StringTerm(call.Server)),
		ast.Item(ast.InternedTerm("tool"), ast.NewTerm(toolValue(call.Tool))),
	)
	if sum != "" {
		obj.Insert(ast.InternedTerm("call_sha256"), ast.StringTerm(sum))
	}
	if call.Surface != "" {
		obj.Insert(ast.InternedTerm("surface"), ast.StringTerm(call.Surface))
	}
	if call.Mode != "" {
		obj.Insert(ast.InternedTerm("mode"), ast.StringTerm(call.Mode))
	}
	args, err := value(call.Args)
	if err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	if call.Args == nil {
		args = ast.NewObject()
	}
	obj.Insert(ast.InternedTerm("args"), ast.NewTerm(args))
	if call.Tool.InputSchema != nil {
		schema, err := schemas.value(schema)
		if err != nil {
			return nil, fmt.Errorf("tool.inputSchema: %w", err)
		}
		obj.Get(ast.InternedTerm("tool")).Value.(ast.Object).Insert(ast.InternedTerm("inputSchema"), ast.NewTerm(schema))
	}
	if led != nil && led.Pin != nil {
		obj.Get(ast.InternedTerm("tool")).Value.(ast.Object).Insert(ast.InternedTerm("pin"), ast.NewTerm(pinValue(led.Pin)))
	}
	if p := call.Principal; p != nil {
		groups := make([]*ast.Term, len(p.Groups))
		for i, g := range p.Groups {
			groups[i] = ast.StringTerm(g)
		}
		obj.Insert(ast.InternedTerm("principal"), ast.ObjectTerm(
			ast.Item(ast.InternedTerm("id"), ast.StringTerm(p.ID)),
			ast.Item(ast.InternedTerm("groups"), ast.ArrayTerm(groups...)),
		))
	}
	if led != nil {
		obj.Insert(ast.InternedTerm("ledger"), ast.NewTerm(ledgerValue(led)))
	}
	return obj, nil
}

func toolValue(t decision.Tool) ast.Object {
	tool := ast.NewObject(ast.Item(ast.InternedTerm("name"), ast.StringTerm(t.Name)))
	if a := t.Annotations; a != nil {
		ann := ast.NewObject()
		for _, h := range []struct {
			key string
			v   *bool
		}{{"readOnlyHint", a.ReadOnlyHint}, {"destructiveHint", a.DestructiveHint}, {"idempotentHint", a.IdempotentHint}, {"openWorldHint", a.OpenWorldHint}} {
			if h.v != nil {
				ann.Insert(ast.InternedTerm(h.key), ast.InternedTerm(*h.v))
			}
		}
		if a.Title != "" {
			ann.Insert(ast.InternedTerm("title"), ast.StringTerm(a.Title))
		}
		tool.Insert(ast.InternedTerm("annotations"), ast.NewTerm(ann))
	}
	return tool
}

// pinValue is input.tool.pin: status, and the fields its status has.
func pinValue(p *Pin) ast.Object {
	obj := ast.NewObject(ast.Item(ast.InternedTerm("status"), ast.StringTerm(p.Status)))
	if p.SHA256 != "" {
		obj.Insert(ast.InternedTerm("sha256"), ast.StringTerm(p.SHA256))
	}
	if p.PinnedSHA256 != "" {
		obj.Insert(ast.InternedTerm("pinned_sha256"), ast.StringTerm(p.PinnedSHA256))
	}
	if p.Status == "changed" {
		changed := make([]*ast.Term, len(p.Changed))
		for i, f := range p.Changed {
			changed[i] = ast.StringTerm(f)
		}
		obj.Insert(ast.InternedTerm("changed"), ast.ArrayTerm(changed...))
	}
	if p.Error != "" {
		obj.Insert(ast.InternedTerm("error"), ast.StringTerm(p.Error))
	}
	return obj
}

func ledgerValue(led *Ledger) ast.Object {
	obj := ast.NewObject()
	if led.Unreadable != "" {
		obj.Insert(ast.InternedTerm("error"), ast.StringTerm(led.Unreadable))
	}
	entries := make([]*ast.Term, 0, len(led.Entries))
	for _, e := range led.Entries {
		entries = append(entries, ast.ObjectTerm(
			ast.Item(ast.InternedTerm("id"), ast.StringTerm(e.ID)),
			ast.Item(ast.InternedTerm("server"), ast.StringTerm(e.Server)),
			ast.Item(ast.InternedTerm("tool"), ast.StringTerm(e.Tool)),
			ast.Item(ast.InternedTerm("args_sha256"), ast.StringTerm(e.ArgsSHA256)),
			ast.Item(ast.InternedTerm("time"), ast.StringTerm(e.Time)),
			ast.Item(ast.InternedTerm("surface"), ast.StringTerm(e.Surface)),
		))
	}
	obj.Insert(ast.InternedTerm("entries"), ast.ArrayTerm(entries...))
	obj.Insert(ast.InternedTerm("total"), ast.IntNumberTerm(max(led.Total, len(led.Entries))))
	if led.Clear != "" {
		obj.Insert(ast.InternedTerm("clear"), ast.StringTerm(led.Clear))
	}
	return obj
}

// schemaCache keeps tools' inputSchemas converted to AST, keyed by the
// SHA-256 of their exact encoding (toolSchema), so a tool's schema is
// converted once, not on every call: a gateway calls the same few tools
// with the same schemas. Converted values are shared between evaluations,
// which never change their input. Bounded: once full, it converts without
// keeping. Safe for concurrent use; a nil cache converts every time.
type schemaCache struct {
	mu     sync.RWMutex
	values map[cacheKey]ast.Value
}

// SchemaCacheSize bounds the inputSchemas an Engine keeps converted.
const SchemaCacheSize = 4096

func newSchemaCache() *schemaCache { return &schemaCache{values: map[cacheKey]ast.Value{}} }

func (c *schemaCache) value(schema toolSchema) (ast.Value, error) {
	if c == nil || !schema.ok {
		return value(schema.doc)
	}
	c.mu.RLock()
	v, ok := c.values[schema.sum]
	c.mu.RUnlock()
	if ok {
		return v, nil
	}
	v, err := value(schema.doc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.values) < SchemaCacheSize {
		c.values[schema.sum] = v
	}
	c.mu.Unlock()
	return v, nil
}

// value converts decoded JSON (numbers as json.Number, float64 or integers)
// to an ast.Value, keeping a json.Number's exact text.
func value(v any) (ast.Value, error) {
	switch x := v.(type) {
	case nil:
		return ast.Null{}, nil
	case json.Number:
		return ast.Number(x), nil
	case map[string]any:
		obj := ast.NewObject()
		for k, e := range x {
			ev, err := value(e)
			if err != nil {
				return nil, err
			}
			obj.Insert(ast.StringTerm(k), ast.NewTerm(ev))
		}
		return obj, nil
	case []any:
		terms := make([]*ast.Term, len(x))
		for i, e := range x {
			ev, err := value(e)
			if err != nil {
				return nil, err
			}
			terms[i] = ast.NewTerm(ev)
		}
		return ast.NewArray(terms...), nil
	case ast.Value, *ast.Term:
		// OPA would take these as they are, sets included, while the call's
		// hash reads them as JSON: the policy must see only JSON values
		return nil, fmt.Errorf("arguments must be JSON values, not OPA %T", v)
	default:
		return ast.InterfaceToValue(v)
	}
}

// InputJSON is Input as JSON: the exact document the engine evaluates, for
// a stock OPA server's POST /v1/data/mcpx/decision {"input": …}. Numbers
// keep their text.
func InputJSON(call decision.Call, led *Ledger) ([]byte, error) {
	v, err := Input(call, led)
	if err != nil {
		return nil, err
	}
	doc, err := ast.JSON(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}
