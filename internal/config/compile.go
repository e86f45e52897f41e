package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/decision"
)

// Defaults of the layered modes (docs/configuration.md).
const (
	DefaultWrite              = "ask"
	DefaultConfirmDestructive = false
	DefaultUnknownArgs        = "warn"
	DefaultEnforce            = EnforceOn
	// DefaultPinTools is the pinTools mode of a server and pool that set
	// none: tool definitions are not pinned.
	DefaultPinTools = "off"
)

// VocabData is what the policy reads under data.mcpx.vocab: for each kind
// of mode setting (write, unknownArgs, pinTools, enforce) its values with
// their strictness rank (the loader's order, the strictest highest), and
// under "defaults" the value a config that sets none gets. The Rego checks
// modes and resolves defaults with it (rego/mcpx/vocab/data.json is the
// copy `opa test rego/` loads), so the constants here are the one owner.
func VocabData() map[string]any {
	ranks := func(kind string) map[string]any {
		m := make(map[string]any, len(strictness[kind]))
		for v, r := range strictness[kind] {
			m[v] = r
		}
		return m
	}
	return map[string]any{
		"write":       ranks(KindWrite),
		"unknownArgs": ranks(KindUnknownArgs),
		"pinTools":    ranks(KindPin),
		"enforce":     ranks(KindEnforce),
		"defaults": map[string]any{
			"write":       DefaultWrite,
			"unknownArgs": DefaultUnknownArgs,
			"pinTools":    DefaultPinTools,
			"enforce":     DefaultEnforce,
		},
	}
}

// The enforcement modes (policy.enforce, servers.NAME.enforce). Under
// EnforceShadow every call is decided as usual, but a deny or an ask the
// policy may relax is answered as an allow that carries the decision it
// replaced (docs/check-order.md#shadow-mode).
const (
	EnforceOn     = "enforce"
	EnforceShadow = "shadow"
)

// Compiled is a loaded configuration, ready for OPA. It is read-only once
// Load returns it and safe to share between goroutines.
type Compiled struct {
	// Data is the document under data.mcpx: exactly {"config": …} in the
	// shape of ADR 0001. Values are map[string]any, []any, string, bool and
	// json.Number (the array indexes in a rule's paths).
	Data map[string]any
	// Modules maps a file name to Rego source: the generated rule packages
	// as "generated/<package name>.rego" and the operator overrides as
	// "overrides/<base name>.rego".
	Modules map[string]string
	// Warnings are findings that do not stop the load, with file and line:
	// every setting a later layer loosened (see Load), an overrides folder
	// without policy files, a pattern that reads as a hand-written path
	// prefix and lets ".." or a sibling folder through (paths.go), each
	// format keyword of a rule's schema (an annotation, never checked), and
	// with a catalog the rules and patterns that match no tool.
	Warnings []Warning
	// Schemas maps each generated package's name to the argument-rule
	// schema it was compiled from (decoded JSON, as written), for the
	// embedded engine's Go check of the same schemas
	// (docs/decisions/0009-engine-only-predicates.md). Not part of a bundle.
	Schemas map[string]any
	// Revision is the hex SHA-256 over the canonical data and the sorted
	// modules: equal revisions mean equal policies.
	Revision string
	// Catalog is the catalog loaded from LoadOptions.Catalog, or nil.
	Catalog *Catalog
	// Ledger is where the unknown-outcome ledger lives (the ledger
	// section; the file store by default). The Revision does not cover it.
	Ledger LedgerConfig
	// Budgets are the write budgets of every layer (pool's and servers'),
	// by id: what the Engine counts for (docs/configuration.md#budgets).
	Budgets []Budget
	// Flows are the data-flow rules of every layer, by id
	// (docs/configuration.md#labels-and-flows).
	Flows []Flow
	// Examples is how many rule examples were decided as their rules
	// list them (all of them: one that is not is a load error).
	Examples int

	names   map[string]string       // each file as the policy names it (originNames)
	sum     *layer                  // every layer merged (merge)
	servers map[string]*serverLayer // sum's servers by name
}

