package config

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"gopkg.in/yaml.v3"
)

// Write budgets (docs/configuration.md#budgets): a cap on the writes, or
// on the destructive writes, that the tools a budget's patterns match may
// be dispatched in a sliding window, counted per server, principal or
// session. Every layer adds budgets and none can remove or raise one, so
// the list tightens only; the policy step is rego/mcpx/steps/budget.rego,
// the counting the ledger's store (docs/decisions/0027-write-budgets.md).

// The scopes a budget counts per (Budget.Per).
const (
	BudgetPerServer    = "server"
	BudgetPerPrincipal = "principal"
	BudgetPerSession   = "session"
	// BudgetPerCall is a loop breaker's scope: one count per exact call
	// (the SHA-256 of its canonical form), whoever makes it.
	BudgetPerCall = "call"
)

// The bounds of a budget's settings: a window between one second and a
// day (the ledger keeps what it counts for no longer than the longest
// window), a max between 1 and a million.
const (
	MinBudgetWindow = time.Second
	MaxBudgetWindow = 24 * time.Hour
	MaxBudgetMax    = 1_000_000
)

// budgetKeys are the keys of one budget; loopKeys of one loop breaker.
var (
	budgetKeys = []string{"id", "description", "tools", "writes", "max", "window", "per"}
	loopKeys   = []string{"id", "description", "tools", "max", "window"}
)

// budgetDef is one budget as a layer wrote it. The list of them declares
// the direction (a tightening each); its fields are part of it.
type budgetDef struct {
	id          string        `dir:"part"`
	description string        `dir:"part"`
	tools       []patRef      `dir:"part"` // none: every tool of the scope
	destructive bool          `dir:"part"` // writes: destructive
	max         int           `dir:"part"`
	window      time.Duration `dir:"part"`
	windowText  string        `dir:"part"` // as written: "1h"
	per         string        `dir:"part"`
	at          origin        `dir:"meta"`
}

// Budget is one write budget of the compiled config, as the Engine counts
// for it (Compiled.Budgets); data.mcpx.config.budgets holds the same for
// the policy.
type Budget struct {
	// ID is the budget's id, unique across the config.
	ID string
	// Server is the server whose writes it counts; "" for a pool budget,
	// which counts each server's writes apart.
	Server string
	// Tools are its tool patterns; none matches every tool.
	Tools []Pattern
	// Destructive counts only destructive writes (writes: destructive).
	Destructive bool
	// Max is how many writes the window holds; the next one is refused.
	Max int
	// Window is the sliding window.
	Window time.Duration
	// Per is BudgetPerServer, BudgetPerPrincipal or BudgetPerSession.
	Per string
	// Origin is file:line of its id.
	Origin string
}

// Matches reports whether the budget counts a call to tool on server of
// the given class (a write; destructive or not).
func (b Budget) Matches(server, tool string, write, destructive bool) bool {
	if !write || (b.Destructive && !destructive) || (b.Server != "" && b.Server != server) {
		return false
	}
	if len(b.Tools) == 0 {
		return true
	}
	for _, p := range b.Tools {
		if p.Match(tool) {
			return true
		}
	}
	return false
}

// budgets reads a scope's budgets list (loop: its loopBreakers list,
// budgets per call).
func (p *fileParser) budgets(n *yaml.Node, path string, loop bool) []*budgetDef {
	keys := budgetKeys
	if loop {
		keys = loopKeys
	}
	var out []*budgetDef
	for ip, c := range p.items(n, path, "a list of budgets ({id, max, window, …})") {
		if c.Kind != yaml.MappingNode {
			p.errAt(c, ip, "want a budget (a mapping with keys %s), got %s", "id, max, window", kindName(c))
			continue
		}
		b := &budgetDef{per: BudgetPerServer, at: p.at(c, ip)}
		if loop {
			b.per = BudgetPerCall
		}
		ok := true
		bad := func(n *yaml.Node, kp, format string, args ...any) {
			p.errAt(n, kp, format, args...)
			ok = false
		}
		entries, known := p.knownEntries(c, ip, keys)
		ok = ok && known
		for _, e := range entries {
			kp := join(ip, e.key)
			v := deref(e.value)
			if handled, good := p.idOrDescription(e.key, v, kp, ip, &b.id, &b.at, &b.description); handled {
				ok = ok && good
				continue
			}
			switch e.key {
			case "tools":
				b.tools = p.patterns(e.value, kp)
				if len(b.tools) == 0 {
					bad(v, kp, "want at least one tool pattern (leave tools out to count every tool)")
				}
			case "writes":
				switch {
				case v.Kind == yaml.ScalarNode && v.Value == "all":
				case v.Kind == yaml.ScalarNode && v.Value == "destructive":
					b.destructive = true
				default:
					bad(v, kp, "want all or destructive, got %s", scalarText(v))
				}
			case "max":
				m, err := strconv.Atoi(v.Value)
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!int" || err != nil || m < 1 || m > MaxBudgetMax {
					bad(v, kp, "want a whole number of writes from 1 to %d, got %s", MaxBudgetMax, scalarText(v))
					continue
				}
				b.max = m
			case "window":
				w, err := time.ParseDuration(v.Value)
				if v.Kind != yaml.ScalarNode || err != nil || w < MinBudgetWindow || w > MaxBudgetWindow || w%time.Second != 0 {
					bad(v, kp, "want a duration of whole seconds from 1s to 24h (such as 1h or 90s), got %s", scalarText(v))
					continue
				}
				b.window, b.windowText = w, v.Value
			case "per":
				if v.Kind != yaml.ScalarNode || !slices.Contains([]string{BudgetPerServer, BudgetPerPrincipal, BudgetPerSession}, v.Value) {
					bad(v, kp, "want server, principal or session, got %s", scalarText(v))
					continue
				}
				b.per = v.Value
			}
		}
		for _, k := range []string{"id", "max", "window"} {
			if !hasKey(c, k) {
				bad(c, ip, "a budget needs %s", k)
			}
		}
		if ok {
			out = append(out, b)
		}
	}
	return out
}

