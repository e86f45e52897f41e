// Package bench holds the reference workloads (docs/performance.md) and the harness
// that measures the embedded engine against a native Go baseline, a
// json.match_schema policy and a stock OPA server. Workloads are generated
// deterministically from their shape: the same Shape always gives the same
// config, catalog and calls.
package bench

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/engine"
)

// Shape sizes a workload.
type Shape struct {
	Name      string
	Servers   int
	Tools     int // per server
	Rules     int // argument rules in all (pool and servers)
	PoolRules int
	Calls     int // distinct calls
}

// The reference shapes (docs/performance.md).
var (
	M = Shape{Name: "M", Servers: 20, Tools: 50, Rules: 200, PoolRules: 5, Calls: 2000}
	L = Shape{Name: "L", Servers: 200, Tools: 100, Rules: 2000, PoolRules: 5, Calls: 2000}
)

// Rule is one argument rule as the generator wrote it (the native baseline
// and the json.match_schema policy read these).
type Rule struct {
	ID          string
	Server      string   // "" for a pool rule
	Tools       []string // patterns as written: exact, glob or /re/
	Argument    string   // "" for the whole arguments object
	Required    bool
	Description string
	Schema      map[string]any
}

// Server is one server's settings as the generator wrote them.
type Server struct {
	Name        string
	Write       string // writePolicy
	UnknownArgs string
	Hidden      []string
	WriteTools  []string
	Tools       []decision.Tool
}

// Workload is a generated config, its catalog and a set of distinct calls.
type Workload struct {
	Shape   Shape
	Servers []Server
	Rules   []Rule
	Exempt  []string
	Calls   []decision.Call
}

var verbs = []string{"read", "list", "write", "edit", "delete"}

// Generate builds the workload of s. It is deterministic.
func Generate(s Shape) *Workload {
	w := &Workload{Shape: s, Exempt: []string{"cursor"}}
	modes := []string{"allow", "ask", "allow", "deny"}
	uas := []string{"warn", "reject", "off"}
	for i := 0; i < s.Servers; i++ {
		srv := Server{
			Name:        fmt.Sprintf("srv%03d", i),
			Write:       modes[i%len(modes)],
			UnknownArgs: uas[i%len(uas)],
			Hidden:      []string{"delete_4*", "admin_tool"},
			WriteTools:  []string{"/^list_1/"},
		}
		for j := 0; j < s.Tools; j++ {
			srv.Tools = append(srv.Tools, tool(fmt.Sprintf("%s_%02d", verbs[j%len(verbs)], j)))
		}
		w.Servers = append(w.Servers, srv)
	}
	for k := 0; k < s.Rules; k++ {
		r := rule(k)
		if k < s.PoolRules {
			r.ID = fmt.Sprintf("pool-%d", k)
		} else {
			srv := w.Servers[(k-s.PoolRules)%s.Servers]
			r.Server = srv.Name
			r.ID = fmt.Sprintf("%s-r%d", srv.Name, k)
			r.Tools = serverPatterns(k, s.Tools)
		}
		w.Rules = append(w.Rules, r)
	}
	for c := 0; c < s.Calls; c++ {
		w.Calls = append(w.Calls, w.Call(c))
	}
	return w
}

// Call returns the workload's call number i: a server and tool drawn at
// random and about 1 KB of arguments, every field depending on i, so calls
// with different numbers are distinct calls (different canonical hashes).
func (w *Workload) Call(i int) decision.Call {
	rng := rand.New(rand.NewPCG(uint64(i), 0x6d637078))
	srv := w.Servers[rng.IntN(len(w.Servers))]
	t := srv.Tools[rng.IntN(len(srv.Tools))]
	return decision.Call{Server: srv.Name, Tool: t, Args: args(rng, i)}
}

func tool(name string) decision.Tool {
	t, f := true, false
	var ann *decision.Annotations
	switch {
	case strings.HasPrefix(name, "read") || strings.HasPrefix(name, "list"):
		ann = &decision.Annotations{ReadOnlyHint: &t}
	case strings.HasPrefix(name, "delete"):
		ann = &decision.Annotations{ReadOnlyHint: &f, DestructiveHint: &t}
	default:
		ann = &decision.Annotations{ReadOnlyHint: &f, DestructiveHint: &f}
	}
	str := map[string]any{"type": "string"}
	return decision.Tool{Name: name, Annotations: ann, InputSchema: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path": str, "content": str, "mode": str, "count": map[string]any{"type": "integer"},
			"ratio": map[string]any{"type": "number"}, "tags": map[string]any{"type": "array", "items": str},
			"options": map[string]any{"type": "object", "properties": map[string]any{
				"force": map[string]any{"type": "boolean"}, "depth": map[string]any{"type": "integer"},
				"encoding": str,
			}},
			"meta":   map[string]any{"type": "object", "additionalProperties": true},
			"cursor": str,
		},
		"required": []any{"path"},
	}}
}

