package rollout

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// Direction says what a change does to the policy.
type Direction string

// The directions of a change.
const (
	// Loosening: some call may now be decided less strictly (a tool no
	// longer hidden, a write mode from ask to allow, a rule that no longer
	// applies, a key newly exempt).
	Loosening Direction = "loosening"
	// Tightening: some call may now be decided more strictly.
	Tightening Direction = "tightening"
	// Changed: neither, or no order says which (a rule's schema edited, a
	// setting the diff has no strictness order for).
	Changed Direction = "changed"
)

// OtherServers is the Server of the changes that apply to every server
// neither config names (the pool and the global settings).
const OtherServers = "*"

// ToolFacts are what the policy computes about one catalog tool under one
// config: whether it is hidden, whether a call to it is a write (its
// annotations and the writeTools patterns), its write and unknown-arguments
// modes, its exempt keys and the argument rules that apply to it.
type ToolFacts struct {
	Hidden      bool     `json:"hidden"`
	Write       bool     `json:"write"`
	WriteMode   string   `json:"writeMode"`
	UnknownArgs string   `json:"unknownArgs"`
	ExemptArgs  []string `json:"exemptArgs"`
	Rules       []string `json:"rules"`
	// Labels are the labels the tool carries (its patterns' and, unless
	// its openWorldHint is false, the open-world ones), for data-flow
	// rules; left out when none.
	Labels []string `json:"labels,omitempty"`
}

// Snapshot is what Compare reads of one config.
type Snapshot struct {
	// Config is the compiled config, data.mcpx.config.
	Config map[string]any
	// Overrides maps each override module's file name to a hash of its
	// source.
	Overrides map[string]string
	// Tools holds, with a catalog, each catalog tool's facts by server and
	// tool name; nil without one.
	Tools map[string]map[string]ToolFacts
}

// RuleInfo is an argument rule as a change shows it.
type RuleInfo struct {
	ID     string `json:"id"`
	Origin string `json:"origin"`
	// Package names the rule's generated code: equal schemas, equal
	// packages.
	Package  string `json:"package"`
	Pointer  string `json:"pointer"`
	Required bool   `json:"required"`
	// Tools are the rule's tool patterns, for a server compared as
	// written.
	Tools []string `json:"tools,omitempty"`
}

// Change is one difference between the two configs' decisions. Server is
// "" for a policy-wide setting and OtherServers for the servers neither
// config names; Tool is set when the change is a catalog tool's. Field
// says what changed:
//
//	hidden, write, writeMode, unknownArgs   Old and New are the values
//	enforce, pinTools                       Old and New are the server's effective modes
//	exemptArg, hiddenPattern, writePattern  Item is the key or pattern; Old/New: whether present
//	unknownArgsTool                         Item is the pattern; Old/New: its mode (null: none)
//	rule                                    Item is the rule id; Old/New: RuleInfo (null: none)
//	confirmDestructive                      Old and New are the values
//	override                                Item is the file; Old/New: its source's hash (null: none)
//	label                                   a catalog tool's label: Item is the label; Old/New: whether present
//	labelPattern, budgetPattern             Item is "<pattern>: <label or budget id>"; Old/New: whether present
//	budget, flow                            Item is the id; Old/New: as compiled (null: none)
//	setting                                 Item is a setting the diff has no field for; Old/New as compiled
//
// A tool that stops being hidden, or starts or stops being a write,
// carries Facts: what it is now.
type Change struct {
	Server    string     `json:"server"`
	Tool      string     `json:"tool,omitempty"`
	Field     string     `json:"field"`
	Item      string     `json:"item,omitempty"`
	Old       any        `json:"old"`
	New       any        `json:"new"`
	Direction Direction  `json:"direction"`
	Facts     *ToolFacts `json:"facts,omitempty"`
}

// Diff is the comparison of two configs.
type Diff struct {
	// Catalog says the comparison is per catalog tool; without it, it is
	// per server, of the patterns and settings as written.
	Catalog bool `json:"catalog"`
	// Tools is how many catalog tools were compared.
	Tools int `json:"tools"`
	// AsWritten lists the servers a config names that the catalog does
	// not hold: they are compared as written.
	AsWritten []string `json:"asWritten,omitempty"`
	Changes   []Change `json:"changes"`
}

