package rollout

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
)

// The session-aware settings in a diff: write budgets and loop breakers
// (data.mcpx.config.budgets, by id), data-flow rules (flows, by id) and
// the labels tools carry. A budget or rule added tightens, removed
// loosens; a budget whose max alone went down tightens, up loosens; a
// flow rule whose then alone went from ask to deny tightens, the other
// way loosens; any other edit is changed. A label a tool gains tightens
// (a rule may now judge or remember the call), one it loses loosens.

// compareBudgets compares data.mcpx.config.budgets by id; Server is the
// budget's server where the compiled config's pattern sets say it counts
// one ("" for the pool's).
func compareBudgets(oldCfg, newCfg map[string]any) []Change {
	o, n := mapOf(oldCfg["budgets"]), mapOf(newCfg["budgets"])
	var out []Change
	for _, id := range unionKeys(o, n) {
		ob, okO := o[id]
		nb, okN := n[id]
		c := Change{Server: budgetServer(newCfg, id), Field: "budget", Item: id}
		switch {
		case okO && okN && reflect.DeepEqual(without(mapOf(ob), "origin"), without(mapOf(nb), "origin")):
			continue // the same budget, written elsewhere
		case !okO:
			c.Old, c.New, c.Direction = nil, nb, Tightening
		case !okN:
			c.Server = budgetServer(oldCfg, id)
			c.Old, c.New, c.Direction = ob, nil, Loosening
		default:
			c.Old, c.New, c.Direction = ob, nb, Changed
			om, nm := mapOf(ob), mapOf(nb)
			if reflect.DeepEqual(without(om, "max", "description", "origin"), without(nm, "max", "description", "origin")) {
				switch a, b := fmt.Sprint(om["max"]), fmt.Sprint(nm["max"]); {
				case a == b:
					c.Direction = Changed // its description only
				case numLess(b, a):
					c.Direction = Tightening
				default:
					c.Direction = Loosening
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// compareFlows compares data.mcpx.config.flows by id.
func compareFlows(oldCfg, newCfg map[string]any) []Change {
	o, n := mapOf(oldCfg["flows"]), mapOf(newCfg["flows"])
	var out []Change
	for _, id := range unionKeys(o, n) {
		of, okO := o[id]
		nf, okN := n[id]
		c := Change{Field: "flow", Item: id}
		switch {
		case okO && okN && reflect.DeepEqual(without(mapOf(of), "origin"), without(mapOf(nf), "origin")):
			continue // the same rule, written elsewhere
		case !okO:
			c.Server, c.Old, c.New, c.Direction = str(mapOf(nf)["server"]), nil, nf, Tightening
		case !okN:
			c.Server, c.Old, c.New, c.Direction = str(mapOf(of)["server"]), of, nil, Loosening
		default:
			om, nm := mapOf(of), mapOf(nf)
			c.Server, c.Old, c.New, c.Direction = str(nm["server"]), of, nf, Changed
			if reflect.DeepEqual(without(om, "then", "description", "origin"), without(nm, "then", "description", "origin")) {
				switch {
				case om["then"] == "ask" && nm["then"] == "deny":
					c.Direction = Tightening
				case om["then"] == "deny" && nm["then"] == "ask":
					c.Direction = Loosening
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// labelsAsWritten are the label entries a server's calls get, from the
// pool's and the server's pattern sets: "<pattern>: <label>", and
// "openWorld: <label>" for a label every open-world tool carries.
func labelsAsWritten(cfg map[string]any, name string) []string {
	var out []string
	for _, scope := range []map[string]any{mapOf(cfg["pool"]), server(cfg, name)} {
		ls := mapOf(scope["labels"])
		out = append(out, patternValues(ls["tools"])...)
		for _, v := range list(ls["openWorld"]) {
			out = append(out, "openWorld: "+str(v))
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// budgetPatternsAsWritten are the tool patterns of the budgets that count
// a server's writes: "<pattern>: <budget id>".
func budgetPatternsAsWritten(cfg map[string]any, name string) []string {
	out := append(patternValues(mapOf(cfg["pool"])["budgets"]), patternValues(server(cfg, name)["budgets"])...)
	sort.Strings(out)
	return slices.Compact(out)
}

// patternValues lists a compiled pattern set as "<pattern>: <value>".
func patternValues(set any) []string {
	ps := mapOf(set)
	var out []string
	for pat, vs := range mapOf(ps["exact"]) {
		for _, v := range list(vs) {
			out = append(out, pat+": "+str(v))
		}
	}
	for _, r := range list(ps["regex"]) {
		rm := mapOf(r)
		for _, v := range list(rm["values"]) {
			out = append(out, str(rm["source"])+": "+str(v))
		}
	}
	return out
}

// budgetServer is the server whose pattern sets name budget id in cfg, ""
// when only the pool's do (or none).
func budgetServer(cfg map[string]any, id string) string {
	for _, s := range unionKeys(mapOf(cfg["servers"]), map[string]any{}) {
		ps := mapOf(server(cfg, s)["budgets"])
		for _, vs := range mapOf(ps["exact"]) {
			if slices.Contains(list(vs), any(id)) {
				return s
			}
		}
		for _, r := range list(ps["regex"]) {
			if slices.Contains(list(mapOf(r)["values"]), any(id)) {
				return s
			}
		}
	}
	return ""
}

func without(m map[string]any, keys ...string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !slices.Contains(keys, k) {
			out[k] = v
		}
	}
	return out
}

// numLess compares two whole numbers as written.
func numLess(a, b string) bool {
	var x, y int64
	fmt.Sscan(a, &x)
	fmt.Sscan(b, &y)
	return x < y
}