// compileBudgets checks that budget ids are unique and builds
// data.mcpx.config.budgets and Compiled.Budgets.
func (out *Compiled) compileBudgets(sum *layer, c *collector) map[string]any {
	data := map[string]any{}
	first := map[string]*budgetDef{}
	add := func(server string, b *budgetDef) {
		if f, ok := first[b.id]; ok {
			c.add(b.at.file, b.at.line, b.at.path, "duplicate budget id %q (first defined at %s, %s); budget ids are unique across the whole config", b.id, f.at, f.at.path)
			return
		}
		first[b.id] = b
		writes := "all"
		if b.destructive {
			writes = "destructive"
		}
		origin := out.origin(b.at)
		data[b.id] = map[string]any{
			"max": json.Number(strconv.Itoa(b.max)), "window": b.windowText,
			"window_seconds": json.Number(strconv.Itoa(int(b.window / time.Second))),
			"writes":         writes, "per": b.per, "origin": origin, "description": b.description,
		}
		pats := make([]Pattern, len(b.tools))
		for i, t := range b.tools {
			pats[i] = t.pat
		}
		out.Budgets = append(out.Budgets, Budget{ID: b.id, Server: server, Tools: pats, Destructive: b.destructive,
			Max: b.max, Window: b.window, Per: b.per, Origin: origin})
	}
	for _, b := range append(slices.Clone(sum.pool.budgets), sum.pool.loops...) {
		add("", b)
	}
	for _, s := range sum.servers {
		for _, b := range append(slices.Clone(s.budgets), s.loops...) {
			add(s.name, b)
		}
	}
	sort.SliceStable(out.Budgets, func(i, j int) bool { return out.Budgets[i].ID < out.Budgets[j].ID })
	return data
}

// budgetPatterns is a scope's pattern set from tool patterns to budget
// and loop breaker ids: a budget without tools is the pattern "*".
func budgetPatterns(s *scope) *patternSet {
	ps := newPatternSet()
	for _, b := range append(slices.Clone(s.budgets), s.loops...) {
		if len(b.tools) == 0 {
			all, _ := ParsePattern("*")
			ps.add(all, b.id)
			continue
		}
		for _, t := range b.tools {
			ps.add(t.pat, b.id)
		}
	}
	return ps
}

// LongestBudgetWindow is the longest window of c's budgets; 0 when it
// has none.
func (c *Compiled) LongestBudgetWindow() time.Duration {
	var w time.Duration
	for _, b := range c.Budgets {
		w = max(w, b.Window)
	}
	return w
}

// budgetString names a budget for messages.
func (b Budget) String() string {
	return fmt.Sprintf("budget %s (%s)", b.ID, b.Origin)
}

// WriteByPattern reports whether a writeTools pattern of the pool or of
// server matches tool: the Go side of the policy's write classification
// (lib.call.write), which the Engine needs to know which budgets count a
// call before it asks the policy.
func (c *Compiled) WriteByPattern(server, tool string) bool {
	scopes := []*scope{&c.sum.pool}
	if s := c.servers[server]; s != nil {
		scopes = append(scopes, &s.scope)
	}
	for _, sc := range scopes {
		for _, p := range sc.writeTools {
			if p.pat.Match(tool) {
				return true
			}
		}
	}
	return false
}

// Shadow reports whether server is in shadow mode (its enforce, else
// policy.enforce): its budgets count, but a spent one refuses nothing.
func (c *Compiled) Shadow(server string) bool {
	return scalarIn("servers", "enforce").inForce(c.sum, server).value == EnforceShadow
}