// Count returns how many changes go each way.
func (d Diff) Count() (loosening, tightening, changed int) {
	for _, c := range d.Changes {
		switch c.Direction {
		case Loosening:
			loosening++
		case Tightening:
			tightening++
		default:
			changed++
		}
	}
	return
}

// Compare compares two configs. With a catalog (both Snapshots hold
// Tools) it compares every catalog tool's facts, and the servers the
// catalog does not hold as written; without one, every server either
// config names, and the servers neither names (OtherServers), as written:
// the effective write and unknown-arguments modes, exempt keys, hidden and
// write patterns, unknownArgsTools entries and the rules with their tool
// patterns. Every server compared gets its effective enforce and pinTools
// modes compared (compareModes). Policy-wide it compares
// confirmDestructive and the override modules, and everywhere any setting
// it has no field for, as changed: no order says which way it goes.
func Compare(old, new Snapshot) Diff {
	d := Diff{Catalog: old.Tools != nil && new.Tools != nil, Changes: []Change{}}
	servers := unionKeys(mapOf(old.Config["servers"]), mapOf(new.Config["servers"]))
	if d.Catalog {
		for _, server := range unionKeys(old.Tools, new.Tools) {
			for _, tool := range unionKeys(old.Tools[server], new.Tools[server]) {
				d.Tools++
				of, okO := old.Tools[server][tool]
				nf, okN := new.Tools[server][tool]
				if okO && okN {
					d.Changes = append(d.Changes, compareTool(server, tool, of, nf, old.Config, new.Config)...)
				}
			}
			d.Changes = append(d.Changes, compareModes(server, old.Config, new.Config)...)
		}
		for _, s := range servers {
			if _, ok := new.Tools[s]; ok {
				d.Changes = append(d.Changes, compareSettings(s, server(old.Config, s), server(new.Config, s), knownServerKeys)...)
				continue
			}
			d.AsWritten = append(d.AsWritten, s)
			d.Changes = append(d.Changes, compareServer(s, old.Config, new.Config)...)
		}
	} else {
		for _, s := range append(servers, OtherServers) {
			d.Changes = append(d.Changes, compareServer(s, old.Config, new.Config)...)
		}
	}
	d.Changes = append(d.Changes, comparePolicy(old, new)...)
	return d
}

// knownServerKeys are the per-server keys of the compiled config the diff
// compares field by field; knownTopKeys the top-level ones.
var (
	knownServerKeys = []string{"write", "unknownArgs", "exemptArgs", "hidden", "writeTools", "rules", "unknownArgsTools", "enforce", "pinTools", "budgets", "labels"}
	knownTopKeys    = []string{"write", "unknownArgs", "confirmDestructive", "exemptArgs", "pool", "servers", "rules", "enforce", "budgets", "flows"}
)

func compareTool(server, tool string, of, nf ToolFacts, oldCfg, newCfg map[string]any) []Change {
	var out []Change
	add := func(c Change) {
		c.Server, c.Tool = server, tool
		out = append(out, c)
	}
	if of.Hidden || nf.Hidden {
		if of.Hidden != nf.Hidden {
			c := Change{Field: "hidden", Old: of.Hidden, New: nf.Hidden, Direction: boolDirection(of.Hidden, nf.Hidden)}
			if !nf.Hidden {
				now := nf
				c.Facts = &now
			}
			add(c)
		}
		// A tool hidden under either config was refused whole there:
		// nothing else of it was ever decided.
		return out
	}
	if of.Write != nf.Write {
		// the write mode applies under one config only: the change says
		// which it is there
		now := nf
		add(Change{Field: "write", Old: of.Write, New: nf.Write, Direction: boolDirection(of.Write, nf.Write), Facts: &now})
	}
	if of.Write && nf.Write && of.WriteMode != nf.WriteMode {
		add(Change{Field: "writeMode", Old: of.WriteMode, New: nf.WriteMode, Direction: direction(config.KindWrite, of.WriteMode, nf.WriteMode)})
	}
	if of.UnknownArgs != nf.UnknownArgs {
		add(Change{Field: "unknownArgs", Old: of.UnknownArgs, New: nf.UnknownArgs, Direction: direction(config.KindUnknownArgs, of.UnknownArgs, nf.UnknownArgs)})
	}
	for _, c := range compareMembers("exemptArg", of.ExemptArgs, nf.ExemptArgs, Loosening) {
		add(c)
	}
	for _, c := range compareMembers("label", of.Labels, nf.Labels, Tightening) {
		add(c)
	}
	oldRules, newRules := ruleInfos(oldCfg, of.Rules, nil), ruleInfos(newCfg, nf.Rules, nil)
	for _, c := range compareRules(oldRules, newRules) {
		add(c)
	}
	return out
}