// compile merges the layers and builds the compiled policy; problems go to c.
func compile(layers []*layer, names map[string]string, sc SchemaCompiler, ev RuleEvaluator, c *collector) *Compiled {
	out := &Compiled{Modules: map[string]string{}, Schemas: map[string]any{}, servers: map[string]*serverLayer{}, names: names}
	sum, loose := merge(layers)
	out.sum = sum
	for _, s := range sum.servers {
		out.servers[s.name] = s
	}

	rules := out.compileRules(sc, ev, c)
	pool := scopeData(&sum.pool)
	servers := map[string]any{}
	serverData := map[string]map[string]any{}
	for _, s := range sum.servers {
		d := scopeData(&s.scope)
		d["exemptArgs"] = uniqueStrings(s.exemptArgs)
		servers[s.name] = d
		serverData[s.name] = d
	}
	config := map[string]any{
		"exemptArgs": uniqueStrings(sum.exemptArgs),
		"pool":       pool,
		"servers":    servers,
		"rules":      rules,
	}
	if budgets := out.compileBudgets(sum, c); len(budgets) > 0 {
		config["budgets"] = budgets
	}
	if flows := out.compileFlows(sum, c); len(flows) > 0 {
		config["flows"] = flows
	}
	// The settings of the table: a policy setting is always in the data
	// (its default when no layer set it); the pool's and a server's only
	// where a layer set them, the policy falling back as inForce does.
	for _, d := range scalars {
		switch d.scope {
		case "policy":
			config[d.dataKey()] = d.kind.dataValue(d.inForce(sum, "").value)
		case "pool":
			if v := *d.slot(sum, nil); v != nil {
				pool[d.dataKey()] = d.kind.dataValue(v.value)
			}
		default:
			for _, s := range sum.servers {
				if v := *d.slot(sum, s); v != nil {
					serverData[s.name][d.dataKey()] = d.kind.dataValue(v.value)
				}
			}
		}
	}
	// the revision names the config: the codes and vocabularies come with
	// the binary, like the static Rego; the loosenings say how the layers
	// made the config, not what it decides, so two loads of one policy
	// through different layers have one revision
	named := map[string]any{"config": maps.Clone(config)}
	if len(loose) > 0 {
		config["loosened"] = loosenedData(loose)
	}
	out.Data = map[string]any{"config": config, "codes": decision.CodesData(), "vocab": VocabData()}
	out.Warnings = append(out.Warnings, loose...)
	out.Warnings = append(out.Warnings, out.loadOverrides(sum.overrides, c)...)
	rev, err := revision(named, out.Modules)
	if err != nil {
		c.add("", 0, "", "cannot hash the compiled policy: %v", err)
	}
	out.Revision = rev
	return out
}

// loosenedData is data.mcpx.config.loosened (absent when there is none):
// each setting a later layer
// loosened (merge), as the decision's ConfigLoosened warnings carry it —
// {"server", "path", "message"}, server "" for a setting of every server —
// in the order Load warns.
func loosenedData(ws []Warning) []any {
	out := make([]any, 0, len(ws))
	for _, w := range ws {
		out = append(out, map[string]any{"server": w.server, "path": w.Path, "message": w.String()})
	}
	return out
}

// scopeData is the pool's or a server's pattern sets and unknownArgsTools.
func scopeData(s *scope) map[string]any {
	hidden, writes, rules := newPatternSet(), newPatternSet(), newPatternSet()
	for _, p := range s.hidden {
		hidden.add(p.pat, p.pat.Source)
	}
	for _, p := range s.writeTools {
		writes.add(p.pat, p.pat.Source)
	}
	for _, r := range s.rules {
		for _, p := range r.tools {
			rules.add(p.pat, r.id)
		}
	}
	ua := make([]any, 0, len(s.ua))
	for _, u := range s.ua {
		ua = append(ua, map[string]any{"re": u.pat.RE, "source": u.pat.Source, "mode": u.mode})
	}
	out := map[string]any{
		"hidden":           hidden.data(),
		"writeTools":       writes.data(),
		"rules":            rules.data(),
		"unknownArgsTools": ua,
	}
	if len(s.budgets)+len(s.loops) > 0 {
		out["budgets"] = budgetPatterns(s).data()
	}
	if len(s.labels) > 0 {
		out["labels"] = labelData(s)
	}
	return out
}

// PinMode is the pinTools mode of server: its own, else the pool's, else
// DefaultPinTools (off).
func (c *Compiled) PinMode(server string) string {
	return serverPinTools.inForce(c.sum, server).value
}

// patternSet builds a PS of ADR 0001: exact names in an object, globs and
// regexes in a list in order of first appearance; a pattern written twice
// is one entry whose values add up without repeats.
type patternSet struct {
	exact   map[string][]any
	regex   []map[string]any
	byRegex map[string]int
}

