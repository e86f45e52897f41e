package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"
)

// TestSchemaDigestIsTheSchemas: the digest the engine keeps for an
// inputSchema is the one newToolSchema computes, for the schema seen first
// and for every schema that differs from it in one value, one Go type or
// one member (each of which gets its own digest), also when a schema is
// changed in place after it was digested.
func TestSchemaDigestIsTheSchemas(t *testing.T) {
	t.Parallel()
	base := func() map[string]any {
		return map[string]any{
			"type": "object",
			"properties": map[string]any{
				"a": map[string]any{"type": "integer", "maximum": json.Number("10")},
				"b": map[string]any{"enum": []any{"x", nil, true, 1.5}},
			},
			"required": []any{"a"},
		}
	}
	variants := []func(m map[string]any){
		func(map[string]any) {},
		func(m map[string]any) { m["required"] = []any{"b"} },
		func(m map[string]any) { m["required"] = []any{"a", "b"} },
		func(m map[string]any) { m["required"] = []any{} },
		func(m map[string]any) {
			m["properties"].(map[string]any)["a"].(map[string]any)["maximum"] = json.Number("10.0")
		},
		func(m map[string]any) { m["properties"].(map[string]any)["a"].(map[string]any)["maximum"] = 10.0 },
		func(m map[string]any) { m["properties"].(map[string]any)["a"].(map[string]any)["maximum"] = "10" },
		func(m map[string]any) {
			m["properties"].(map[string]any)["b"] = map[string]any{"enum": []any{"x", nil, false, 1.5}}
		},
		func(m map[string]any) {
			m["properties"].(map[string]any)["b"] = map[string]any{"enum": []any{nil, "x", true, 1.5}}
		},
		func(m map[string]any) {
			m["properties"].(map[string]any)["b"] = map[string]any{"enum": []any{"x", nil, true, math.Copysign(0, -1)}}
		},
		func(m map[string]any) { m["properties"].(map[string]any)["c"] = map[string]any{} },
		func(m map[string]any) { delete(m, "required") },
		func(m map[string]any) { m["additionalProperties"] = false },
	}
	c := newSchemaCache()
	sums := map[cacheKey]int{}
	for round := 0; round < 2; round++ {
		for i, change := range variants {
			doc := base()
			change(doc)
			want := newToolSchema(doc)
			got := c.tool(doc)
			if !want.ok || !got.ok || got.sum != want.sum {
				t.Fatalf("round %d, variant %d: digest %x (ok %v), want %x (ok %v)", round, i, got.sum, got.ok, want.sum, want.ok)
			}
			if j, seen := sums[got.sum]; seen && j != i {
				t.Fatalf("variants %d and %d share a digest", j, i)
			}
			sums[got.sum] = i
		}
	}
	if c.kept != len(variants) {
		t.Errorf("%d schemas kept, want %d", c.kept, len(variants))
	}
	// a schema digested, then changed in place
	doc := base()
	first := c.tool(doc)
	doc["properties"].(map[string]any)["a"].(map[string]any)["maximum"] = json.Number("11")
	if got, want := c.tool(doc), newToolSchema(doc); got.sum != want.sum || got.sum == first.sum {
		t.Errorf("changed in place: digest %x, want %x (not the first %x)", got.sum, want.sum, first.sum)
	}
}

// TestSchemaDigestTellsCollisionsApart: two schemas with the same cheap
// hash get their own digests (the kept copy is compared, not the hash).
func TestSchemaDigestTellsCollisionsApart(t *testing.T) {
	t.Parallel()
	c := newSchemaCache()
	a := map[string]any{"type": "object"}
	b := map[string]any{"type": "array"}
	ha, _ := shapeHash(a, 0)
	// b filed under a's hash, as a collision would file it
	c.digests[ha] = append(c.digests[ha], schemaDigest{doc: copyJSON(b).(map[string]any), sum: newToolSchema(b).sum})
	if got, want := c.tool(a), newToolSchema(a); got.sum != want.sum {
		t.Errorf("digest %x, want %x", got.sum, want.sum)
	}
	if n := len(c.digests[ha]); n != 2 {
		t.Errorf("%d schemas under the hash, want 2", n)
	}
}

// TestSchemaDigestSkipsWhatIsNotJSON: a schema holding a Go value that is
// not decoded JSON has no digest and is not kept.
func TestSchemaDigestSkipsWhatIsNotJSON(t *testing.T) {
	t.Parallel()
	c := newSchemaCache()
	for _, v := range []any{struct{}{}, fmt.Errorf("x"), []string{"a"}, uint(1)} {
		if got := c.tool(map[string]any{"x": v}); got.ok {
			t.Errorf("%T: digested", v)
		}
	}
	if c.kept != 0 {
		t.Errorf("%d schemas kept, want 0", c.kept)
	}
}
