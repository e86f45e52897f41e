package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/jsonptr"
)

// jsonText renders v as compact JSON without HTML escaping, for text.
func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// JSON encodes v the way the goldens and docs show renderings: indented two
// spaces, no HTML escaping, with a trailing newline.
func JSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// hiddenMessage is the HiddenTool text of rego/mcpx/steps/hidden.rego:
// mcpx's HiddenTool error, naming this config's key (hiddenTools).
func hiddenMessage(server, tool string) string {
	return fmt.Sprintf("tool %q on %q is hidden by its hiddenTools configuration", tool, server)
}

// callName is "server.tool".
func callName(c decision.CallRef) string { return c.Server + "." + c.Tool }

// accepts says in words what a failed constraint accepts.
func accepts(v decision.Violation) string {
	e := jsonText(v.Expected)
	switch v.Constraint {
	case "type":
		return "must be of type " + e
	case "enum":
		return "must be one of " + e
	case "const":
		return "must equal " + e
	case "pattern":
		return "must match the regular expression " + e
	case "minLength":
		return "must be at least " + e + " characters long"
	case "maxLength":
		return "must be at most " + e + " characters long"
	case "minimum":
		return "must be ≥ " + e
	case "maximum":
		return "must be ≤ " + e
	case "exclusiveMinimum":
		return "must be > " + e
	case "exclusiveMaximum":
		return "must be < " + e
	case "multipleOf":
		return "must be a multiple of " + e
	case "required":
		return "must include " + e
	case "additionalProperties", "unevaluatedProperties", "false":
		return "must not be present"
	case "minItems":
		return "must have at least " + e + " items"
	case "maxItems":
		return "must have at most " + e + " items"
	case "uniqueItems":
		return "must not repeat an item"
	case "minProperties":
		return "must have at least " + e + " properties"
	case "maxProperties":
		return "must have at most " + e + " properties"
	case "not":
		return "must not match the schema " + e
	case "anyOf":
		return "must match at least one of its alternatives"
	case "oneOf":
		return "must match exactly one of its alternatives"
	case "propertyNames":
		return "must have property names matching " + e
	case "dependentRequired":
		return "must include the properties it depends on " + e
	case "pathWithin":
		return "must be a path inside " + e
	case "urlWithin":
		return "must be a URL allowed by " + e
	default:
		return "must satisfy " + v.Constraint + " " + e
	}
}

// violationLine is one violation on one line: where, what, what is accepted
// and which rule says so.
func violationLine(v decision.Violation) string {
	path := v.Path
	if path == "" {
		path = "(arguments)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s is %s; it %s", path, jsonText(v.Value), accepts(v))
	if v.Detail != "" {
		fmt.Fprintf(&b, " (%s)", v.Detail)
	}
	if v.Rule.ID != "" || v.Rule.Origin != "" {
		b.WriteString(" — rule ")
		b.WriteString(v.Rule.ID)
		if v.Rule.Origin != "" {
			fmt.Fprintf(&b, " at %s", v.Rule.Origin)
		}
		if v.Rule.Description != "" {
			fmt.Fprintf(&b, ": %s", v.Rule.Description)
		}
	}
	return b.String()
}

// stringsIn reads a list of strings from the first of keys present in
// details ([]string or []any of strings).
func stringsIn(details map[string]any, keys ...string) []string {
	for _, k := range keys {
		switch t := details[k].(type) {
		case []string:
			return t
		case []any:
			out := make([]string, 0, len(t))
			for _, e := range t {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return nil
}

// stringIn reads a string from the first of keys present in details.
func stringIn(details map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := details[k].(string); ok {
			return s
		}
	}
	return ""
}

// unknownArgs reads the unknown keys of an UnknownArguments or
// IgnoredArguments reason, as the unknown-args step reports them in
// details: "unknown" is a list of {"path", "key", "suggestion"} (or of
// plain key strings), "more" counts the keys not listed. A top-level key is
// named by itself, a nested one by its JSON Pointer. It returns the names,
// the suggestions as "`name` → `suggestion`", and the count not listed.
func unknownArgs(details map[string]any) (names, suggestions []string, more int) {
	list, _ := details["unknown"].([]any)
	if list == nil {
		if ss := stringsIn(details, "unknown", "ignored", "keys"); ss != nil {
			for _, s := range ss {
				list = append(list, s)
			}
		}
	}
	for _, e := range list {
		switch u := e.(type) {
		case string:
			names = append(names, u)
		case map[string]any:
			key, _ := u["key"].(string)
			path, _ := u["path"].(string)
			name := key
			if path != "" && path != jsonptr.Append("", key) {
				name = path
			}
			if name == "" {
				continue
			}
			names = append(names, name)
			if s, ok := u["suggestion"].(string); ok && s != "" {
				suggestions = append(suggestions, fmt.Sprintf("`%s` → `%s`", name, s))
			}
		}
	}
	switch n := details["more"].(type) {
	case int:
		more = n
	case float64:
		more = int(n)
	case json.Number:
		i, _ := n.Int64()
		more = int(i)
	}
	return names, suggestions, more
}

// askCodes lists the codes of the ask reasons of d.
func askReasons(d decision.Decision) []decision.Reason {
	var out []decision.Reason
	for _, r := range d.Reasons {
		if r.Code.Info().Outcome == decision.Ask {
			out = append(out, r)
		}
	}
	return out
}
