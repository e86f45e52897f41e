package config

import (
	"errors"
	"strconv"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/jsonptr"
	"gopkg.in/yaml.v3"
)

// schemaPointerError is an error of the schema compiler that knows where in
// the schema it is: SchemaPointer returns a JSON Pointer into the schema
// document (schemarego.Error does).
type schemaPointerError interface {
	error
	SchemaPointer() string
}

// schemaErrorLine is the line an error of r's schema is reported at: the
// line of the YAML node its JSON Pointer names (the key line of a mapping
// entry, so a bad pattern is reported at its `pattern:`), or, when the
// error names no place or the place cannot be found, the rule's `schema:`
// line.
func schemaErrorLine(r *ruleDef, err error) int {
	var pe schemaPointerError
	if r.schemaNode == nil || !errors.As(err, &pe) {
		return r.schemaAt.line
	}
	if line := pointerLine(r.schemaNode, pe.SchemaPointer()); line > 0 {
		return line
	}
	return r.schemaAt.line
}

// pointerLine follows the JSON Pointer ptr (RFC 6901) down from n, through
// aliases, and returns the line of the deepest node it reaches below n: for
// a mapping entry the line of its key. It returns 0 when ptr is not a
// pointer or names n itself, or when its first token is not found.
func pointerLine(n *yaml.Node, ptr string) int {
	if !strings.HasPrefix(ptr, "/") {
		return 0
	}
	line := 0
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = jsonptr.Unescape(tok)
		n = deref(n)
		var next, at *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if k := deref(n.Content[i]); k.Value == tok {
					at, next = k, n.Content[i+1]
					break
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) && tok == strconv.Itoa(i) {
				next = n.Content[i]
				at = deref(next)
			}
		}
		if next == nil {
			return line
		}
		line = at.Line
		n = next
	}
	return line
}
