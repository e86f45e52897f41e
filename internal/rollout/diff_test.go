package rollout_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
	"github.com/mcpx/mcpx-policy/internal/rollout"
)

// asWritten loads a config (one file, no environment) into the Snapshot
// of a diff without a catalog.
func asWritten(t *testing.T, dir, name, yaml string) rollout.Snapshot {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.LoadOptions{Paths: []string{path}, Env: []string{}, SchemaCompiler: schemarego.Compile, RuleEvaluator: schemarego.Evaluate})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := c.Data["config"].(map[string]any)
	return rollout.Snapshot{Config: cfg, Overrides: map[string]string{}}
}

// changeLines are the change lines of the text rendering, each prefixed
// by its subject: "server fs: loosening write mode ask -> allow".
func changeLines(text string) []string {
	var out []string
	subject := ""
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n")[1:] {
		switch {
		case strings.HasPrefix(l, "  "):
			out = append(out, subject+": "+strings.Join(strings.Fields(l), " "))
		case strings.Contains(l, " changes: ") || strings.HasPrefix(l, "1 change: ") || l == "no change":
		default:
			subject = l
		}
	}
	return out
}

// TestCompareAsWritten: without a catalog each server (and the servers
// neither config names) is compared as written, and each change goes the
// way the loader's strictness order says.
func TestCompareAsWritten(t *testing.T) {
	t.Parallel()
	const base = `version: 1
policy:
  write: ask
  unknownArgs: warn
pool:
  hiddenTools: ["debug_*"]
  argumentRules:
    - id: no-force
      tools: [git_push]
      argument: force
      schema: {const: false}
servers:
  fs:
    writePolicy: deny
    unknownArgs: reject
    hiddenTools: ["move_*"]
    argumentRules:
      - id: ws
        tools: [write_file]
        schema: {properties: {path: {pattern: "^/workspace/"}}}
`
	cases := []struct {
		name string
		new  string
		want []string
	}{
		{"the same config", base, nil},
		{
			name: "a server's modes loosened",
			new:  strings.Replace(strings.Replace(base, "writePolicy: deny", "writePolicy: allow", 1), "unknownArgs: reject", "unknownArgs: off", 1),
			want: []string{"server fs: loosening write mode deny -> allow", "server fs: loosening unknown arguments reject -> off"},
		},
		{
			name: "the global mode tightened: every server without its own",
			new:  strings.Replace(base, "  write: ask", "  write: deny", 1),
			want: []string{"servers neither config names: tightening write mode ask -> deny"},
		},
		{
			name: "a hidden pattern removed, a rule's tools widened",
			new: strings.Replace(strings.Replace(base, `    hiddenTools: ["move_*"]
`, "", 1), "tools: [write_file]", "tools: [write_file, edit_file]", 1) + "",
			want: []string{
				`server fs: loosening hiddenTools pattern "move_*" removed`,
				`server fs: tightening rule ws (new.yaml:17): tools ["write_file"] -> ["edit_file","write_file"]`,
			},
		},
		{
			name: "a rule's schema edited, an exempt key added",
			new:  strings.Replace(base, `"^/workspace/"`, `"^/workspace/src/"`, 1) + "    exemptArgs: [format]\n",
			want: []string{
				`server fs: loosening argument "format" now exempt from the unknown-arguments check`,
				`server fs: changed rule ws (new.yaml:18): its schema changed`,
			},
		},
		{
			name: "a pool rule removed reaches every server",
			new:  strings.Replace(base, "  argumentRules:\n    - id: no-force\n      tools: [git_push]\n      argument: force\n      schema: {const: false}\n", "", 1),
			want: []string{
				"server fs: loosening rule no-force (old.yaml:8) no longer applies",
				"servers neither config names: loosening rule no-force (old.yaml:8) no longer applies",
			},
		},
		{
			name: "confirmDestructive and an unknownArgsTools entry",
			new:  strings.Replace(base, "  unknownArgs: warn\n", "  unknownArgs: warn\n  confirmDestructive: true\n", 1) + "    unknownArgsTools:\n      - {tools: [\"search_*\"], mode: off}\n",
			want: []string{
				`server fs: loosening unknownArgsTools "search_*": none (the server's mode) -> off`,
				"policy: tightening confirmDestructive false -> true",
			},
		},
		{
			// fs keeps enforcing (its own enforce), every other server
			// goes to shadow mode
			name: "shadow mode, for the policy and back to enforce for a server",
			new:  strings.Replace(base, "  unknownArgs: warn\n", "  unknownArgs: warn\n  enforce: shadow\n", 1) + "    enforce: enforce\n",
			want: []string{"servers neither config names: loosening enforcement enforce -> shadow"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			d := rollout.Compare(asWritten(t, dir, "old.yaml", base), asWritten(t, dir, "new.yaml", tc.new))
			// a rule's origin names its file as the policy does (its base
			// name here), never by the temp dir's path
			text := d.Text("old.yaml", "new.yaml", "")
			got := changeLines(text)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("changes:\n got: %s\nwant: %s\n\n%s", strings.Join(got, "\n      "), strings.Join(tc.want, "\n      "), text)
			}
			if d.Catalog || !strings.HasPrefix(text, "compared old.yaml -> new.yaml as written, per server (no --catalog") {
				t.Errorf("the text does not say the comparison is as written:\n%s", text)
			}
			if len(tc.want) == 0 && !strings.HasSuffix(text, "\nno change\n") {
				t.Errorf("no change, but the text ends:\n%s", text)
			}
		})
	}
}