// serverPatterns picks the tool patterns of server rule k: exact names,
// globs and regexes in turn.
func serverPatterns(k, tools int) []string {
	switch k % 4 {
	case 0:
		return []string{fmt.Sprintf("write_%02d", (k*5+2)%tools), fmt.Sprintf("edit_%02d", (k*5+3)%tools)}
	case 1:
		return []string{"write_*"}
	case 2:
		return []string{"/^(read|list)_[0-4]/"}
	default:
		return []string{"edit_*", fmt.Sprintf("read_%02d", (k*5)%tools)}
	}
}

// rule returns the k-th rule's schema, from a rotation of templates that
// together use the supported keywords; the numbers vary with k so every
// rule has its own schema (its own generated package).
func rule(k int) Rule {
	n := 4096 + k
	var r Rule
	switch k % 10 {
	case 0:
		r = Rule{Description: "writes stay in the workspace", Schema: obj(
			"properties", obj("path", obj("type", "string", "pattern", "^/(workspace|tmp)/", "maxLength", n)))}
	case 1:
		r = Rule{Argument: "count", Description: "bounded count", Schema: obj("type", "integer", "minimum", 0, "maximum", n)}
	case 2:
		r = Rule{Argument: "mode", Description: "known modes", Schema: obj("enum", []any{"overwrite", "append", "create", fmt.Sprintf("m%d", k)})}
	case 3:
		r = Rule{Argument: "tags", Description: "few short unique tags", Schema: obj("type", "array", "maxItems", 20+k%7, "uniqueItems", true,
			"items", obj("type", "string", "maxLength", 32, "minLength", 1))}
	case 4:
		r = Rule{Argument: "/options/force", Description: "no force", Schema: obj("const", false)}
	case 5:
		r = Rule{Argument: "content", Description: "no private keys in content", Schema: obj("type", "string", "maxLength", n*4,
			"not", obj("pattern", "BEGIN [A-Z]* ?PRIVATE KEY"))}
	case 6:
		r = Rule{Argument: "ratio", Description: "a percentage", Schema: obj("type", "number", "exclusiveMinimum", 0, "maximum", 100, "multipleOf", 0.01)}
	case 7:
		r = Rule{Description: "shape", Schema: obj("required", []any{"path"}, "dependentRequired", obj("content", []any{"path"}),
			"minProperties", 1, "maxProperties", 20+k%5, "propertyNames", obj("maxLength", 64))}
	case 8:
		r = Rule{Argument: "options", Description: "options", Schema: obj("type", "object",
			"properties", obj("depth", obj("type", "integer", "minimum", 0, "maximum", 10+k%9),
				"encoding", obj("anyOf", []any{obj("const", "utf-8"), obj("const", "base64"), obj("pattern", "^latin")})),
			"if", obj("properties", obj("force", obj("const", true)), "required", []any{"force"}),
			"then", obj("required", []any{"depth"}))}
	default:
		r = Rule{Argument: "tags", Description: "tags look sane", Schema: obj("type", "array",
			"prefixItems", []any{obj("type", "string", "pattern", "^[a-z]")},
			"contains", obj("type", "string", "minLength", 2), "minContains", 1, "maxContains", 50+k%11,
			"oneOf", []any{obj("maxItems", 30), obj("minItems", 31)})}
	}
	// pool rules apply to every tool; server rules get patterns from Generate.
	r.Tools = []string{"*"}
	if k%10 == 1 {
		r.Tools = []string{"write_*", "edit_*"}
	}
	return r
}

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

var words = strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")

