package config

import (
	"encoding/json"
	"fmt"
	"iter"
	"math/big"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// deref follows YAML aliases to the anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// items yields the items of the list n at path, each with its path and
// aliases followed: none when n is null, and none but the error "want
// <want>, got …" when n is not a list.
func (p *fileParser) items(n *yaml.Node, path, want string) iter.Seq2[string, *yaml.Node] {
	return func(yield func(string, *yaml.Node) bool) {
		if isNull(n) {
			return
		}
		d := deref(n)
		if d.Kind != yaml.SequenceNode {
			p.errAt(d, path, "want %s, got %s", want, kindName(d))
			return
		}
		for i, c := range d.Content {
			if !yield(index(path, i), deref(c)) {
				return
			}
		}
	}
}

// knownEntries is the entries of the mapping c at path whose keys are in
// keys; every other key is reported (unknownKey), and known is false then.
func (p *fileParser) knownEntries(c *yaml.Node, path string, keys []string) (out []keyValue, known bool) {
	known = true
	for _, e := range p.entries(c, path) {
		if !slices.Contains(keys, e.key) {
			p.unknownKey(e, path, keys)
			known = false
			continue
		}
		out = append(out, e)
	}
	return out, known
}

// kindName names what a node holds, for "want X, got Y" messages.
func kindName(n *yaml.Node) string {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean (" + n.Value + ")"
		case "!!int", "!!float":
			return "a number (" + n.Value + ")"
		default:
			return fmt.Sprintf("a string (%q)", n.Value)
		}
	}
	return "nothing"
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// keyValue is one entry of a YAML mapping.
type keyValue struct {
	key   string
	kNode *yaml.Node
	value *yaml.Node
}

// entries lists a mapping's entries and reports duplicate keys and keys
// that are not scalars.
func (p *fileParser) entries(n *yaml.Node, path string) []keyValue {
	n = deref(n)
	seen := map[string]int{}
	var out []keyValue
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			p.errAt(k, path, "a mapping key must be a plain scalar, got %s", kindName(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			p.errAt(k, path, "YAML merge keys (<<) are not supported")
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.errAt(k, join(path, k.Value), "duplicate key %q (first at line %d)", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, keyValue{key: k.Value, kNode: k, value: v})
	}
	return out
}

// jsonNumber matches the JSON number grammar.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

var leadingZero = regexp.MustCompile(`^[-+]?0[0-9]+$`)

// numberText turns a YAML number's text into JSON number text without
// changing its value: the decimal digits are kept as written so that large
// integers and decimals stay exact.
func numberText(tag, s string) (json.Number, error) {
	if jsonNumber.MatchString(s) {
		return json.Number(s), nil
	}
	t := strings.ReplaceAll(s, "_", "")
	if tag == "!!int" && leadingZero.MatchString(t) {
		return "", fmt.Errorf("%s is ambiguous (octal in YAML 1.1, decimal in YAML 1.2): write it without the leading 0, or as 0o%s for octal", s, strings.TrimLeft(strings.TrimLeft(t, "+-"), "0"))
	}
	if tag == "!!int" {
		var z big.Int
		if _, ok := z.SetString(t, 0); ok {
			return json.Number(z.String()), nil
		}
	}
	neg := strings.HasPrefix(t, "-")
	t = strings.TrimLeft(t, "+-")
	if strings.HasPrefix(t, ".") {
		t = "0" + t
	}
	t = strings.Replace(t, ".e", ".0e", 1)
	t = strings.Replace(t, ".E", ".0E", 1)
	if strings.HasSuffix(t, ".") {
		t += "0"
	}
	// Leading zeros of the integer part are not JSON.
	for len(t) > 1 && t[0] == '0' && t[1] >= '0' && t[1] <= '9' {
		t = t[1:]
	}
	if neg {
		t = "-" + t
	}
	if jsonNumber.MatchString(t) {
		return json.Number(t), nil
	}
	return "", fmt.Errorf("%s is not a JSON number", s)
}

// toJSON converts a YAML node to a JSON-compatible Go value: map[string]any,
// []any, string, bool, nil and json.Number (from the scalar's text, so no
// precision is lost). It returns the node that could not be converted.
func toJSON(n *yaml.Node) (any, *yaml.Node, error) {
	n = deref(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := deref(n.Content[i])
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return nil, k, fmt.Errorf("a schema key must be a plain scalar")
			}
			if _, dup := m[k.Value]; dup {
				return nil, k, fmt.Errorf("duplicate key %q", k.Value)
			}
			v, bad, err := toJSON(n.Content[i+1])
			if err != nil {
				return nil, bad, err
			}
			m[k.Value] = v
		}
		return m, nil, nil
	case yaml.SequenceNode:
		a := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, bad, err := toJSON(c)
			if err != nil {
				return nil, bad, err
			}
			a = append(a, v)
		}
		return a, nil, nil
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!null":
			return nil, nil, nil
		case "!!bool":
			return strings.EqualFold(n.Value, "true"), nil, nil
		case "!!int", "!!float":
			num, err := numberText(tag, n.Value)
			if err != nil {
				return nil, n, err
			}
			return num, nil, nil
		case "!!str", "!!timestamp", "!!binary":
			return n.Value, nil, nil
		default:
			return nil, n, fmt.Errorf("unsupported YAML tag %s", tag)
		}
	}
	return nil, n, fmt.Errorf("empty YAML node")
}

// join appends a key to a dotted config path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

// idOrDescription reads a budget's or a flow rule's id (a non-empty
// string; at becomes its place) or description (a string) into id, at or
// description. handled is false for another key; good is false, the error
// reported, when the value is not what the key needs.
func (p *fileParser) idOrDescription(key string, v *yaml.Node, kp, ip string, id *string, at *origin, description *string) (handled, good bool) {
	switch key {
	case "id":
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || v.Value == "" {
			p.errAt(v, kp, "want a non-empty string id")
			return true, false
		}
		*id, *at = v.Value, p.at(v, ip)
	case "description":
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
			p.errAt(v, kp, "want a string")
			return true, false
		}
		*description = v.Value
	default:
		return false, true
	}
	return true, true
}