// TestCompareModes: a server's effective enforce mode (its own, else the
// policy's) and pinTools mode (its own, else the pool's) are compared with
// a direction — shadow is looser than enforce, off < ask < deny — on every
// server a change reaches, in text and JSON.
func TestCompareModes(t *testing.T) {
	t.Parallel()
	const base = `version: 1
pool:
  pinTools: ask
servers:
  fs:
    pinTools: deny
    enforce: shadow
  git: {}
`
	cases := []struct {
		name string
		new  string
		want []string
	}{
		{"the same config", base, nil},
		{
			name: "the policy in shadow mode",
			new:  "version: 1\npolicy:\n  enforce: shadow\n" + strings.TrimPrefix(base, "version: 1\n"),
			want: []string{"server git: loosening enforcement enforce -> shadow", "servers neither config names: loosening enforcement enforce -> shadow"},
		},
		{
			name: "a server's own modes removed: it inherits the pool's and the policy's",
			new:  strings.Replace(base, "    pinTools: deny\n    enforce: shadow\n", "", 1),
			want: []string{"server fs: tightening enforcement shadow -> enforce", "server fs: loosening pinTools deny -> ask"},
		},
		{
			name: "the pool's pinTools from ask to deny",
			new:  strings.Replace(base, "  pinTools: ask\n", "  pinTools: deny\n", 1),
			want: []string{"server git: tightening pinTools ask -> deny", "servers neither config names: tightening pinTools ask -> deny"},
		},
		{
			name: "the pool stops pinning, a server pins with ask",
			new:  strings.Replace(strings.Replace(base, "  pinTools: ask\n", "", 1), "  git: {}\n", "  git:\n    pinTools: ask\n", 1),
			want: []string{"servers neither config names: loosening pinTools ask -> off"},
		},
		{
			name: "a server from deny to off, back to enforce",
			new:  strings.Replace(base, "    pinTools: deny\n    enforce: shadow\n", "    pinTools: off\n    enforce: enforce\n", 1),
			want: []string{"server fs: tightening enforcement shadow -> enforce", "server fs: loosening pinTools deny -> off"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			d := rollout.Compare(asWritten(t, dir, "old.yaml", base), asWritten(t, dir, "new.yaml", tc.new))
			got := changeLines(d.Text("old.yaml", "new.yaml", ""))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("changes:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(tc.want, "\n      "))
			}
			for _, c := range d.Changes {
				if c.Direction == rollout.Changed {
					t.Errorf("a mode change without a direction: %+v", c)
				}
			}
		})
	}
	// With a catalog, each catalog server — one neither config names too —
	// gets its modes compared once, beside its tools' changes.
	t.Run("catalog", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		old, new := asWritten(t, dir, "old.yaml", base), asWritten(t, dir, "new.yaml", strings.Replace(base, "  pinTools: ask\n", "  pinTools: deny\n", 1))
		tools := map[string]map[string]rollout.ToolFacts{"fs": {"read_file": {}}, "git": {"git_log": {}}, "web": {"fetch": {}}}
		old.Tools, new.Tools = tools, tools
		got := changeLines(rollout.Compare(old, new).Text("old.yaml", "new.yaml", "catalog.json"))
		want := []string{"server git: tightening pinTools ask -> deny", "server web: tightening pinTools ask -> deny"}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("changes:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
		}
	})
	t.Run("json", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		d := rollout.Compare(asWritten(t, dir, "old.yaml", base), asWritten(t, dir, "new.yaml", strings.Replace(base, "    pinTools: deny\n    enforce: shadow\n", "", 1)))
		b, err := json.Marshal(d.Changes)
		if err != nil {
			t.Fatal(err)
		}
		const want = `[{"server":"fs","field":"enforce","old":"shadow","new":"enforce","direction":"tightening"},` +
			`{"server":"fs","field":"pinTools","old":"deny","new":"ask","direction":"loosening"}]`
		if string(b) != want {
			t.Errorf("JSON changes:\n got %s\nwant %s", b, want)
		}
	})
}
