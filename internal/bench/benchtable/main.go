// Command benchtable reads `go test -bench` output of internal/bench,
// internal/engine and policy_test (any number of -count runs, the packages
// one after the other) on stdin and prints one summary table: the median
// of each metric over the runs, and a second one of the session policy's
// steps. `make bench` pipes into it.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// line matches "BenchmarkDecide/M-2   2000   35000 ns/op   30000 p50-ns …".
var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+(\d+)\s+(.*)$`)

// results maps "Decide/M" → metric unit → values, one per run.
type results map[string]map[string][]float64

func parse(r io.Reader) (results, []string, error) {
	res := results{}
	var context []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		t := sc.Text()
		if strings.HasPrefix(t, "cpu:") || strings.HasPrefix(t, "goos:") || strings.HasPrefix(t, "goarch:") {
			if !slices.Contains(context, t) {
				context = append(context, t)
			}
			continue
		}
		m := line.FindStringSubmatch(t)
		if m == nil {
			continue
		}
		name := strings.TrimPrefix(m[1], "Benchmark")
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			if res[name] == nil {
				res[name] = map[string][]float64{}
			}
			res[name][f[i+1]] = append(res[name][f[i+1]], v)
		}
	}
	return res, context, sc.Err()
}

func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

func (r results) get(name, unit string) (float64, bool) { return median(r[name][unit]) }

func (r results) runs(name, unit string) int { return len(r[name][unit]) }

func us(v float64, ok bool) string {
	if !ok {
		return "—"
	}
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2f ms", v/1e6)
	default:
		return fmt.Sprintf("%.1f µs", v/1e3)
	}
}

func num(v float64, ok bool, unit string) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%.0f%s", v, unit)
}

func ratio(a float64, aok bool, b float64, bok bool) string {
	if !aok || !bok || b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

// row is one line of the table: its label and its cell for a shape.
type row struct {
	label string
	cell  func(shape string) string
}

func main() {
	res, context, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable: error:", err)
		os.Exit(1)
	}
	if len(res) == 0 {
		fmt.Fprintln(os.Stderr, "benchtable: error: no benchmark results on stdin")
		os.Exit(1)
	}
	p := func(bench, unit string) func(string) string {
		return func(s string) string { return us(res.get(bench+"/"+s, unit)) }
	}
	rows := []row{
		{"decision, distinct calls (tools seen): p50", p("Decide", "p50-ns")},
		{"decision, distinct calls (tools seen): p99", p("Decide", "p99-ns")},
		{"decision, distinct calls (tools seen): p99 / p50", func(s string) string {
			a, aok := res.get("Decide/"+s, "p99-ns")
			b, bok := res.get("Decide/"+s, "p50-ns")
			return ratio(a, aok, b, bok)
		}},
		{"decision, distinct calls (tools seen): allocs/op", func(s string) string {
			v, ok := res.get("Decide/"+s, "allocs/op")
			return num(v, ok, "")
		}},
		{"decision, distinct calls (tools seen): bytes/op", func(s string) string {
			v, ok := res.get("Decide/"+s, "B/op")
			return num(v/1024, ok, " KiB")
		}},
		{"decision, distinct calls on new tools: p50", p("DecideNewTools", "p50-ns")},
		{"decision, distinct calls on new tools: p99", p("DecideNewTools", "p99-ns")},
		{"decision, repeated calls (decision cache): p50", p("DecideWarm", "p50-ns")},
		{"decision, repeated calls (decision cache): p99", p("DecideWarm", "p99-ns")},
		{"native Go (santhosh v6 + steps): p50", p("Native", "p50-ns")},
		{"native Go: p99", p("Native", "p99-ns")},
		{"engine / native (p50)", func(s string) string {
			a, aok := res.get("Decide/"+s, "p50-ns")
			b, bok := res.get("Native/"+s, "p50-ns")
			return ratio(a, aok, b, bok)
		}},
		{"json.match_schema policy: p50", p("MatchSchema", "p50-ns")},
		{"json.match_schema policy: p99", p("MatchSchema", "p99-ns")},
		{"json.match_schema / engine (p50)", func(s string) string {
			a, aok := res.get("MatchSchema/"+s, "p50-ns")
			b, bok := res.get("Decide/"+s, "p50-ns")
			return ratio(a, aok, b, bok)
		}},
		{"argument rules only, generated Rego: p50", func(s string) string { return us(res.get("RulesOnly/"+s+"/generated", "p50-ns")) }},
		{"argument rules only, json.match_schema: p50", func(s string) string { return us(res.get("RulesOnly/"+s+"/match_schema", "p50-ns")) }},
		{"compile + prepare (mcpxpolicy.New)", p("Prepare", "ns/op")},
		{"prepared engine heap", func(s string) string {
			v, ok := res.get("Prepare/"+s, "heap-MiB")
			if !ok {
				return "—"
			}
			return fmt.Sprintf("%.0f MiB", v)
		}},
		{"stock OPA server, HTTP round trip: p50", p("OPAServer", "p50-ns")},
		{"stock OPA server, HTTP round trip: p99", p("OPAServer", "p99-ns")},
	}
	rate := func(unit string) func(string) string {
		return func(s string) string {
			v, ok := res.get("ServeVsOPA/"+s, unit)
			return num(v, ok, "/s")
		}
	}
	rows = append(rows,
		row{"serve, 16 keep-alive clients: decisions/s", rate("serve-decisions/s")},
		row{"stock OPA server, same calls and clients: decisions/s", rate("opa-decisions/s")},
		row{"serve / stock OPA (throughput)", func(s string) string {
			v, ok := res.get("ServeVsOPA/"+s, "serve/opa-x")
			if !ok {
				return "—"
			}
			return fmt.Sprintf("%.2f×", v)
		}},
		row{"serve under that load: p50", p("ServeVsOPA", "serve-p50-ns")},
		row{"serve under that load: p99", p("ServeVsOPA", "serve-p99-ns")},
	)
	rows = append(rows, row{"stock OPA, in process (no HTTP): p50", p("StockOPA", "p50-ns")})
	rows = append(rows, row{"stock OPA, in process: allocs/op", func(s string) string {
		v, ok := res.get("StockOPA/"+s, "allocs/op")
		return num(v, ok, "")
	}})
	// per outcome class of the distinct-call decisions, in a stable order
	var classes []string
	for _, s := range []string{"M", "L"} {
		for unit := range res["Decide/"+s] {
			if c, ok := strings.CutSuffix(unit, "-p50-ns"); ok && !slices.Contains(classes, c) {
				classes = append(classes, c)
			}
		}
	}
	slices.Sort(classes)
	for _, c := range classes {
		cell := func(metric string) func(string) string {
			return func(s string) string {
				v, ok := res.get("Decide/"+s, c+metric)
				pct, pok := res.get("Decide/"+s, c+"-pct")
				if !ok || !pok {
					return "—"
				}
				return fmt.Sprintf("%s (%.0f%%)", us(v, true), pct)
			}
		}
		rows = append(rows,
			row{"  by outcome, " + c + ": p50 (share)", cell("-p50-ns")},
			row{"  by outcome, " + c + ": p99 (share)", cell("-p99-ns")},
			row{"  by outcome, " + c + ": engine / native (p50)", func(s string) string {
				a, aok := res.get("Decide/"+s, c+"-p50-ns")
				b, bok := res.get("Native/"+s, c+"-p50-ns")
				return ratio(a, aok, b, bok)
			}},
		)
	}
	rows = append(rows, pathRows(res)...)
	shapes := []string{"M", "L"}
	w := 0
	for _, r := range rows {
		w = max(w, len([]rune(r.label)))
	}
	fmt.Printf("%-*s  %16s  %16s\n", w, "measure (median of runs)", "M", "L")
	fmt.Printf("%s  %s  %s\n", strings.Repeat("-", w), strings.Repeat("-", 16), strings.Repeat("-", 16))
	for _, r := range rows {
		fmt.Printf("%-*s  %16s  %16s\n", w, r.label, r.cell(shapes[0]), r.cell(shapes[1]))
	}
	a, aok := res.get("Decide/L", "p50-ns")
	b, bok := res.get("Decide/M", "p50-ns")
	fmt.Printf("\nL p50 / M p50: %s   runs per figure: %d   %s\n", ratio(a, aok, b, bok), res.runs("Decide/M", "p50-ns"), strings.Join(context, "; "))
	sessionTable(res)
}

// sessionTable prints the cost of the session policy's steps (write
// budgets and loop breakers, data-flow rules) on one call, each against
// the same call without them (policy_test's BenchmarkBudgetDecide and
// BenchmarkFlowDecide, a small config), when the input has them.
func sessionTable(res results) {
	rows := []struct{ label, bench, base string }{
		{"a write, no budget (the common call)", "BudgetDecide/unbudgeted", ""},
		{"a write a budget and a loop breaker count", "BudgetDecide/budgeted", "BudgetDecide/unbudgeted"},
		{"a call, no flow rules (the common call)", "FlowDecide/no-rules", ""},
		{"flow rules: a call no rule judges or remembers", "FlowDecide/unlabelled", "FlowDecide/no-rules"},
		{"flow rules: a call whose label is remembered", "FlowDecide/remembered", "FlowDecide/no-rules"},
		{"flow rules: a call a rule judges", "FlowDecide/judged", "FlowDecide/no-rules"},
	}
	if _, ok := res.get(rows[0].bench, "ns/op"); !ok {
		return
	}
	w := 0
	for _, r := range rows {
		w = max(w, len([]rune(r.label)))
	}
	fmt.Printf("\n%-*s  %12s  %10s  %18s\n", w, "session policy, one decision (median of runs)", "time", "allocs/op", "× the common call")
	fmt.Printf("%s  %s  %s  %s\n", strings.Repeat("-", w), strings.Repeat("-", 12), strings.Repeat("-", 10), strings.Repeat("-", 18))
	for _, r := range rows {
		t, tok := res.get(r.bench, "ns/op")
		al, aok := res.get(r.bench, "allocs/op")
		x := ""
		if r.base != "" {
			bt, bok := res.get(r.base, "ns/op")
			x = ratio(t, tok, bt, bok)
		}
		fmt.Printf("%-*s  %12s  %10s  %18s\n", w, r.label, us(t, tok), num(al, aok, ""), x)
	}
}

// pathRows are the figures of BenchmarkDecidePaths (M only): a call that a
// path rule checks, with the rule as a regular expression and in path form
// (pathWithin), on the same calls; the trick calls the path form refuses;
// and the native baseline on the path form, measured in the same process.
func pathRows(res results) []row {
	get := func(form, unit string) func(string) string {
		return func(s string) string { return us(res.get("DecidePaths/"+s+"/"+form, unit)) }
	}
	ratioOf := func(a, b, unit string) func(string) string {
		return func(s string) string {
			x, xok := res.get("DecidePaths/"+s+"/"+a, unit)
			y, yok := res.get("DecidePaths/"+s+"/"+b, unit)
			return ratio(x, xok, y, yok)
		}
	}
	alloc := func(form string) func(string) string {
		return func(s string) string {
			v, ok := res.get("DecidePaths/"+s+"/"+form, "allocs/op")
			return num(v, ok, "")
		}
	}
	return []row{
		{"path-checked calls, rule as a regex: p50", get("regex", "p50-ns")},
		{"path-checked calls, regex: allocs/op", alloc("regex")},
		{"path-checked calls, pathWithin: allocs/op", alloc("pathWithin")},
		{"path-checked calls, rule as pathWithin: p50", get("pathWithin", "p50-ns")},
		{"path-checked calls, pathWithin: p99", get("pathWithin", "p99-ns")},
		{"path-checked calls, pathWithin / regex (p50)", ratioOf("pathWithin", "regex", "p50-ns")},
		{"path-checked calls, pathWithin / native (p50)", ratioOf("pathWithin", "native", "p50-ns")},
		{"  pathWithin, allow: p50", get("pathWithin", "allow-p50-ns")},
		{"  regex, allow: p50", get("regex", "allow-p50-ns")},
		{"  pathWithin, deny:argument_rules: p50", get("pathWithin", "deny:argument_rules-p50-ns")},
		{"  regex, deny:argument_rules: p50", get("regex", "deny:argument_rules-p50-ns")},
		{"  path tricks refused by pathWithin: p50", get("tricks", "deny:argument_rules-p50-ns")},
		{"  argument-rule refusals alone, regex: p50", get("regex-refusals", "p50-ns")},
		{"  argument-rule refusals alone, pathWithin: p50", get("pathWithin-refusals", "p50-ns")},
		{"  argument-rule refusals alone, regex: allocs/op", alloc("regex-refusals")},
		{"  argument-rule refusals alone, pathWithin: allocs/op", alloc("pathWithin-refusals")},
		{"  path tricks: allocs/op", alloc("tricks")},
		{"  native on the path form, allow: p50", get("native", "allow-p50-ns")},
	}
}