// compareServer compares one server as written (OtherServers: a server
// neither config names).
func compareServer(name string, oldCfg, newCfg map[string]any) []Change {
	o, n := effective(oldCfg, name), effective(newCfg, name)
	var out []Change
	add := func(c Change) {
		c.Server = name
		out = append(out, c)
	}
	if o.write != n.write {
		add(Change{Field: "writeMode", Old: o.write, New: n.write, Direction: direction(config.KindWrite, o.write, n.write)})
	}
	if o.ua != n.ua {
		add(Change{Field: "unknownArgs", Old: o.ua, New: n.ua, Direction: direction(config.KindUnknownArgs, o.ua, n.ua)})
	}
	for _, c := range compareMembers("exemptArg", o.exempt, n.exempt, Loosening) {
		add(c)
	}
	for _, c := range compareMembers("hiddenPattern", o.hidden, n.hidden, Tightening) {
		add(c)
	}
	for _, c := range compareMembers("writePattern", o.writes, n.writes, Tightening) {
		add(c)
	}
	for _, src := range unionKeys(o.uaTools, n.uaTools) {
		om, okO := o.uaTools[src]
		nm, okN := n.uaTools[src]
		if okO && okN && om == nm {
			continue
		}
		c := Change{Field: "unknownArgsTool", Item: src, Old: nil, New: nil}
		from, to := o.ua, n.ua
		if okO {
			c.Old, from = om, om
		}
		if okN {
			c.New, to = nm, nm
		}
		c.Direction = direction(config.KindUnknownArgs, from, to)
		add(c)
	}
	for _, c := range compareRules(o.rules, n.rules) {
		add(c)
	}
	for _, c := range compareMembers("labelPattern", labelsAsWritten(oldCfg, name), labelsAsWritten(newCfg, name), Tightening) {
		add(c)
	}
	for _, c := range compareMembers("budgetPattern", budgetPatternsAsWritten(oldCfg, name), budgetPatternsAsWritten(newCfg, name), Tightening) {
		add(c)
	}
	out = append(out, compareModes(name, oldCfg, newCfg)...)
	if name != OtherServers {
		for _, c := range compareSettings(name, server(oldCfg, name), server(newCfg, name), knownServerKeys) {
			out = append(out, c)
		}
	}
	return out
}

// compareModes compares a server's effective enforce mode (its own, else
// the policy's, else enforce; shadow is the looser) and pinTools mode (its
// own, else the pool's, else off; off < ask < deny), so that a change of
// the policy's or the pool's mode shows, with its direction, on every
// server it reaches, and a server's own mode removed shows as the mode it
// now inherits.
func compareModes(name string, oldCfg, newCfg map[string]any) []Change {
	var out []Change
	for _, m := range []struct {
		field, kind string
		mode        func(cfg map[string]any) string
	}{
		{"enforce", config.KindEnforce, func(cfg map[string]any) string {
			return firstString(server(cfg, name)["enforce"], cfg["enforce"], config.DefaultEnforce)
		}},
		{"pinTools", config.KindPin, func(cfg map[string]any) string {
			return firstString(server(cfg, name)["pinTools"], mapOf(cfg["pool"])["pinTools"], config.DefaultPinTools)
		}},
	} {
		o, n := m.mode(oldCfg), m.mode(newCfg)
		if o != n {
			out = append(out, Change{Server: name, Field: m.field, Old: o, New: n, Direction: direction(m.kind, o, n)})
		}
	}
	return out
}

