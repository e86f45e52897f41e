package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
)

// callInput builds the policy input (docs/fleet.md, "Ask it: the input document") as an ast.Value directly from
// the call, without a JSON round trip. It carries "call_sha256", the SHA-256
// of the RFC 8785 canonical call, which the policy echoes in
// decision.call.sha256 (Rego cannot canonicalize JSON exactly; see
// docs/fleet.md). Arguments with no canonical form (a number beyond a
// double's range) leave call_sha256 out: the policy denies them as
// InvalidInput, naming the argument. Arguments that are not JSON values
// are an error.
func callInput(call decision.Call, led *Ledger) (ast.Value, error) {
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		sum = ""
	}
	return input(call, led, sum, toolSchema{doc: call.Tool.InputSchema}, nil)
}

// input builds the input, without call_sha256 when sum is ""; schemas,
// when not nil, holds tool inputSchemas already converted.
func input(call decision.Call, led *Ledger, sum string, schema toolSchema, schemas *schemaCache) (ast.Value, error) {
	obj, err := inputWithoutArgs(call, led, sum, schema, schemas)
	if err != nil {
		return nil, err
	}
	args, err := value(call.Args)
	if err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	obj.Insert(kArgs, ast.NewTerm(args))
	return obj, nil
}

// inputWithoutArgs is input but for "args": what the decision's common
// half reads, the arguments being read by the predicates from the call
// (Prepared.evaluate).
func inputWithoutArgs(call decision.Call, led *Ledger, sum string, schema toolSchema, schemas *schemaCache) (ast.Object, error) {
	obj := ast.NewObjectWithCapacity(9)
	obj.Insert(kServer, ast.StringTerm(call.Server))
	if led == nil || led.Pin == nil {
		// the tool as it was last built for an equal tool (toolTerm)
		tool, err := schemas.toolTerm(call.Tool, schema)
		if err != nil {
			return nil, err
		}
		obj.Insert(kTool, tool)
	} else {
		tool := toolValue(call.Tool)
		if call.Tool.InputSchema != nil {
			schema, err := schemas.value(schema)
			if err != nil {
				return nil, fmt.Errorf("tool.inputSchema: %w", err)
			}
			tool.Insert(kInputSchema, ast.NewTerm(schema))
		}
		tool.Insert(kPin, ast.NewTerm(pinValue(led.Pin)))
		obj.Insert(kTool, ast.NewTerm(tool))
	}
	if sum != "" {
		obj.Insert(kCallSHA256, ast.StringTerm(sum))
	}
	if call.Surface != "" {
		obj.Insert(kSurface, ast.StringTerm(call.Surface))
	}
	if call.Mode != "" {
		obj.Insert(kMode, ast.StringTerm(call.Mode))
	}
	if p := call.Principal; p != nil {
		groups := make([]*ast.Term, len(p.Groups))
		for i, g := range p.Groups {
			groups[i] = ast.StringTerm(g)
		}
		obj.Insert(kPrincipal, ast.ObjectTerm(
			ast.Item(kID, ast.StringTerm(p.ID)),
			ast.Item(kGroups, ast.ArrayTerm(groups...)),
		))
	}
	if led != nil {
		obj.Insert(kLedger, ast.NewTerm(ledgerValue(led)))
	}
	return obj, nil
}

func toolValue(t decision.Tool) ast.Object {
	tool := ast.NewObjectWithCapacity(3)
	tool.Insert(kName, ast.StringTerm(t.Name))
	if a := t.Annotations; a != nil {
		ann := ast.NewObjectWithCapacity(5)
		for _, h := range []struct {
			key *ast.Term
			v   *bool
		}{{kReadOnly, a.ReadOnlyHint}, {kDestructive, a.DestructiveHint}, {kIdempotent, a.IdempotentHint}, {kOpenWorld, a.OpenWorldHint}} {
			if h.v != nil {
				ann.Insert(h.key, ast.InternedTerm(*h.v))
			}
		}
		if a.Title != "" {
			ann.Insert(kTitle, ast.StringTerm(a.Title))
		}
		tool.Insert(kAnnotations, ast.NewTerm(ann))
	}
	return tool
}

// pinValue is input.tool.pin: status, the fields its status has, and the
// accept command when the caller gave one.
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

// emptyLedger is input.ledger for a server with nothing in the ledger,
// shared by every such input (OPA never changes an input).
var emptyLedger = ast.NewObject(
	ast.Item(kEntries, ast.ArrayTerm()),
	ast.Item(kTotal, ast.IntNumberTerm(0)),
)

