package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/jsonptr"
	"gopkg.in/yaml.v3"
)

// rules reads a list of argument rules.
func (p *fileParser) rules(n *yaml.Node, path, server string) []*ruleDef {
	var out []*ruleDef
	for ip, c := range p.items(n, path, "a list of argument rules") {
		if r := p.rule(c, ip, server); r != nil {
			out = append(out, r)
		}
	}
	return out
}

func (p *fileParser) rule(n *yaml.Node, path, server string) *ruleDef {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errAt(n, path, "want an argument rule (a mapping with id, tools and schema), got %s", kindName(n))
		return nil
	}
	before := len(p.c.errs)
	r := &ruleDef{server: server, at: p.at(n, path), argument: []string{}}
	var toolsNode, schemaNode *yaml.Node
	for _, e := range p.entries(n, path) {
		kp := join(path, e.key)
		v := deref(e.value)
		switch e.key {
		case "id":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || v.Value == "" {
				p.errAt(v, kp, "want a rule id (a non-empty string), got %s", kindName(v))
				continue
			}
			r.id = v.Value
		case "description":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				p.errAt(v, kp, "want a string, got %s", kindName(v))
				continue
			}
			r.description = v.Value
		case "tools":
			toolsNode = v
			r.tools = p.patterns(v, kp)
		case "argument":
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				p.errAt(v, kp, "want an argument name or a JSON Pointer such as /options/force, got %s", kindName(v))
				continue
			}
			arg, err := parseArgument(v.Value)
			if err != nil {
				p.errAt(v, kp, "%v", err)
				continue
			}
			r.argument = arg
		case "required":
			if s := p.boolean(v, kp); s != nil {
				r.required = s.value == "true"
			}
		case "schema":
			schemaNode = e.kNode
			r.schemaAt = p.at(e.kNode, kp)
			r.schemaNode = v
			if p.schemaTooDeep(v, kp) {
				continue
			}
			s, bad, err := toJSON(v)
			if err != nil {
				p.errAt(bad, kp, "%v", err)
				continue
			}
			switch s.(type) {
			case map[string]any, bool:
				r.schema = s
			default:
				p.errAt(v, kp, "want a JSON Schema (a mapping or a boolean), got %s", kindName(v))
			}
		case "examples":
			r.examples = p.examples(e.value, kp)
		default:
			p.unknownKey(e, path, ruleKeys)
		}
	}
	name := "argument rule"
	if r.id != "" {
		name = fmt.Sprintf("argument rule %q", r.id)
	}
	if r.id == "" && !hasKey(n, "id") {
		p.errAt(n, path, "argument rule has no id (every rule needs a unique id)")
	}
	if toolsNode == nil || (toolsNode.Kind == yaml.SequenceNode && len(toolsNode.Content) == 0) || isNull(toolsNode) {
		p.errAt(n, path, "%s has no tools (want a list of tool patterns)", name)
	}
	if schemaNode == nil {
		p.errAt(n, path, "%s has no schema", name)
	}
	if len(r.argument) == 0 {
		for _, ex := range r.examples {
			if _, ok := ex.value.(map[string]any); !ok {
				p.c.add(ex.at.file, ex.at.line, ex.at.path, "%s has no argument, so each example is a whole arguments object (a mapping), got %s", name, exampleText(ex.value))
			}
		}
	}
	if len(p.c.errs) > before {
		return nil
	}
	return r
}

// examples reads a rule's examples: {valid: [...], invalid: [...]}, each
// a list of values (see ruleExample).
func (p *fileParser) examples(n *yaml.Node, path string) []ruleExample {
	var out []ruleExample
	for _, e := range p.mapping(n, path, "a mapping with keys valid and invalid") {
		kp := join(path, e.key)
		if e.key != "valid" && e.key != "invalid" {
			p.unknownKey(e, path, exampleKeys)
			continue
		}
		if isNull(e.value) {
			continue
		}
		list := deref(e.value)
		if list.Kind != yaml.SequenceNode {
			p.errAt(list, kp, "want a list of examples, got %s", kindName(list))
			continue
		}
		for i, c := range list.Content {
			ip := index(kp, i)
			if p.tooDeep(c, ip, "example", "a rule's example, as for its schema") {
				continue
			}
			v, bad, err := toJSON(c)
			if err != nil {
				p.errAt(bad, ip, "%v", err)
				continue
			}
			out = append(out, ruleExample{valid: e.key == "valid", value: v, at: p.at(deref(c), ip)})
		}
	}
	return out
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if deref(m.Content[i]).Value == key {
			return true
		}
	}
	return false
}

// MaxPointerIndexes caps the tokens of digits in one rule's argument
// pointer (after the first, which names an argument). Each of them reads as an array index or as an object key,
// whichever the arguments hold there, so a pointer with k of them has 2^k
// readings, each tried on every call the rule applies to.
const MaxPointerIndexes = 4

// indexToken matches an RFC 6901 array index: digits without leading zeros.
var indexToken = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// parseArgument turns a rule's argument into a key path: a plain name is
// one key; a JSON Pointer (RFC 6901) starts with / and unescapes ~1 to /
// and ~0 to ~. "-" (the element after an array's last) names no value and
// is refused.
func parseArgument(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("empty argument (want a name or a JSON Pointer such as /options/force)")
	}
	if !strings.HasPrefix(s, "/") {
		return []string{s}, nil
	}
	parts := strings.Split(s[1:], "/")
	indexes := 0
	for i, part := range parts {
		for j := 0; j < len(part); j++ {
			if part[j] == '~' && (j+1 >= len(part) || (part[j+1] != '0' && part[j+1] != '1')) {
				return nil, fmt.Errorf("bad JSON Pointer %q: ~ must be followed by 0 or 1 (~0 is ~, ~1 is /)", s)
			}
		}
		if part == "-" {
			return nil, fmt.Errorf("bad JSON Pointer %q: - names the element after an array's last, which no argument has (write an index such as 0)", s)
		}
		if i > 0 && indexToken.MatchString(part) {
			indexes++
		}
		parts[i] = jsonptr.Unescape(part)
	}
	if indexes > MaxPointerIndexes {
		return nil, fmt.Errorf("JSON Pointer %q has %d array indexes, more than the limit of %d", s, indexes, MaxPointerIndexes)
	}
	return parts, nil
}

// readings lists the key paths an argument pointer may stand for, for
// object.get in Rego: a token of digits after the first is an array index
// (a number) or an object key (a string), as the arguments' value at that
// point is an array or an object; other tokens are keys, and so is the
// first (the arguments are an object). JSON objects have only string keys
// and arrays only number indexes, so at most one reading finds a value.
func readings(keys []string) []any {
	paths := [][]any{{}}
	for i, k := range keys {
		next := make([][]any, 0, 2*len(paths))
		for _, p := range paths {
			next = append(next, append(append([]any{}, p...), k))
			if i > 0 && indexToken.MatchString(k) {
				next = append(next, append(append([]any{}, p...), json.Number(k)))
			}
		}
		paths = next
	}
	out := make([]any, len(paths))
	for i, p := range paths {
		out[i] = p
	}
	return out
}