// comparePolicy compares the policy-wide settings.
func comparePolicy(old, new Snapshot) []Change {
	var out []Change
	ocd, ncd := fmt.Sprint(old.Config["confirmDestructive"]), fmt.Sprint(new.Config["confirmDestructive"])
	if ocd != ncd {
		out = append(out, Change{Field: "confirmDestructive", Old: old.Config["confirmDestructive"], New: new.Config["confirmDestructive"], Direction: direction(config.KindBool, ocd, ncd)})
	}
	for _, file := range unionKeys(old.Overrides, new.Overrides) {
		oh, okO := old.Overrides[file]
		nh, okN := new.Overrides[file]
		switch {
		case okO && okN && oh == nh:
		case !okO:
			// overrides only tighten: a new one can only add denies and asks
			out = append(out, Change{Field: "override", Item: file, Old: nil, New: nh, Direction: Tightening})
		case !okN:
			out = append(out, Change{Field: "override", Item: file, Old: oh, New: nil, Direction: Loosening})
		default:
			out = append(out, Change{Field: "override", Item: file, Old: oh, New: nh, Direction: Changed})
		}
	}
	out = append(out, compareBudgets(old.Config, new.Config)...)
	out = append(out, compareFlows(old.Config, new.Config)...)
	out = append(out, compareSettings("", old.Config, new.Config, knownTopKeys)...)
	return out
}

// compareSettings compares the keys of two compiled objects that known
// does not name, as written.
func compareSettings(server string, o, n map[string]any, known []string) []Change {
	var out []Change
	for _, k := range unionKeys(o, n) {
		if slices.Contains(known, k) {
			continue
		}
		ov, okO := o[k]
		nv, okN := n[k]
		if okO && okN && reflect.DeepEqual(ov, nv) {
			continue
		}
		out = append(out, Change{Server: server, Field: "setting", Item: k, Old: ov, New: nv, Direction: Changed})
	}
	return out
}

// compareMembers compares two sets: a member added goes the way added
// says, one removed the other way.
func compareMembers(field string, o, n []string, added Direction) []Change {
	removed := Loosening
	if added == Loosening {
		removed = Tightening
	}
	var out []Change
	for _, m := range unionKeys(setOf(o), setOf(n)) {
		inO, inN := slices.Contains(o, m), slices.Contains(n, m)
		switch {
		case inO && !inN:
			out = append(out, Change{Field: field, Item: m, Old: true, New: false, Direction: removed})
		case inN && !inO:
			out = append(out, Change{Field: field, Item: m, Old: false, New: true, Direction: added})
		}
	}
	return out
}