func newPatternSet() *patternSet {
	return &patternSet{exact: map[string][]any{}, byRegex: map[string]int{}}
}

func (ps *patternSet) add(p Pattern, value string) {
	if p.Kind == Exact {
		ps.exact[p.Source] = appendUnique(ps.exact[p.Source], value)
		return
	}
	i, ok := ps.byRegex[p.Source]
	if !ok {
		i = len(ps.regex)
		ps.byRegex[p.Source] = i
		ps.regex = append(ps.regex, map[string]any{"source": p.Source, "re": p.RE, "values": []any{}})
	}
	ps.regex[i]["values"] = appendUnique(ps.regex[i]["values"].([]any), value)
}

func (ps *patternSet) data() map[string]any {
	exact := make(map[string]any, len(ps.exact))
	for k, v := range ps.exact {
		exact[k] = v
	}
	regex := make([]any, len(ps.regex))
	for i, r := range ps.regex {
		regex[i] = r
	}
	return map[string]any{"exact": exact, "regex": regex}
}

func appendUnique(xs []any, s string) []any {
	for _, x := range xs {
		if x == s {
			return xs
		}
	}
	return append(xs, s)
}

func uniqueStrings(xs []argRef) []any {
	out := []any{}
	for _, x := range xs {
		out = appendUnique(out, x.name)
	}
	return out
}

// SchemaPackage is the name of the generated package for a schema: "s_"
// and the first 16 hex digits of the SHA-256 of its RFC 8785 canonical
// JSON (ADR 0001). RFC 8785 reads numbers as float64, so two schemas that
// differ only in a number whose value float64 loses (an integer beyond
// 2^53, a decimal such as 0.1000000000000000001, 1e400) would share a name; a
// schema with such a number is named instead by the SHA-256 of "exact:"
// and its JSON with every number as written. Equal schemas get equal
// names either way, whatever the order of the rules.
func SchemaPackage(schema any) (string, error) {
	if !floatExact(schema) {
		b, err := json.Marshal(schema)
		if err != nil {
			return "", err
		}
		return "s_" + decision.SHA256Hex(append([]byte("exact:"), b...))[:16], nil
	}
	b, err := decision.Canonical(schema)
	if err != nil {
		return "", err
	}
	return "s_" + decision.SHA256Hex(b)[:16], nil
}

// floatExact reports whether RFC 8785 keeps the value of every number in v.
func floatExact(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if !floatExact(x) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !floatExact(x) {
				return false
			}
		}
	case json.Number:
		var exact big.Rat
		if _, ok := exact.SetString(string(v)); !ok {
			return false
		}
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return false
		}
		// RFC 8785 writes the shortest text that reads back as f; the
		// name is exact when that text has the number's value.
		var shortest big.Rat
		shortest.SetString(strconv.FormatFloat(f, 'g', -1, 64))
		return shortest.Cmp(&exact) == 0
	}
	return true
}

type compiledSchema struct {
	err error
}

// compileRules checks rule ids, compiles each distinct schema once and
// returns data.mcpx.config.rules. It decides every rule's examples with ev
// (checkExamples) and counts those that hold in out.Examples.
func (out *Compiled) compileRules(sc SchemaCompiler, ev RuleEvaluator, c *collector) map[string]any {
	all := append([]*ruleDef{}, out.sum.pool.rules...)
	for _, s := range out.sum.servers {
		all = append(all, s.rules...)
	}
	rules := map[string]any{}
	first := map[string]*ruleDef{}
	done := map[string]*compiledSchema{}
	pkgs := map[string]string{} // rule id -> its package, for the examples
	var checked []*ruleDef
	for _, r := range all {
		if f, dup := first[r.id]; dup {
			c.add(r.at.file, r.at.line, r.at.path, "duplicate rule id %q (first defined at %s, %s); rule ids are unique across the whole config", r.id, f.at, f.at.path)
			continue
		}
		first[r.id] = r
		pkg, err := SchemaPackage(r.schema)
		if err != nil {
			c.add(r.schemaAt.file, r.schemaAt.line, r.schemaAt.path, "rule %q: %v", r.id, err)
			continue
		}
		cs, ok := done[pkg]
		if !ok {
			cs = &compiledSchema{}
			done[pkg] = cs
			cs.err = out.compileSchema(sc, r.schema, pkg)
			if cs.err == nil {
				out.Schemas[pkg] = r.schema
			}
		}
		if cs.err != nil {
			c.add(r.schemaAt.file, schemaErrorLine(r, cs.err), r.schemaAt.path, "rule %q: %s", r.id, oneLine(cs.err.Error()))
			continue
		}
		pkgs[r.id] = pkg
		checked = append(checked, r)
		out.Warnings = append(out.Warnings, pathPrefixWarnings(r)...)
		out.Warnings = append(out.Warnings, formatWarnings(r)...)
		argument := make([]any, len(r.argument))
		for i, a := range r.argument {
			argument[i] = a
		}
		rules[r.id] = map[string]any{
			"id":          r.id,
			"origin":      out.origin(r.at),
			"description": r.description,
			"argument":    argument,
			"paths":       readings(r.argument),
			"pointer":     pointer(r.argument),
			"required":    r.required,
			"package":     pkg,
		}
	}
	out.Examples = out.checkExamples(checked, pkgs, ev, c)
	// the schemas' YAML nodes placed the errors and warnings above on
	// their lines; nothing reads them later, and a Compiled lives as long
	// as its engine
	for _, r := range all {
		r.schemaNode = nil
	}
	return rules
}

