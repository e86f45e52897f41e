package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// formatWarnings are the warnings of rule r's schema for each "format" it
// uses: in JSON Schema 2020-12 format is an annotation, so the generated
// code never checks it, and a rule that counts on it (format: email,
// date-time, uri) passes whatever value comes. The schema is walked where
// subschemas stand (properties, items, allOf, $defs…), so a property
// named "format" is not taken for the keyword.
func formatWarnings(r *ruleDef) []Warning {
	var out []Warning
	for _, ptr := range formatPointers(r.schema, "") {
		line := r.schemaAt.line
		if r.schemaNode != nil {
			if l := pointerLine(r.schemaNode, ptr); l > 0 {
				line = l
			}
		}
		out = append(out, Warning{File: r.schemaAt.file, Line: line, Path: r.schemaAt.path,
			Msg: fmt.Sprintf("rule %q: format at %s is never checked (an annotation in JSON Schema 2020-12): the rule accepts any value it would not; constrain it with pattern, enum or const", r.id, ptr)})
	}
	return out
}

// Keywords whose value is a schema, an array of schemas, or an object of
// schemas (JSON Schema 2020-12, and draft-07's definitions).
var (
	schemaKeywords     = []string{"additionalProperties", "items", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "additionalItems"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
)

// formatPointers lists the JSON Pointers, below at, of the "format"
// keywords of schema.
func formatPointers(schema any, at string) []string {
	m, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	if _, ok := m["format"].(string); ok {
		out = append(out, at+"/format")
	}
	for _, k := range schemaKeywords {
		if s, ok := m[k]; ok {
			out = append(out, formatPointers(s, at+"/"+escapeToken(k))...)
		}
	}
	for _, k := range schemaListKeywords {
		if l, ok := m[k].([]any); ok {
			for i, s := range l {
				out = append(out, formatPointers(s, at+"/"+k+"/"+strconv.Itoa(i))...)
			}
		}
	}
	for _, k := range schemaMapKeywords {
		if o, ok := m[k].(map[string]any); ok {
			names := make([]string, 0, len(o))
			for n := range o {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				out = append(out, formatPointers(o[n], at+"/"+escapeToken(k)+"/"+escapeToken(n))...)
			}
		}
	}
	return out
}

// escapeToken escapes a JSON Pointer token (RFC 6901).
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
