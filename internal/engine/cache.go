package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"sync"

	"github.com/mcpx/mcpx-policy/decision"
)

// decisionCacheSize is how many decisions a Prepared keeps for repeated
// identical calls. The oldest is dropped first.
const decisionCacheSize = 4096

// cacheKey identifies everything a decision depends on: the policy
// revision and the whole input the policy reads — server, tool (name,
// annotations, inputSchema), arguments, surface, mode, principal, this
// server's ledger entries (or why they could not be read) and the
// clear and writes commands, and the tool's
// pin status and accept command. It is the
// SHA-256 of a deterministic, unambiguous encoding of those values
// (keyEncoder): exact, not canonical, so two calls that differ only in
// encoding (1.0 and 1) get different keys, which costs a miss, never a
// wrong hit. Two calls with the same key get the same decision from a
// policy that calls no non-deterministic builtin.
type cacheKey [sha256.Size]byte

// The arguments enter as their canonical form and what that form does not
// keep (decision.AppendCallDigest: one walk gives the call's hash and this).
func makeKey(revision string, call decision.Call, schema toolSchema, led *Ledger, d callDigest) (cacheKey, bool) {
	if !d.ok {
		return cacheKey{}, false
	}
	b := keyEncoder(getBuf())
	defer func() { putBuf(b) }()
	b.str(revision)
	b.str(call.Surface)
	b.str(call.Server)
	b.str(call.Tool.Name)
	if a := call.Tool.Annotations; a == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b.str(a.Title)
		for _, h := range []*bool{a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint} {
			b.boolPtr(h)
		}
	}
	// a nil inputSchema is no schema; an empty one is a schema
	switch {
	case schema.doc == nil:
		b = append(b, 0)
	case !schema.ok:
		return cacheKey{}, false
	default:
		b = append(b, 1)
		b = append(b, schema.sum[:]...)
	}
	b.bytes(d.canon)
	b.bytes(d.exact)
	b.str(call.Mode)
	if p := call.Principal; p == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b.str(p.ID)
		b.len(len(p.Groups))
		for _, g := range p.Groups {
			b.str(g)
		}
	}
	if led == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b.str(led.Unreadable)
		b.len(led.Total)
		b.len(len(led.Entries))
		for _, e := range led.Entries {
			for _, f := range []string{e.ID, e.Server, e.Tool, e.ArgsSHA256, e.Time, e.Surface} {
				b.str(f)
			}
		}
		b.len(len(led.Budgets))
		for _, c := range led.Budgets {
			b.str(c.ID)
			b.len(c.Count)
			b.str(c.RetryAt)
		}
		if led.Labels == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b.len(len(led.Labels))
			for _, l := range led.Labels {
				b.str(l)
			}
		}
		b.str(led.LabelsError)
		if p := led.Pin; p == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			for _, f := range []string{p.Status, p.SHA256, p.PinnedSHA256, p.Error} {
				b.str(f)
			}
			b.len(len(p.Changed))
			for _, f := range p.Changed {
				b.str(f)
			}
		}
	}
	return cacheKey(sha256.Sum256(b)), true
}

// toolSchema is a tool's inputSchema and the SHA-256 of its exact encoding
// (keyEncoder), computed once per decision: the decision-cache key and the
// converted-schema cache both use it.
type toolSchema struct {
	doc map[string]any
	sum cacheKey
	ok  bool // doc is decoded JSON and sum is its digest
}

func newToolSchema(doc map[string]any) toolSchema {
	ts := toolSchema{doc: doc}
	if doc == nil {
		return ts
	}
	b := keyEncoder(getBuf())
	if ts.ok = b.value(doc); ts.ok {
		ts.sum = sha256.Sum256(b)
	}
	putBuf(b)
	return ts
}

// keyEncoder writes values so that different values never write the same
// bytes: a tag, then the value, with lengths as uvarints and object members
// in key order. Numbers keep their Go type and text (json.Number "1.0" and
// "1" differ, as they may in a message).
type keyEncoder []byte

func (b *keyEncoder) len(n int) { *b = binary.AppendUvarint(*b, uint64(n)) }

func (b *keyEncoder) str(s string) {
	b.len(len(s))
	*b = append(*b, s...)
}

func (b *keyEncoder) bytes(s []byte) {
	b.len(len(s))
	*b = append(*b, s...)
}

// callDigest is a call's canonical form and what it does not keep of the
// arguments (decision.AppendCallDigest), made once per decision: the
// call's hash and the decision cache's key both come from it. ok is false
// when the arguments are not decoded JSON the direct writer takes.
type callDigest struct {
	canon, exact []byte
	ok           bool
}

