package schemarego_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// TestRefusals: everything the generated code could not decide exactly is
// an *Error naming the keyword and where it is.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		schema, keyword, pointer string
	}{
		{`{"type": 5}`, "type", "/type"},
		{`{"properties": {"a": {"minLength": -1}}}`, "minLength", "/properties/a/minLength"},
		{`{"$dynamicAnchor": "x", "properties": {"a": {"$dynamicRef": "#x"}}}`, "$dynamicRef", "/properties/a/$dynamicRef"},
		{`{"properties": {"a": {"$ref": "#/$defs/missing"}}}`, "$ref", "/$defs/missing"},
		{`{"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"}`, "$ref", "/$defs/n"},
		{`{"$ref": "#"}`, "$ref", ""},
		{`{"$ref": "https://example.com/schema.json"}`, "$ref", ""},
		{`{"$ref": "other.json#/a"}`, "$ref", ""},
		{`{"$ref": "https://json-schema.org/draft/2020-12/schema"}`, "$dynamicRef", "https://json-schema.org/draft/2020-12/schema#/properties/definitions/additionalProperties/$dynamicRef"},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}`, "$schema", "/$schema"},
		{`{"$schema": "https://example.com/my-meta", "type": "string"}`, "$schema", ""},
		{`{"pattern": "(?<=a)b"}`, "pattern", "/pattern"},
		{`{"patternProperties": {"\\1": true}}`, "patternProperties", "/patternProperties"},
		{`{"properties": {"path": {"pathWithin": ["workspace"]}}}`, "pathWithin", "/properties/path/pathWithin"},
		{`{"pathWithin": ["/workspace/"]}`, "pathWithin", "/pathWithin"},
		{`{"pathWithin": []}`, "pathWithin", "/pathWithin"},
		{`{"pathWithin": "/workspace"}`, "pathWithin", "/pathWithin"},
		{`{"items": {"urlWithin": {"hosts": ["good.com."]}}}`, "urlWithin", "/items/urlWithin"},
		{`{"urlWithin": {"schemes": ["https"]}}`, "urlWithin", "/urlWithin"},
	} {
		_, err := schemarego.Compile(decodeJSON(t, tc.schema), "s_x")
		var se *schemarego.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: want *Error, got %v", tc.schema, err)
			continue
		}
		if se.Keyword != tc.keyword || se.Pointer != tc.pointer || se.Msg == "" || strings.Contains(se.Msg, "internal error") {
			t.Errorf("%s: got keyword %q pointer %q msg %q, want %q at %q", tc.schema, se.Keyword, se.Pointer, se.Msg, tc.keyword, tc.pointer)
		}
		if !strings.Contains(err.Error(), tc.keyword) {
			t.Errorf("%s: message %q does not name %s", tc.schema, err, tc.keyword)
		}
	}
	if _, err := schemarego.Compile(decodeJSON(t, `{}`), "not a name"); err == nil {
		t.Error("a package name that is not an identifier is accepted")
	}
}

// TestSizeCap: a schema whose module would pass MaxModuleSize is refused.
func TestSizeCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"properties": {`)
	for i := 0; i < 3000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"p` + itoa(i) + `": {"type": "string", "minLength": 1, "pattern": "^x` + itoa(i) + `"}`)
	}
	b.WriteString(`}}`)
	_, err := schemarego.Compile(decodeJSON(t, b.String()), "s_x")
	var se *schemarego.Error
	if !errors.As(err, &se) || se.Keyword != "$size" {
		t.Fatalf("want a $size error, got %v", err)
	}
}