// compareRules compares the rules that apply: a rule that now applies
// tightens, one that no longer does loosens; a rule whose code, argument
// or required changed is changed; one that now applies to more tool
// patterns tightens, to fewer loosens, to others is changed.
func compareRules(o, n map[string]RuleInfo) []Change {
	var out []Change
	for _, id := range unionKeys(o, n) {
		or, okO := o[id]
		nr, okN := n[id]
		c := Change{Field: "rule", Item: id}
		switch {
		case !okO:
			c.Old, c.New, c.Direction = nil, nr, Tightening
		case !okN:
			c.Old, c.New, c.Direction = or, nil, Loosening
		case or.Package != nr.Package || or.Pointer != nr.Pointer || or.Required != nr.Required:
			c.Old, c.New, c.Direction = or, nr, Changed
		case !slices.Equal(or.Tools, nr.Tools):
			c.Old, c.New = or, nr
			switch {
			case subset(or.Tools, nr.Tools):
				c.Direction = Tightening
			case subset(nr.Tools, or.Tools):
				c.Direction = Loosening
			default:
				c.Direction = Changed
			}
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}

// asWritten is a server's settings as the policy resolves them from the
// compiled config alone.
type asWritten struct {
	write, ua      string
	exempt         []string
	hidden, writes []string
	uaTools        map[string]string // pattern ("pool: " prefixed for the pool's) -> mode
	rules          map[string]RuleInfo
}

// effective resolves a server's settings: its own mode, else the global
// one, else the default; the pool's patterns, rules and entries with its
// own.
func effective(cfg map[string]any, name string) asWritten {
	s := server(cfg, name)
	pool := mapOf(cfg["pool"])
	w := asWritten{
		write:   firstString(s["write"], cfg["write"], config.DefaultWrite),
		ua:      firstString(s["unknownArgs"], cfg["unknownArgs"], config.DefaultUnknownArgs),
		exempt:  sortedUnique(append(stringList(cfg["exemptArgs"]), stringList(s["exemptArgs"])...)),
		hidden:  sortedUnique(append(patternSources(pool["hidden"]), patternSources(s["hidden"])...)),
		writes:  sortedUnique(append(patternSources(pool["writeTools"]), patternSources(s["writeTools"])...)),
		uaTools: map[string]string{},
	}
	for _, e := range list(pool["unknownArgsTools"]) {
		m := mapOf(e)
		w.uaTools["pool: "+fmt.Sprint(m["source"])] = fmt.Sprint(m["mode"])
	}
	for _, e := range list(s["unknownArgsTools"]) {
		m := mapOf(e)
		w.uaTools[fmt.Sprint(m["source"])] = fmt.Sprint(m["mode"])
	}
	tools := map[string][]string{}
	for id, pats := range rulePatterns(pool["rules"]) {
		tools[id] = append(tools[id], pats...)
	}
	for id, pats := range rulePatterns(s["rules"]) {
		tools[id] = append(tools[id], pats...)
	}
	ids := make([]string, 0, len(tools))
	for id := range tools {
		ids = append(ids, id)
	}
	w.rules = ruleInfos(cfg, ids, tools)
	return w
}

// ruleInfos looks the rules up in data.mcpx.config.rules; tools, when
// given, are each rule's patterns.
func ruleInfos(cfg map[string]any, ids []string, tools map[string][]string) map[string]RuleInfo {
	all := mapOf(cfg["rules"])
	out := make(map[string]RuleInfo, len(ids))
	for _, id := range ids {
		r := mapOf(all[id])
		info := RuleInfo{ID: id, Origin: str(r["origin"]), Package: str(r["package"]), Pointer: str(r["pointer"])}
		info.Required, _ = r["required"].(bool)
		if tools != nil {
			info.Tools = sortedUnique(tools[id])
		}
		out[id] = info
	}
	return out
}

// rulePatterns inverts a pattern set of rule ids: rule id -> patterns.
func rulePatterns(ps any) map[string][]string {
	out := map[string][]string{}
	m := mapOf(ps)
	for name, ids := range mapOf(m["exact"]) {
		for _, id := range list(ids) {
			out[str(id)] = append(out[str(id)], name)
		}
	}
	for _, r := range list(m["regex"]) {
		rm := mapOf(r)
		for _, id := range list(rm["values"]) {
			out[str(id)] = append(out[str(id)], str(rm["source"]))
		}
	}
	return out
}

// patternSources lists the patterns of a pattern set that carry a value.
func patternSources(ps any) []string {
	m := mapOf(ps)
	var out []string
	for name, vs := range mapOf(m["exact"]) {
		if len(list(vs)) > 0 {
			out = append(out, name)
		}
	}
	for _, r := range list(m["regex"]) {
		rm := mapOf(r)
		if len(list(rm["values"])) > 0 {
			out = append(out, str(rm["source"]))
		}
	}
	return out
}

func server(cfg map[string]any, name string) map[string]any {
	return mapOf(mapOf(cfg["servers"])[name])
}

func direction(kind, from, to string) Direction {
	cmp, ok := config.CompareStrictness(kind, from, to)
	switch {
	case !ok:
		return Changed
	case cmp < 0:
		return Loosening
	case cmp > 0:
		return Tightening
	}
	return Changed
}

// boolDirection: true is the stricter value (hidden, a write).
func boolDirection(from, to bool) Direction {
	return direction(config.KindBool, fmt.Sprint(from), fmt.Sprint(to))
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	if m == nil {
		return map[string]any{}
	}
	return m
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func stringList(v any) []string {
	var out []string
	for _, x := range list(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func firstString(vs ...any) string {
	for _, v := range vs {
		if s, ok := v.(string); ok {
			return s
		}
	}
	return ""
}

func sortedUnique(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return slices.Compact(out)
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// unionKeys lists the keys of two maps, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	seen := make(map[string]bool, len(a)+len(b))
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// JSON is the diff as one JSON document.
func (d Diff) JSON() ([]byte, error) {
	l, t, c := d.Count()
	return json.MarshalIndent(struct {
		Diff
		Changed    bool `json:"changed"`
		Loosening  int  `json:"loosening"`
		Tightening int  `json:"tightening"`
		Other      int  `json:"other"`
	}{d, len(d.Changes) > 0, l, t, c}, "", "  ")
}
