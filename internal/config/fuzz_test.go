package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/config/schemarego"
)

// wholeFile are the errors about a file as a whole, which have no line:
// the file cannot be read, or holds nothing.
var wholeFile = []string{"cannot read config file", "config file holds no settings", "cannot read conf.d folder", "cannot read catalog", `catalog has no "servers" object`}

// FuzzLoad feeds the loader hostile configuration from every source it
// reads — a main file, a conf.d file (a later layer), MCPX_POLICY_*
// variables and a tool catalog — with the real schema compiler and
// example evaluator. The property: Load returns a config or refuses it,
// never panics, and every error names its source: a file and a line (an
// error about a whole file — unreadable, empty — has no line; one about a
// catalog's member names its path in the catalog), the variable, or the
// flags; every warning names its file too.
//
//	go test ./internal/config/ -run '^$' -fuzz FuzzLoad -fuzztime 10m -fuzzminimizetime 5s -parallel 1
//
// (An input that finds new code is minimized before the run goes on; at
// the loader's pace the default minute of that looks like a stall.)
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"../../examples/mcpx-policy.yaml", "../../examples/mcpx-policy-overrides.yaml"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), "", "", "")
	}
	cat, err := os.ReadFile("../../examples/catalog.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("version: 1\npolicy:\n  unknownArgs: reject\n  exemptArgs: [cursor]\nservers:\n  fs:\n    writePolicy: deny\n",
		"version: 1\npolicy:\n  exemptArgs: [path]\nservers:\n  fs:\n    writePolicy: allow\n    unknownArgsTools:\n      - {tools: [\"read_*\"], mode: off}\n",
		"MCPX_POLICY_POLICY_WRITE=allow\nMCPX_POLICY_SERVERS_FS_ENFORCE=shadow", string(cat))
	f.Add("version: 1\nledger: {store: postgres, dsnEnv: A}\n", "version: 1\nledger: {store: postgres, dsnEnv: B}\n", "A=dbname=a\nB=dbname=b", "")
	f.Add("version: 1\nservers:\n  fs:\n    argumentRules:\n      - id: r\n        tools: [w]\n        argument: /a/0/b\n        schema: {type: string, pattern: \"^/w/\"}\n        examples: {valid: [/w/x], invalid: [/etc]}\n",
		"version: 1\npool:\n  hiddenTools: [\"del[a-\"]\n", "MCPX_POLICY_POOL_PINTOOLS=sometimes", "{\"servers\": {\"fs\": {\"tools\": [{\"name\": \"w\"}]}}}")
	f.Add("a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n", "version: 2\n", "MCPX_POLICY_POLICY_X=1", "[")
	f.Add("version: 1\n\x00", "", "MCPX_POLICY_SERVERS_NOPE_WRITEPOLICY=deny", "{}")
	f.Fuzz(func(t *testing.T, main, confd, env, catalog string) {
		dir := t.TempDir()
		write := func(name, body string) string {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}
		mainPath := write("main.yaml", main)
		files := map[string]bool{mainPath: true}
		if confd != "" {
			files[write("conf.d/50-later.yaml", confd)] = true
		}
		opts := config.LoadOptions{Paths: []string{mainPath}, Env: []string{}, SchemaCompiler: schemarego.Compile, RuleEvaluator: schemarego.Evaluate}
		for _, kv := range strings.Split(env, "\n") {
			if kv != "" {
				opts.Env = append(opts.Env, kv)
			}
		}
		if catalog != "" {
			opts.Catalog = write("catalog.json", catalog)
			files[opts.Catalog] = true
		}
		c, err := config.Load(opts)
		if err == nil {
			if c == nil {
				t.Fatal("no error and no config")
			}
			for _, w := range c.Warnings {
				if w.File == "" {
					t.Errorf("warning without a file: %s", w)
				}
			}
			return
		}
		if c != nil {
			t.Fatalf("a config and an error: %v", err)
		}
		var ces config.ConfigErrors
		if !errors.As(err, &ces) {
			t.Fatalf("not ConfigErrors: %T %v", err, err)
		}
		for _, e := range ces {
			switch {
			case e.File == "":
				t.Errorf("error without a source: %v", e)
			case strings.HasPrefix(e.File, "env $"), e.File == "flags":
			case files[e.File] || strings.HasPrefix(e.File, dir):
				if e.Line > 0 || (e.File == opts.Catalog && e.Path != "") {
					continue // a catalog's member is named by its path
				}
				whole := false
				for _, w := range wholeFile {
					whole = whole || strings.HasPrefix(e.Msg, w)
				}
				if !whole {
					t.Errorf("error without a line: %v", e)
				}
			default:
				t.Errorf("error names a file it did not read: %v", e)
			}
		}
	})
}