// compileSchema runs the schema compiler and checks that what it returns
// is Rego v1 in package mcpx.rules.<pkg>.
func (out *Compiled) compileSchema(sc SchemaCompiler, schema any, pkg string) error {
	if sc == nil {
		return fmt.Errorf("no schema compiler configured")
	}
	src, err := sc(schema, pkg)
	if err != nil {
		return err
	}
	name := "generated/" + pkg + ".rego"
	mod, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return fmt.Errorf("generated Rego does not parse (a bug in the schema compiler): %s", regoError(err))
	}
	if want := "data.mcpx.rules." + pkg; mod.Package.Path.String() != want {
		return fmt.Errorf("generated Rego is package %s, want %s (a bug in the schema compiler)", strings.TrimPrefix(mod.Package.Path.String(), "data."), strings.TrimPrefix(want, "data."))
	}
	out.Modules[name] = src
	return nil
}

// revision hashes the canonical data and the modules in name order.
func revision(data map[string]any, modules map[string]string) (string, error) {
	b, err := decision.Canonical(data)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(b)
	names := make([]string, 0, len(modules))
	for n := range modules {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h.Write([]byte{0})
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write([]byte(modules[n]))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// oneLine folds a multi-line message into one line, so that every error
// of a load stays one line of output.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	parts := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// origin is o as the compiled policy shows it: "file:line" with the file
// named by originNames, so that no path spelling reaches the data.
func (c *Compiled) origin(o origin) string {
	if n, ok := c.names[o.file]; ok {
		o.file = n
	}
	return o.String()
}

// RuleInfo is one argument rule as the config wrote it, for publishing it
// to clients (proxy --publish-rules).
type RuleInfo struct {
	ID, Description string
	// Origin is the rule's file:line, the file named as in the policy's
	// data (its path from the first config file's folder).
	Origin string
	// Argument is the key path of a per-argument rule (a name, or a JSON
	// Pointer's unescaped tokens); nil for a rule on the whole arguments.
	Argument []string
	// Required: the argument must be present.
	Required bool
	// Schema is the rule's JSON Schema (JSON values, numbers as
	// json.Number); shared, not to be modified.
	Schema any
}

// RulesFor lists the argument rules that apply to tool on server — the
// pool's, then the server's, each once, in the order the config layers
// wrote them — as the policy matches them.
func (c *Compiled) RulesFor(server, tool string) []RuleInfo {
	var out []RuleInfo
	seen := map[string]bool{}
	scopes := []*scope{&c.sum.pool}
	if s, ok := c.servers[server]; ok {
		scopes = append(scopes, &s.scope)
	}
	for _, sc := range scopes {
		for _, r := range sc.rules {
			if seen[r.id] {
				continue
			}
			for _, p := range r.tools {
				if p.pat.Match(tool) {
					seen[r.id] = true
					var arg []string
					if len(r.argument) > 0 {
						arg = r.argument
					}
					out = append(out, RuleInfo{ID: r.id, Description: r.description, Origin: c.origin(r.at),
						Argument: arg, Required: r.required, Schema: r.schema})
					break
				}
			}
		}
	}
	return out
}
