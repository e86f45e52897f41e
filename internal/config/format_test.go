package config

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestFormatPointers: every format keyword where a schema stands is found,
// with its JSON Pointer; a property, a definition or an enum value named
// format is not a keyword.
func TestFormatPointers(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type": "string", "format": "email"}`, `["/format"]`},
		{`{"properties": {"format": {"enum": ["format"]}, "a/b": {"format": "uri"}}}`, `["/properties/a~1b/format"]`},
		{`{"items": {"format": "date"}, "prefixItems": [{}, {"format": "ipv4"}], "contains": {"format": "uuid"}}`,
			`["/items/format", "/contains/format", "/prefixItems/1/format"]`},
		{`{"allOf": [{"not": {"format": "x"}}], "if": {"format": "a"}, "then": {"format": "b"}, "else": {"format": "c"}}`,
			`["/allOf/0/not/format", "/if/format", "/then/format", "/else/format"]`},
		{`{"$defs": {"format": {"format": "email"}}, "additionalProperties": {"format": "x"}, "dependentSchemas": {"k": {"format": "y"}}}`,
			`["/additionalProperties/format", "/$defs/format/format", "/dependentSchemas/k/format"]`},
		{`{"const": {"format": "email"}, "default": {"format": "x"}, "examples": [{"format": "y"}]}`, `[]`},
		{`{"format": 3}`, `[]`},
		{`true`, `[]`},
	} {
		var schema any
		if err := json.Unmarshal([]byte(tc.schema), &schema); err != nil {
			t.Fatal(err)
		}
		var want []string
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatal(err)
		}
		got := formatPointers(schema, "")
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: %q, want %q", tc.schema, got, want)
		}
	}
}
