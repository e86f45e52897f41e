package engine

import (
	"encoding/json"
	"hash/maphash"
	"math"
)

// A tool's inputSchema enters the decision-cache key and the converted-
// schema cache by its SHA-256 (toolSchema), which costs a sorted encoding
// of the whole schema on every call. A gateway passes the same few schemas
// again and again, so the engine remembers each schema it digested: a
// cheap hash that ignores map order finds the candidates, and a walk that
// compares the call's schema with a kept copy, value by value and type by
// type, confirms one. A schema changed in place (the same map) compares
// unequal to its copy, so it is digested again, never served stale; two
// schemas that collide on the cheap hash are told apart by the walk.

// schemaDigest is a schema the engine digested: a deep copy of it, taken
// when it was digested, and its SHA-256.
type schemaDigest struct {
	doc map[string]any
	sum cacheKey
}

var shapeSeed = maphash.MakeSeed()

// tool is the call's inputSchema with its digest: the digest kept for an
// equal schema, else computed (and kept while the cache has room).
func (c *schemaCache) tool(doc map[string]any) toolSchema {
	if doc == nil || c == nil {
		return newToolSchema(doc)
	}
	h, hashed := shapeHash(doc, 0)
	if !hashed {
		return newToolSchema(doc)
	}
	c.mu.RLock()
	for _, d := range c.digests[h] {
		if sameJSON(d.doc, doc) {
			c.mu.RUnlock()
			return toolSchema{doc: doc, sum: d.sum, ok: true}
		}
	}
	c.mu.RUnlock()
	ts := newToolSchema(doc)
	if !ts.ok {
		return ts
	}
	c.mu.Lock()
	if c.kept < schemaCacheSize {
		c.digests[h] = append(c.digests[h], schemaDigest{doc: copyJSON(doc).(map[string]any), sum: ts.sum})
		c.kept++
	}
	c.mu.Unlock()
	return ts
}

// shapeHash hashes decoded JSON (the Go types keyEncoder takes) the same
// for equal values whatever their maps' iteration order: object members
// are combined by addition. ok is false for any other Go type (such a
// schema has no digest).
func shapeHash(v any, depth int) (h uint64, ok bool) {
	if depth > maxDepth {
		return 0, false
	}
	switch x := v.(type) {
	case nil:
		return 0x6e, true
	case bool:
		if x {
			return 0x74, true
		}
		return 0x66, true
	case string:
		return mix64(maphash.String(shapeSeed, x) ^ 's'), true
	case json.Number:
		return mix64(maphash.String(shapeSeed, string(x)) ^ 'N'), true
	case float64:
		return mix64(math.Float64bits(x) ^ 'F'), true
	case int:
		return mix64(uint64(int64(x)) ^ 'I'), true
	case int64:
		return mix64(uint64(x) ^ 'I'), true
	case []any:
		h = mix64(uint64(len(x)) ^ 'a')
		for _, e := range x {
			eh, ok := shapeHash(e, depth+1)
			if !ok {
				return 0, false
			}
			h = mix64(h*31 + eh)
		}
		return h, true
	case map[string]any:
		var sum uint64
		for k, e := range x {
			eh, ok := shapeHash(e, depth+1)
			if !ok {
				return 0, false
			}
			sum += mix64(maphash.String(shapeSeed, k) ^ eh*0x9e3779b97f4a7c15)
		}
		return mix64(sum ^ uint64(len(x)) ^ 'o'), true
	}
	return 0, false
}

// mix64 is splitmix64's finalizer.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// sameJSON reports whether a and b are the same decoded JSON with the same
// Go types (json.Number "1.0" and "1" differ, as float64 1 and int 1 do):
// then keyEncoder writes the same bytes for both.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case int:
		y, ok := b.(int)
		return ok && x == y
	case int64:
		y, ok := b.(int64)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !sameJSON(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// copyJSON is a deep copy of decoded JSON: maps and slices copied, scalars
// as they are.
func copyJSON(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyJSON(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = copyJSON(e)
		}
		return out
	}
	return v
}