// args builds about 1 KB of arguments. Most calls pass every rule; some
// break one (a path outside the workspace, a forced option, a duplicate tag,
// a private key in the content) and some carry an unknown key.
func args(rng *rand.Rand, c int) map[string]any {
	var content strings.Builder
	for content.Len() < 600 {
		content.WriteString(words[rng.IntN(len(words))])
		content.WriteByte(' ')
	}
	tags := []any{}
	for i := 0; i < 8; i++ {
		tags = append(tags, fmt.Sprintf("%s%d", words[rng.IntN(len(words))], i))
	}
	a := map[string]any{
		"path":    fmt.Sprintf("/workspace/project%d/src/file_%d.go", c%37, c),
		"content": content.String(),
		"mode":    []string{"overwrite", "append", "create"}[rng.IntN(3)],
		"count":   json.Number(fmt.Sprint(rng.IntN(900))),
		"ratio":   json.Number(fmt.Sprintf("%d.%02d", rng.IntN(99), rng.IntN(100))),
		"tags":    tags,
		"options": map[string]any{"force": false, "depth": json.Number(fmt.Sprint(rng.IntN(8))), "encoding": "utf-8"},
		"meta":    map[string]any{"request": fmt.Sprintf("req-%06d", c), "attempt": json.Number("1")},
	}
	switch rng.IntN(20) {
	case 0:
		a["path"] = fmt.Sprintf("/etc/conf%d", c)
	case 1:
		a["options"].(map[string]any)["force"] = true
	case 2:
		a["tags"] = append(tags, tags[0])
	case 3:
		a["content"] = "-----BEGIN RSA PRIVATE KEY-----\nMIIE" + content.String()
	case 4:
		a["verbose"] = true
	case 5:
		a["cursor"] = "c1"
	}
	return a
}

// ConfigYAML renders the workload's config. Schemas are JSON, which is
// YAML, one rule per few lines so origins name real lines.
func (w *Workload) ConfigYAML() []byte {
	var b strings.Builder
	j := func(v any) string {
		out, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return string(out)
	}
	fmt.Fprintf(&b, "version: 1\npolicy:\n  write: ask\n  confirmDestructive: true\n  unknownArgs: warn\n  exemptArgs: %s\n", j(w.Exempt))
	b.WriteString("pool:\n  hiddenTools: [\"admin_*\"]\n  writeTools: []\n  argumentRules:\n")
	writeRules := func(indent string, rules []Rule) {
		for _, r := range rules {
			fmt.Fprintf(&b, "%s- id: %s\n%s  tools: %s\n%s  description: %s\n", indent, r.ID, indent, j(r.Tools), indent, r.Description)
			if r.Argument != "" {
				fmt.Fprintf(&b, "%s  argument: %s\n", indent, j(r.Argument))
			}
			if r.Required {
				fmt.Fprintf(&b, "%s  required: true\n", indent)
			}
			fmt.Fprintf(&b, "%s  schema: %s\n", indent, j(r.Schema))
		}
	}
	writeRules("    ", w.RulesOf(""))
	b.WriteString("servers:\n")
	for _, s := range w.Servers {
		fmt.Fprintf(&b, "  %s:\n    writePolicy: %s\n    unknownArgs: %s\n    hiddenTools: %s\n    writeTools: %s\n",
			s.Name, s.Write, s.UnknownArgs, j(s.Hidden), j(s.WriteTools))
		if rs := w.RulesOf(s.Name); len(rs) > 0 {
			b.WriteString("    argumentRules:\n")
			writeRules("      ", rs)
		}
	}
	return []byte(b.String())
}

// RulesOf returns the rules of server ("" for the pool) in config order.
func (w *Workload) RulesOf(server string) []Rule {
	var out []Rule
	for _, r := range w.Rules {
		if r.Server == server {
			out = append(out, r)
		}
	}
	return out
}

// WriteConfig writes the config into dir as mcpx-policy.yaml and returns
// its path.
func (w *Workload) WriteConfig(dir string) (string, error) {
	p := filepath.Join(dir, "mcpx-policy.yaml")
	return p, os.WriteFile(p, w.ConfigYAML(), 0o644)
}

// Options writes the config into dir and returns the SDK options that load
// it like an operator's, with no environment layer and the ledger in
// dir/state.
func (w *Workload) Options(dir string) (mcpxpolicy.Options, error) {
	cfg, err := w.WriteConfig(dir)
	if err != nil {
		return mcpxpolicy.Options{}, err
	}
	return mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: filepath.Join(dir, "state")}, nil
}

// Variant gives call i of a workload the variations a gateway sees beyond
// the generated calls, for the equivalence tests: a caller's write mode, a ledger with an entry for
// the server or one that cannot be read, a tool without annotations.
func Variant(i int, c decision.Call) (decision.Call, *engine.Ledger) {
	led := &engine.Ledger{}
	switch {
	case i%3 == 1:
		c.Mode = []string{"ask", "allow", "deny"}[i%9/3]
	case i%13 == 0:
		led.Entries = []decision.LedgerEntry{{ID: "e1", Server: c.Server, Tool: c.Tool.Name, ArgsSHA256: "ab12", Time: "2026-11-30T10:00:00Z", Surface: "mcp"}}
		led.Total = 3
	case i%17 == 0:
		led.Unreadable = "corrupt or unreadable"
	case i%19 == 0:
		c.Tool.Annotations = nil
	}
	return c, led
}
