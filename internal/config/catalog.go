package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/mcpx/mcpx-policy/internal/jsonptr"
)

// Catalog is the tools each server offers, as tools/list returned them. A
// Catalog is read-only once built and safe to share.
type Catalog struct {
	servers map[string]*catalogServer
}

type catalogServer struct {
	names  []string
	raw    map[string]json.RawMessage
	schema map[string]map[string]any // tool -> decoded inputSchema (nil when absent)
}

// LoadCatalog reads a catalog file {"servers": {"fs": {"tools": [<MCP
// Tool>, …]}}} of at most MaxCatalogSize bytes. Errors are ConfigErrors
// naming the file.
func LoadCatalog(path string) (*Catalog, error) {
	b, line, err := readFileLimited(path, MaxCatalogSize)
	if err != nil {
		return nil, ConfigErrors{{File: path, Msg: fmt.Sprintf("cannot read catalog: %v", unwrapPathError(err))}}
	}
	if line > 0 {
		return nil, ConfigErrors{{File: path, Line: line, Msg: fmt.Sprintf("catalog is larger than the limit of %d bytes (32 MiB); this line goes past it", MaxCatalogSize)}}
	}
	cat, err := ParseCatalog(b)
	if err != nil {
		if ces, ok := err.(ConfigErrors); ok {
			for _, e := range ces {
				e.File = path
			}
			return nil, ces
		}
		return nil, err
	}
	return cat, nil
}

// ParseCatalog parses catalog JSON (see LoadCatalog). Every tool needs a
// non-empty string name, unique within its server; everything else of the
// tool is kept as written.
func ParseCatalog(data []byte) (*Catalog, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, ConfigErrors{{Line: jsonErrorLine(data, err), Msg: fmt.Sprintf("invalid catalog JSON: %v", err)}}
	}
	var es ConfigErrors
	for k := range doc {
		if k != "servers" {
			es = append(es, &ConfigError{Path: k, Msg: `unknown key (a catalog is {"servers": {"<name>": {"tools": [...]}}})`})
		}
	}
	var servers map[string]struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if raw, ok := doc["servers"]; !ok {
		es = append(es, &ConfigError{Msg: `catalog has no "servers" object`})
	} else if err := json.Unmarshal(raw, &servers); err != nil {
		es = append(es, &ConfigError{Path: "servers", Msg: fmt.Sprintf("want {\"<name>\": {\"tools\": [...]}}: %v", err)})
	}
	if len(es) > 0 {
		return nil, es
	}
	tools := make(map[string][]json.RawMessage, len(servers))
	for name, s := range servers {
		tools[name] = s.Tools
	}
	return NewCatalog(tools)
}

