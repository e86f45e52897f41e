package config

import (
	"regexp"
	"slices"
	"sort"

	"gopkg.in/yaml.v3"
)

// Data-flow rules (docs/configuration.md#labels-and-flows): tools carry
// labels the operator assigns (labels), a session remembers the labels of
// the calls it was let make, and a flow rule asks for or denies a call to a
// tool carrying one of its labels once the session has touched every label
// of its after list. Every layer adds labels and rules and none can remove
// one, so both lists tighten only; the policy step is
// rego/mcpx/steps/flow.rego (docs/decisions/0029-data-flow-rules.md).

// labelName is what a label may be called: a lowercase word and dashes.
var labelName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// MaxLabels bounds how many distinct labels a config may name, and so
// how many a session can remember.
const MaxLabels = 64

var (
	labelKeys = []string{"label", "tools", "openWorld"}
	flowKeys  = []string{"id", "description", "after", "calls", "then"}
)

// labelDef is one labels entry as a layer wrote it: a label given to the
// tools its patterns match, and (openWorld) to every tool whose
// openWorldHint is not false.
type labelDef struct {
	label     string   `dir:"part"`
	tools     []patRef `dir:"part"`
	openWorld bool     `dir:"part"`
	at        origin   `dir:"meta"`
}

// flowDef is one flow rule as a layer wrote it.
type flowDef struct {
	id          string   `dir:"part"`
	description string   `dir:"part"`
	after       []string `dir:"part"`
	calls       []string `dir:"part"`
	then        string   `dir:"part"` // ask or deny
	at          origin   `dir:"meta"`
}

// Flow is one data-flow rule of the compiled config (Compiled.Flows);
// data.mcpx.config.flows holds the same for the policy.
type Flow struct {
	// ID is the rule's id, unique across the config.
	ID string
	// Server is the server whose calls it judges; "" for a pool rule.
	Server string
	// After are the labels the session must have touched, every one.
	After []string
	// Calls are the labels of the calls it judges: a call to a tool
	// carrying any of them.
	Calls []string
	// Then is "ask" or "deny".
	Then string
	// Origin is file:line of its id.
	Origin string
}

// labels reads a scope's labels list.
func (p *fileParser) labels(n *yaml.Node, path string) []*labelDef {
	var out []*labelDef
	for ip, c := range p.items(n, path, "a list of labels ({label, tools})") {
		if c.Kind != yaml.MappingNode {
			p.errAt(c, ip, "want a label (a mapping with keys label and tools or openWorld), got %s", kindName(c))
			continue
		}
		l := &labelDef{at: p.at(c, ip)}
		ok := true
		entries, known := p.knownEntries(c, ip, labelKeys)
		ok = ok && known
		for _, e := range entries {
			kp := join(ip, e.key)
			v := deref(e.value)
			switch e.key {
			case "label":
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" || !labelName.MatchString(v.Value) {
					p.errAt(v, kp, "want a label name (lowercase letters, digits and dashes, starting with a letter, at most 63), got %s", scalarText(v))
					ok = false
					continue
				}
				l.label, l.at = v.Value, p.at(v, ip)
			case "tools":
				l.tools = p.patterns(e.value, kp)
				if len(l.tools) == 0 {
					p.errAt(v, kp, "want at least one tool pattern")
					ok = false
				}
			case "openWorld":
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" || v.Value != "true" {
					p.errAt(v, kp, "want true (leave it out for tools by pattern only), got %s", scalarText(v))
					ok = false
					continue
				}
				l.openWorld = true
			}
		}
		if !hasKey(c, "label") {
			p.errAt(c, ip, "a label entry needs label")
			ok = false
		}
		if !hasKey(c, "tools") && !hasKey(c, "openWorld") {
			p.errAt(c, ip, "a label entry needs tools, openWorld: true, or both")
			ok = false
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// flows reads a scope's flows list.
func (p *fileParser) flows(n *yaml.Node, path string) []*flowDef {
	var out []*flowDef
	for ip, c := range p.items(n, path, "a list of flow rules ({id, after, calls, then})") {
		if c.Kind != yaml.MappingNode {
			p.errAt(c, ip, "want a flow rule (a mapping with keys id, after, calls, then), got %s", kindName(c))
			continue
		}
		f := &flowDef{at: p.at(c, ip)}
		ok := true
		bad := func(n *yaml.Node, kp, format string, args ...any) {
			p.errAt(n, kp, format, args...)
			ok = false
		}
		entries, known := p.knownEntries(c, ip, flowKeys)
		ok = ok && known
		for _, e := range entries {
			kp := join(ip, e.key)
			v := deref(e.value)
			if handled, good := p.idOrDescription(e.key, v, kp, ip, &f.id, &f.at, &f.description); handled {
				ok = ok && good
				continue
			}
			switch e.key {
			case "after", "calls":
				ls, good := p.labelList(v, kp)
				if !good {
					ok = false
					continue
				}
				if e.key == "after" {
					f.after = ls
				} else {
					f.calls = ls
				}
			case "then":
				if v.Kind != yaml.ScalarNode || (v.Value != "ask" && v.Value != "deny") {
					bad(v, kp, "want ask or deny, got %s", scalarText(v))
					continue
				}
				f.then = v.Value
			}
		}
		for _, k := range []string{"id", "after", "calls", "then"} {
			if !hasKey(c, k) {
				bad(c, ip, "a flow rule needs %s", k)
			}
		}
		if ok {
			out = append(out, f)
		}
	}
	return out
}

// labelList reads a non-empty list of label names (a single name is a
// list of one), sorted and without duplicates.
func (p *fileParser) labelList(v *yaml.Node, kp string) ([]string, bool) {
	items := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		items = v.Content
	}
	if len(items) == 0 {
		p.errAt(v, kp, "want at least one label")
		return nil, false
	}
	var out []string
	for _, it := range items {
		it = deref(it)
		if it.Kind != yaml.ScalarNode || it.ShortTag() != "!!str" || !labelName.MatchString(it.Value) {
			p.errAt(it, kp, "want a label name (lowercase letters, digits and dashes, starting with a letter), got %s", scalarText(it))
			return nil, false
		}
		if !slices.Contains(out, it.Value) {
			out = append(out, it.Value)
		}
	}
	sort.Strings(out)
	return out, true
}