func ledgerValue(led *Ledger) ast.Object {
	if ledgerIsEmpty(led) {
		return emptyLedger
	}
	obj := ast.NewObjectWithCapacity(6)
	if led.Labels != nil {
		ls := make([]*ast.Term, len(led.Labels))
		for i, l := range led.Labels {
			ls[i] = ast.StringTerm(l)
		}
		obj.Insert(kLabels, ast.ArrayTerm(ls...))
	}
	if led.LabelsError != "" {
		obj.Insert(kLabelsError, ast.StringTerm(led.LabelsError))
	}
	if len(led.Budgets) > 0 {
		counts := ast.NewObjectWithCapacity(len(led.Budgets))
		for _, b := range led.Budgets {
			counts.Insert(ast.StringTerm(b.ID), ast.ObjectTerm(
				ast.Item(kCount, ast.IntNumberTerm(b.Count)),
				ast.Item(kRetryAt, ast.StringTerm(b.RetryAt)),
			))
		}
		obj.Insert(kBudgets, ast.NewTerm(counts))
	}
	if led.Unreadable != "" {
		obj.Insert(kError, ast.StringTerm(led.Unreadable))
	}
	entries := make([]*ast.Term, 0, len(led.Entries))
	for _, e := range led.Entries {
		entries = append(entries, ast.ObjectTerm(
			ast.Item(kID, ast.StringTerm(e.ID)),
			ast.Item(kServer, ast.StringTerm(e.Server)),
			ast.Item(kTool, ast.StringTerm(e.Tool)),
			ast.Item(kArgsSHA256, ast.StringTerm(e.ArgsSHA256)),
			ast.Item(kTime, ast.StringTerm(e.Time)),
			ast.Item(kSurface, ast.StringTerm(e.Surface)),
		))
	}
	obj.Insert(kEntries, ast.ArrayTerm(entries...))
	obj.Insert(kTotal, ast.IntNumberTerm(max(led.Total, len(led.Entries))))
	return obj
}

// Key terms of the input, shared by every input built (OPA never changes
// a term it is given; its own interned terms are shared the same way).
var (
	kID          = ast.StringTerm("id")
	kGroups      = ast.StringTerm("groups")
	kIdempotent  = ast.StringTerm("idempotentHint")
	kOpenWorld   = ast.StringTerm("openWorldHint")
	kTitle       = ast.StringTerm("title")
	kError       = ast.StringTerm("error")
	kBudgets     = ast.StringTerm("budgets")
	kLabels      = ast.StringTerm("labels")
	kLabelsError = ast.StringTerm("labels_error")
	kCount       = ast.StringTerm("count")
	kRetryAt     = ast.StringTerm("retry_at")
	kArgsSHA256  = ast.StringTerm("args_sha256")
	kTime        = ast.StringTerm("time")
)

// argKeys interns the key terms of arguments: a gateway's tools take the
// same few argument names on every call. Bounded: past maxArgKeys names
// (or for a name longer than maxArgKey bytes) a key gets its own term.
var argKeys = struct {
	sync.RWMutex
	terms map[string]*ast.Term
}{terms: map[string]*ast.Term{}}

const (
	maxArgKeys = 4096
	maxArgKey  = 64
)

func keyTerm(k string) *ast.Term {
	if len(k) > maxArgKey {
		return ast.StringTerm(k)
	}
	argKeys.RLock()
	t, ok := argKeys.terms[k]
	argKeys.RUnlock()
	if ok {
		return t
	}
	t = ast.StringTerm(k)
	argKeys.Lock()
	if len(argKeys.terms) < maxArgKeys {
		if old, ok := argKeys.terms[k]; ok {
			t = old
		} else {
			argKeys.terms[k] = t
		}
	}
	argKeys.Unlock()
	return t
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
	// digests are the schemas digested, by shapeHash (schemadigest.go);
	// kept counts them (at most schemaCacheSize)
	digests map[uint64][]schemaDigest
	kept    int
	// tools are input.tool terms by what they hold (toolTerm)
	tools map[toolKey]*ast.Term
}

// toolKey identifies what input.tool holds but for the pin: the tool's
// name and annotations, and its inputSchema by digest.
type toolKey struct {
	name, title string
	hints       [4]byte // 0 absent, 1 false, 2 true
	annotations bool
	schema      byte // 0 none, 1 by digest
	sum         cacheKey
}

