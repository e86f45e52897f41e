package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// Publishing the argument rules (proxy --publish-rules,
// docs/proxy.md#publishing-the-rules): the rules that apply to a tool are
// added to the inputSchema tools/list hands the client, so an agent learns
// a constraint before a call is refused. Only the client's copy changes;
// the proxy decides with, and pins, the server's own definition.

// indexToken is a JSON Pointer token that may be an array index.
var indexToken = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// leftOut is a rule publishRules could not place, and why.
type leftOut struct{ rule, why string }

// publishRules returns the tool (raw JSON, as listed) with rules added to
// its inputSchema, every other field as sent:
//   - a rule on the whole arguments becomes an entry of the schema's allOf;
//   - a per-argument rule goes into the allOf of its property's schema
//     when the inputSchema declares the argument's path through nested
//     properties, else into the schema's allOf as nested properties;
//   - required: true adds the argument's path to required (objects on the
//     way).
//
// Each placed schema is wrapped as {"description": "mcpx-policy rule ID:
// …", "allOf": [schema]}, without the rule's $schema. A rule is left out
// (and named in left) when it cannot be placed exactly: its argument
// pointer may go through an array (a token of digits after the first), its
// schema holds a $ref or $dynamicRef (which would resolve against the
// tool's schema, not the rule's), or the place it goes is not a schema
// object or an allOf list. A tool whose inputSchema is not an object is
// returned as it is, every rule left out.
func publishRules(raw json.RawMessage, rules []mcpxpolicy.ArgumentRule) (json.RawMessage, []leftOut, error) {
	var tool map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tool); err != nil {
		return nil, nil, err
	}
	var schema map[string]any
	if in, ok := tool["inputSchema"]; ok {
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		if err := dec.Decode(&schema); err != nil || schema == nil {
			schema = nil
		}
	}
	var left []leftOut
	if schema == nil {
		for _, r := range rules {
			left = append(left, leftOut{r.ID, "the tool's inputSchema is not an object"})
		}
		return raw, left, nil
	}
	placed := 0
	for _, r := range rules {
		if err := place(schema, r); err != nil {
			left = append(left, leftOut{r.ID, err.Error()})
			continue
		}
		placed++
	}
	if placed == 0 {
		return raw, left, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, nil, err
	}
	tool["inputSchema"] = b
	out, err := json.Marshal(tool)
	return out, left, err
}

// place adds rule r to schema (see publishRules), or says why it cannot.
func place(schema map[string]any, r mcpxpolicy.ArgumentRule) error {
	for i, k := range r.Argument {
		if i > 0 && indexToken.MatchString(k) {
			return fmt.Errorf("its argument pointer may go through an array (token %q)", k)
		}
	}
	s, err := copyJSON(r.Schema)
	if err != nil {
		return err
	}
	if hasRef(s) {
		return errors.New("its schema holds a $ref, which would not resolve in the tool's schema")
	}
	if m, ok := s.(map[string]any); ok {
		delete(m, "$schema")
	}
	desc := "mcpx-policy rule " + r.ID
	if r.Description != "" {
		desc += ": " + r.Description
	}
	wrapped := map[string]any{"description": desc, "allOf": []any{s}}
	if len(r.Argument) == 0 {
		return addAllOf(schema, wrapped)
	}
	// The property's own schema, when every step of the path is declared.
	node, declared := schema, true
	for i, k := range r.Argument {
		props, ok := node["properties"].(map[string]any)
		if !ok {
			declared = false
			break
		}
		sub, ok := props[k]
		if !ok {
			declared = false
			break
		}
		if i == len(r.Argument)-1 {
			if b, ok := sub.(bool); ok {
				if b {
					props[k] = map[string]any{"allOf": []any{wrapped}}
				}
				break
			}
			m, ok := sub.(map[string]any)
			if !ok {
				return fmt.Errorf("the schema of argument %q is not a schema object", k)
			}
			if err := addAllOf(m, wrapped); err != nil {
				return err
			}
			break
		}
		m, ok := sub.(map[string]any)
		if !ok {
			declared = false
			break
		}
		node = m
	}
	if !declared {
		if err := addAllOf(schema, nested(r.Argument, wrapped)); err != nil {
			return err
		}
	}
	if r.Required {
		return addAllOf(schema, requiredPath(r.Argument))
	}
	return nil
}

// addAllOf appends s to schema's allOf, making one if there is none.
func addAllOf(schema map[string]any, s any) error {
	switch all := schema["allOf"].(type) {
	case nil:
		if _, ok := schema["allOf"]; ok {
			return errors.New("the schema's allOf is not a list")
		}
		schema["allOf"] = []any{s}
	case []any:
		schema["allOf"] = append(all, s)
	default:
		return errors.New("the schema's allOf is not a list")
	}
	return nil
}

// nested is {"properties": {k1: {"properties": {k2: … s}}}}.
func nested(path []string, s any) map[string]any {
	if len(path) == 1 {
		return map[string]any{"properties": map[string]any{path[0]: s}}
	}
	return map[string]any{"properties": map[string]any{path[0]: nested(path[1:], s)}}
}

// requiredPath requires every key of path, each parent an object.
func requiredPath(path []string) map[string]any {
	s := map[string]any{"required": []any{path[0]}}
	if len(path) > 1 {
		inner := requiredPath(path[1:])
		inner["type"] = "object"
		s["properties"] = map[string]any{path[0]: inner}
	}
	return s
}

// hasRef reports whether a schema holds a $ref or $dynamicRef with a
// string value anywhere (a const or enum that spells one counts too: left
// out, never placed wrong).
func hasRef(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, sub := range x {
			if k == "$ref" || k == "$dynamicRef" {
				if _, ok := sub.(string); ok {
					return true
				}
			}
			if hasRef(sub) {
				return true
			}
		}
	case []any:
		for _, sub := range x {
			if hasRef(sub) {
				return true
			}
		}
	}
	return false
}

// copyJSON deep-copies a JSON value, numbers kept as json.Number.
func copyJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}