// digestCall digests call into buffers from the pool; release returns
// them once the digest's bytes are no longer read.
func digestCall(call decision.Call) callDigest {
	canon, exact, ok := decision.AppendCallDigest(getBuf(), getBuf(), call.Server, call.Tool.Name, call.Args)
	return callDigest{canon: canon, exact: exact, ok: ok}
}

func (d callDigest) release() {
	putBuf(d.canon)
	putBuf(d.exact)
}

// bufs recycles the byte buffers of digests and keys: a decision writes
// a few kilobytes it reads once.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func getBuf() []byte { return (*bufs.Get().(*[]byte))[:0] }

func putBuf(b []byte) {
	if cap(b) <= 64<<10 {
		bufs.Put(&b)
	}
}

// sha256 is the call's hash, as decision.CallSHA256 computes it.
func (d callDigest) sha256(call decision.Call) (string, error) {
	if d.ok {
		return decision.SHA256Hex(d.canon), nil
	}
	return decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
}

func (b *keyEncoder) boolPtr(p *bool) {
	switch {
	case p == nil:
		*b = append(*b, 0)
	case *p:
		*b = append(*b, 2)
	default:
		*b = append(*b, 1)
	}
}

// value writes decoded JSON; it reports false for any other Go type, and
// the call is then not cached.
func (b *keyEncoder) value(v any) bool {
	switch x := v.(type) {
	case nil:
		*b = append(*b, 'n')
	case bool:
		if x {
			*b = append(*b, 't')
		} else {
			*b = append(*b, 'f')
		}
	case string:
		*b = append(*b, 's')
		b.str(x)
	case json.Number:
		*b = append(*b, 'N')
		b.str(string(x))
	case float64:
		*b = append(*b, 'F')
		*b = binary.BigEndian.AppendUint64(*b, math.Float64bits(x))
	case int:
		*b = append(*b, 'I')
		*b = binary.AppendVarint(*b, int64(x))
	case int64:
		*b = append(*b, 'I')
		*b = binary.AppendVarint(*b, x)
	case []any:
		*b = append(*b, 'a')
		b.len(len(x))
		for _, e := range x {
			if !b.value(e) {
				return false
			}
		}
	case map[string]any:
		*b = append(*b, 'o')
		b.len(len(x))
		var buf [16]string
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			b.str(k)
			if !b.value(x[k]) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// decisionCache is a bounded FIFO map from cacheKey to decision, safe for
// concurrent use. Decisions are stored and returned as deep copies, so a
// caller that changes its decision cannot change another's.
type decisionCache struct {
	mu    sync.Mutex
	items map[cacheKey]decision.Decision
	order []cacheKey // ring of keys in insertion order
	next  int
}

func newDecisionCache(size int) *decisionCache {
	return &decisionCache{items: make(map[cacheKey]decision.Decision, size), order: make([]cacheKey, 0, size)}
}

func (c *decisionCache) get(k cacheKey) (decision.Decision, bool) {
	c.mu.Lock()
	d, ok := c.items[k]
	c.mu.Unlock()
	if !ok {
		return decision.Decision{}, false
	}
	return cloneDecision(d), true
}

func (c *decisionCache) put(k cacheKey, d decision.Decision) {
	d = cloneDecision(d)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return
	}
	if len(c.order) < cap(c.order) {
		c.order = append(c.order, k)
	} else {
		delete(c.items, c.order[c.next])
		c.order[c.next] = k
		c.next = (c.next + 1) % len(c.order)
	}
	c.items[k] = d
}

func cloneDecision(d decision.Decision) decision.Decision {
	d.Reasons = cloneReasons(d.Reasons)
	d.Warnings = cloneReasons(d.Warnings)
	if d.Shadow != nil {
		sh := *d.Shadow
		sh.Reasons = cloneReasons(sh.Reasons)
		d.Shadow = &sh
	}
	return d
}

func cloneReasons(rs []decision.Reason) []decision.Reason {
	if rs == nil {
		return nil
	}
	out := make([]decision.Reason, len(rs))
	for i, r := range rs {
		if r.Violations != nil {
			vs := make([]decision.Violation, len(r.Violations))
			for j, v := range r.Violations {
				v.Value = cloneAny(v.Value)
				v.Expected = cloneAny(v.Expected)
				vs[j] = v
			}
			r.Violations = vs
		}
		if r.Details != nil {
			r.Details = cloneAny(r.Details).(map[string]any)
		}
		out[i] = r
	}
	return out
}

func cloneAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := maps.Clone(x)
		for k, e := range m {
			m[k] = cloneAny(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = cloneAny(e)
		}
		return s
	}
	return v
}