// compileFlows checks the labels and flow rules of every layer — rule
// ids unique, every label a rule names given to some tool, at most
// MaxLabels labels — and builds data.mcpx.config.flows and
// Compiled.Flows. The labels' pattern sets go in each scope's data
// (scopeData).
func (out *Compiled) compileFlows(sum *layer, c *collector) map[string]any {
	given := map[string]bool{}
	scopes := []*scope{&sum.pool}
	for _, s := range sum.servers {
		scopes = append(scopes, &s.scope)
	}
	for _, s := range scopes {
		for _, l := range s.labels {
			if !given[l.label] && len(given) == MaxLabels {
				c.add(l.at.file, l.at.line, l.at.path, "label %q is one too many: a config names at most %d labels", l.label, MaxLabels)
				continue
			}
			given[l.label] = true
		}
	}
	data := map[string]any{}
	first := map[string]*flowDef{}
	add := func(server string, f *flowDef) {
		if g, ok := first[f.id]; ok {
			c.add(f.at.file, f.at.line, f.at.path, "duplicate flow rule id %q (first defined at %s, %s); flow rule ids are unique across the whole config", f.id, g.at, g.at.path)
			return
		}
		first[f.id] = f
		for _, l := range append(slices.Clone(f.after), f.calls...) {
			if !given[l] {
				c.add(f.at.file, f.at.line, f.at.path, "flow rule %q names label %q, which no labels entry gives to any tool (a typo?)", f.id, l)
				return
			}
		}
		origin := out.origin(f.at)
		data[f.id] = map[string]any{
			"server": server, "after": strs(f.after), "calls": strs(f.calls), "then": f.then,
			"origin": origin, "description": f.description,
		}
		out.Flows = append(out.Flows, Flow{ID: f.id, Server: server, After: f.after, Calls: f.calls, Then: f.then, Origin: origin})
	}
	for _, f := range sum.pool.flows {
		add("", f)
	}
	for _, s := range sum.servers {
		for _, f := range s.flows {
			add(s.name, f)
		}
	}
	sort.SliceStable(out.Flows, func(i, j int) bool { return out.Flows[i].ID < out.Flows[j].ID })
	return data
}

func strs(xs []string) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// labelData is a scope's labels for the policy: the pattern set from
// tool patterns to labels, and the labels every open-world tool carries.
func labelData(s *scope) map[string]any {
	ps := newPatternSet()
	open := []any{}
	for _, l := range s.labels {
		for _, t := range l.tools {
			ps.add(t.pat, l.label)
		}
		if l.openWorld && !slices.Contains(open, any(l.label)) {
			open = append(open, l.label)
		}
	}
	return map[string]any{"tools": ps.data(), "openWorld": open}
}

// Labels are the labels of a call to tool on server: the pool's and the
// server's labels entries whose patterns match it, and those given to
// open-world tools when openWorld (its openWorldHint is not false). Sorted,
// without duplicates. It is the Go side of the policy's lib.call.labels.
func (c *Compiled) Labels(server, tool string, openWorld bool) []string {
	scopes := []*scope{&c.sum.pool}
	if s := c.servers[server]; s != nil {
		scopes = append(scopes, &s.scope)
	}
	var out []string
	for _, sc := range scopes {
		for _, l := range sc.labels {
			if slices.Contains(out, l.label) {
				continue
			}
			hit := l.openWorld && openWorld
			for _, t := range l.tools {
				hit = hit || t.pat.Match(tool)
			}
			if hit {
				out = append(out, l.label)
			}
		}
	}
	sort.Strings(out)
	return out
}

// FlowLabels splits labels, a call's labels on server, by the flow rules:
// sources are those some rule's after list names (what a session must
// remember once the call is let through); targeted reports whether some
// rule of the pool or of server judges a call carrying them.
func (c *Compiled) FlowLabels(server string, labels []string) (sources []string, targeted bool) {
	for _, l := range labels {
		src := false
		for _, f := range c.Flows {
			src = src || slices.Contains(f.After, l)
			if (f.Server == "" || f.Server == server) && slices.Contains(f.Calls, l) {
				targeted = true
			}
		}
		if src {
			sources = append(sources, l)
		}
	}
	return sources, targeted
}