// NewCatalog builds a catalog from each server's tools as tools/list
// returned them (the proxy builds one from its live tool list).
func NewCatalog(tools map[string][]json.RawMessage) (*Catalog, error) {
	cat := &Catalog{servers: map[string]*catalogServer{}}
	var es ConfigErrors
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, server := range names {
		cs := &catalogServer{raw: map[string]json.RawMessage{}, schema: map[string]map[string]any{}}
		cat.servers[server] = cs
		for i, raw := range tools[server] {
			path := fmt.Sprintf("servers.%s.tools[%d]", server, i)
			var t struct {
				Name        *string         `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			}
			if err := json.Unmarshal(raw, &t); err != nil {
				es = append(es, &ConfigError{Path: path, Msg: fmt.Sprintf("want an MCP Tool object: %v", err)})
				continue
			}
			if t.Name == nil || *t.Name == "" {
				es = append(es, &ConfigError{Path: path, Msg: "tool has no name"})
				continue
			}
			if _, dup := cs.raw[*t.Name]; dup {
				es = append(es, &ConfigError{Path: path, Msg: fmt.Sprintf("duplicate tool %q", *t.Name)})
				continue
			}
			var schema map[string]any
			if len(t.InputSchema) > 0 && string(t.InputSchema) != "null" {
				dec := json.NewDecoder(bytes.NewReader(t.InputSchema))
				dec.UseNumber()
				if err := dec.Decode(&schema); err != nil {
					es = append(es, &ConfigError{Path: path + ".inputSchema", Msg: fmt.Sprintf("want a JSON Schema object: %v", err)})
					continue
				}
			}
			cs.names = append(cs.names, *t.Name)
			cs.raw[*t.Name] = append(json.RawMessage(nil), raw...)
			cs.schema[*t.Name] = schema
		}
	}
	if len(es) > 0 {
		return nil, es
	}
	return cat, nil
}

// Servers lists the catalog's servers in lexical order.
func (c *Catalog) Servers() []string {
	out := make([]string, 0, len(c.servers))
	for s := range c.servers {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Tools lists a server's tool names in catalog order (nil for an unknown
// server).
func (c *Catalog) Tools(server string) []string {
	if s, ok := c.servers[server]; ok {
		return slices.Clone(s.names)
	}
	return nil
}

// Tool returns the tool's JSON exactly as the catalog holds it, ready to
// unmarshal into a decision.Tool.
func (c *Catalog) Tool(server, name string) (json.RawMessage, bool) {
	s, ok := c.servers[server]
	if !ok {
		return nil, false
	}
	raw, ok := s.raw[name]
	return raw, ok
}

func jsonErrorLine(data []byte, err error) int {
	var off int64
	switch e := err.(type) {
	case *json.SyntaxError:
		off = e.Offset
	case *json.UnmarshalTypeError:
		off = e.Offset
	default:
		return 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// CheckCatalog compares the compiled configuration with a tool catalog and
// returns warnings: a rule's, hidden or write pattern that matches no tool
// of its server (for the pool: of any server), and a rule property the
// matched tool's inputSchema does not declare (the schema's top-level
// properties for a whole-arguments rule, the argument path for a
// per-argument rule). Servers the catalog does not list are skipped, so a
// proxy's catalog of one server checks that server only. The proxy calls
// it again when the tool list changes. It does not modify c or cat.
func CheckCatalog(c *Compiled, cat *Catalog) []Warning {
	if c == nil || cat == nil || len(cat.servers) == 0 {
		return nil
	}
	var ws []Warning
	warn := func(at origin, format string, args ...any) {
		ws = append(ws, Warning{File: at.file, Line: at.line, Path: at.path, Msg: fmt.Sprintf(format, args...)})
	}
	type tool struct{ server, name string }
	match := func(p Pattern, servers []string) []tool {
		var out []tool
		for _, s := range servers {
			for _, n := range cat.servers[s].names {
				if p.Match(n) {
					out = append(out, tool{s, n})
				}
			}
		}
		return out
	}
	check := func(sc *scope, servers []string, where string) {
		for _, group := range [][]patRef{sc.hidden, sc.writeTools} {
			for _, p := range group {
				if len(match(p.pat, servers)) == 0 {
					warn(p.at, "tool pattern %q matches no tool of %s in the catalog", p.pat.Source, where)
				}
			}
		}
		for _, l := range sc.labels {
			for _, p := range l.tools {
				if len(match(p.pat, servers)) == 0 {
					warn(p.at, "label %q: tool pattern %q matches no tool of %s in the catalog", l.label, p.pat.Source, where)
				}
			}
		}
		for _, r := range sc.rules {
			var tools []tool
			for _, p := range r.tools {
				m := match(p.pat, servers)
				if len(m) == 0 {
					warn(p.at, "rule %q: tool pattern %q matches no tool of %s in the catalog", r.id, p.pat.Source, where)
				}
				for _, t := range m {
					if !slices.Contains(tools, t) {
						tools = append(tools, t)
					}
				}
			}
			for _, t := range tools {
				for _, prop := range undeclared(r, cat.servers[t.server].schema[t.name]) {
					warn(r.schemaAt, "rule %q: property %s is not declared by the inputSchema of %s.%s", r.id, prop, t.server, t.name)
				}
			}
		}
	}
	check(&c.sum.pool, cat.Servers(), "any server")
	for _, s := range c.sum.servers {
		if _, ok := cat.servers[s.name]; ok {
			check(&s.scope, []string{s.name}, "server "+s.name)
		}
	}
	return ws
}

// undeclared lists the properties a rule refers to that the tool's
// inputSchema does not declare, as quoted JSON Pointers. A tool schema
// without "properties" declares nothing to compare with and yields none.
func undeclared(r *ruleDef, input map[string]any) []string {
	if input == nil {
		return nil
	}
	if len(r.argument) > 0 {
		cur := input
		for i, seg := range r.argument {
			// A token of digits into a schema of an array is an index: its
			// element's schema is prefixItems[i], else items.
			if next := itemSchema(cur, seg); next != nil {
				cur = next
				continue
			}
			props, ok := cur["properties"].(map[string]any)
			if !ok {
				return nil
			}
			next, ok := props[seg]
			if !ok {
				return []string{fmt.Sprintf("%q", pointer(r.argument[:i+1]))}
			}
			if cur, ok = next.(map[string]any); !ok {
				return nil
			}
		}
		return nil
	}
	schema, ok := r.schema.(map[string]any)
	if !ok {
		return nil
	}
	ruleProps, ok := schema["properties"].(map[string]any)
	if !ok {
		return nil
	}
	toolProps, ok := input["properties"].(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for k := range ruleProps {
		if _, ok := toolProps[k]; !ok {
			out = append(out, fmt.Sprintf("%q", pointer([]string{k})))
		}
	}
	sort.Strings(out)
	return out
}

// itemSchema is the schema an array schema gives the element at index
// seg (prefixItems, else items), or nil when seg is no index or the schema
// says nothing of arrays.
func itemSchema(schema map[string]any, seg string) map[string]any {
	if !indexToken.MatchString(seg) {
		return nil
	}
	if prefix, ok := schema["prefixItems"].([]any); ok {
		if i, err := strconv.Atoi(seg); err == nil && i < len(prefix) {
			if s, ok := prefix[i].(map[string]any); ok {
				return s
			}
		}
	}
	if s, ok := schema["items"].(map[string]any); ok {
		return s
	}
	return nil
}

// pointer renders a key path as a JSON Pointer.
func pointer(keys []string) string { return jsonptr.Join(keys...) }
