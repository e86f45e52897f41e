package engine

import (
	"crypto/sha256"
	"encoding/json"
	"maps"
	"sync"

	"github.com/mcpx/mcpx-policy/internal/decision"
)

// DecisionCacheSize is how many decisions an Engine keeps for repeated
// identical calls. The oldest is dropped first.
const DecisionCacheSize = 4096

// cacheKey identifies everything a decision depends on: the policy
// revision and the whole input the policy reads — server, tool (name,
// annotations, inputSchema), arguments, surface, mode, principal, and this
// server's ledger entries (or why they could not be read). It hashes Go's
// JSON encoding of those values, which is deterministic (sorted keys,
// json.Number text kept) but not canonical: two calls that differ only in
// encoding (1.0 and 1) get different keys, which costs a miss, never a
// wrong hit. It is cheaper than the canonical (RFC 8785) hash, which a hit
// does not need: the cached decision already carries it. Two calls with the
// same key get the same decision from a policy that calls no
// non-deterministic builtin.
type cacheKey [sha256.Size]byte

func makeKey(revision string, call decision.Call, led *Ledger) (cacheKey, bool) {
	h := sha256.New()
	h.Write([]byte(revision))
	h.Write([]byte{0})
	if err := json.NewEncoder(h).Encode(struct {
		Call   decision.Call
		Ledger *Ledger
	}{call, led}); err != nil {
		return cacheKey{}, false
	}
	var k cacheKey
	h.Sum(k[:0])
	return k, true
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