// toolTerm is input.tool, without a pin, for t with the inputSchema
// schema: the term last built for an equal tool when there is one, shared
// between evaluations (OPA never changes an input); tools whose schema has
// no digest are built every time. At most schemaCacheSize tools are kept.
func (c *schemaCache) toolTerm(t decision.Tool, schema toolSchema) (*ast.Term, error) {
	k := toolKey{name: t.Name}
	keyed := c != nil
	if a := t.Annotations; a != nil {
		k.annotations, k.title = true, a.Title
		for i, h := range []*bool{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint} {
			switch {
			case h == nil:
			case *h:
				k.hints[i] = 2
			default:
				k.hints[i] = 1
			}
		}
	}
	switch {
	case t.InputSchema == nil:
	case schema.ok:
		k.schema, k.sum = 1, schema.sum
	default:
		keyed = false
	}
	if keyed {
		c.mu.RLock()
		term := c.tools[k]
		c.mu.RUnlock()
		if term != nil {
			return term, nil
		}
	}
	tool := toolValue(t)
	if t.InputSchema != nil {
		sv, err := c.value(schema)
		if err != nil {
			return nil, fmt.Errorf("tool.inputSchema: %w", err)
		}
		tool.Insert(kInputSchema, ast.NewTerm(sv))
	}
	term := ast.NewTerm(tool)
	if keyed {
		c.mu.Lock()
		if len(c.tools) < schemaCacheSize {
			c.tools[k] = term
		}
		c.mu.Unlock()
	}
	return term, nil
}

// schemaCacheSize bounds the inputSchemas a Prepared keeps converted, and
// those it keeps digested.
const schemaCacheSize = 4096

func newSchemaCache() *schemaCache {
	return &schemaCache{values: map[cacheKey]ast.Value{}, digests: map[uint64][]schemaDigest{}, tools: map[toolKey]*ast.Term{}}
}

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
	if len(c.values) < schemaCacheSize {
		c.values[schema.sum] = v
	}
	c.mu.Unlock()
	return v, nil
}

// value converts decoded JSON (numbers as json.Number, float64 or integers)
// to an ast.Value, keeping a json.Number's exact text. The terms of the
// values are allocated together (a count first, then one slab); object
// keys are interned (keyTerm).
func value(v any) (ast.Value, error) {
	if m, ok := v.(map[string]any); ok && m == nil {
		return ast.NewObject(), nil // no arguments: the empty object
	}
	c := converter{slab: make([]ast.Term, countTerms(v))}
	return c.value(v)
}

// countTerms is how many value terms converting v takes (keys aside).
func countTerms(v any) int {
	switch x := v.(type) {
	case map[string]any:
		n := 0
		for _, e := range x {
			n += 1 + countTerms(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range x {
			n += 1 + countTerms(e)
		}
		return n
	}
	return 0
}

type converter struct{ slab []ast.Term }

// term wraps v in the next term of the slab (a new one when it is used up).
func (c *converter) term(v ast.Value) *ast.Term {
	if len(c.slab) == 0 {
		return ast.NewTerm(v)
	}
	t := &c.slab[0]
	c.slab = c.slab[1:]
	t.Value = v
	return t
}

func (c *converter) value(v any) (ast.Value, error) {
	switch x := v.(type) {
	case nil:
		return ast.Null{}, nil
	case bool:
		return ast.Boolean(x), nil
	case string:
		return ast.String(x), nil
	case json.Number:
		if !isJSONNumber(string(x)) {
			// OPA panics comparing a number that does not parse
			return nil, fmt.Errorf("arguments must be JSON values: %q is not a JSON number", string(x))
		}
		return ast.Number(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("arguments must be JSON values: %v is not a JSON number", x)
		}
		return ast.InterfaceToValue(x)
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("arguments must be JSON values: %v is not a JSON number", x)
		}
		return ast.InterfaceToValue(x)
	case map[string]any:
		obj := ast.NewObjectWithCapacity(len(x))
		for k, e := range x {
			ev, err := c.value(e)
			if err != nil {
				return nil, err
			}
			obj.Insert(keyTerm(k), c.term(ev))
		}
		return obj, nil
	case []any:
		terms := make([]*ast.Term, len(x))
		for i, e := range x {
			ev, err := c.value(e)
			if err != nil {
				return nil, err
			}
			terms[i] = c.term(ev)
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

// isJSONNumber reports whether s is a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isJSONNumber(s string) bool {
	i := 0
	digits := func() bool {
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// InputJSON is the policy input as JSON (callInput): the exact document the engine evaluates, for
// a stock OPA server's POST /v1/data/mcpx/decision {"input": …}. Numbers
// keep their text.
func InputJSON(call decision.Call, led *Ledger) ([]byte, error) {
	v, err := callInput(call, led)
	if err != nil {
		return nil, err
	}
	doc, err := ast.JSON(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}
