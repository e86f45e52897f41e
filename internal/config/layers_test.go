package config_test

import (
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// layerFiles: two main files and conf.d fragments written out of order.
var layerFiles = map[string]string{
	"main.yaml": `version: 1
policy:
  write: ask
  unknownArgs: warn
  exemptArgs: [cursor]
servers:
  fs:
    writePolicy: ask
    hiddenTools: [a]
`,
	"extra.yaml": `version: 1
policy:
  write: deny
servers:
  fs:
    hiddenTools: [b]
  my-git.v2:
    unknownArgs: reject
`,
	"conf.d/20-b.yaml": `version: 1
policy:
  write: allow
  exemptArgs: [fields, cursor]
servers:
  fs:
    hiddenTools: [d]
`,
	"conf.d/10-a.yaml": `version: 1
policy:
  write: deny
  confirmDestructive: true
servers:
  fs:
    writePolicy: deny
    hiddenTools: [c]
    unknownArgsTools:
      - {tools: [x], mode: reject}
pool:
  unknownArgsTools:
    - {tools: [y], mode: "no"}
`,
	"conf.d/30-c.yaml": "servers:\n  fs:\n    unknownArgsTools:\n      - {tools: [x], mode: warn}\nversion: 1\n",
	"conf.d/notes.txt": "not: [yaml",
	"conf.d/skip.yml":  "not: [yaml",
}

func TestLayering(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		env  []string
		set  map[string]string
		// expectations
		write, ua, fsWrite, gitUA string
		confirm                   bool
	}{
		{
			name: "files and conf.d in lexical order", write: "allow", ua: "warn", fsWrite: "deny", gitUA: "reject", confirm: true,
		},
		{
			name: "env over files",
			env: []string{
				"MCPX_POLICY_POLICY_UNKNOWNARGS=no", "MCPX_POLICY_POLICY_WRITE=ask",
				"MCPX_POLICY_POLICY_CONFIRMDESTRUCTIVE=false", "MCPX_POLICY_SERVERS_FS_WRITEPOLICY=allow",
				"MCPX_POLICY_SERVERS_MY_GIT_V2_UNKNOWNARGS=0", "MCPX_POLICY_STATE_DIR=/ignored", "OTHER=1",
			},
			write: "ask", ua: "off", fsWrite: "allow", gitUA: "off", confirm: false,
		},
		{
			name:  "flags over env",
			env:   []string{"MCPX_POLICY_POLICY_WRITE=ask", "MCPX_POLICY_SERVERS_FS_WRITEPOLICY=allow"},
			set:   map[string]string{"policy.write": "deny", "servers.fs.writePolicy": "ask", "servers.my-git.v2.unknownArgs": "warn", "policy.unknownArgs": "reject"},
			write: "deny", ua: "reject", fsWrite: "ask", gitUA: "warn", confirm: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := tc.env
			if env == nil {
				env = []string{}
			}
			c, err, _ := load(t, layerFiles, config.LoadOptions{Paths: []string{"main.yaml", "extra.yaml"}, Env: env, Set: tc.set})
			if err != nil {
				t.Fatal(err)
			}
			cfg := configData(t, c)
			if cfg["write"] != tc.write || cfg["unknownArgs"] != tc.ua || cfg["confirmDestructive"] != tc.confirm {
				t.Errorf("policy: write=%v unknownArgs=%v confirmDestructive=%v", cfg["write"], cfg["unknownArgs"], cfg["confirmDestructive"])
			}
			if got := get(t, cfg, "servers", "fs", "write"); got != tc.fsWrite {
				t.Errorf("fs write %v, want %s", got, tc.fsWrite)
			}
			if got := get(t, cfg, "servers", "my-git.v2", "unknownArgs"); got != tc.gitUA {
				t.Errorf("my-git.v2 unknownArgs %v, want %s", got, tc.gitUA)
			}
			// Lists add up in layer order: main files, then conf.d.
			if got := jsonOf(t, get(t, cfg, "servers", "fs", "hidden", "exact")); got != `{"a":["a"],"b":["b"],"c":["c"],"d":["d"]}` {
				t.Errorf("fs hidden %s", got)
			}
			if got := jsonOf(t, cfg["exemptArgs"]); got != `["cursor","fields"]` {
				t.Errorf("exemptArgs %s", got)
			}
			if got := jsonOf(t, get(t, cfg, "servers", "fs", "unknownArgsTools")); got != `[{"mode":"reject","re":"^x$","source":"x"},{"mode":"warn","re":"^x$","source":"x"}]` {
				t.Errorf("fs unknownArgsTools %s (want layer order, later last)", got)
			}
			if got := jsonOf(t, get(t, cfg, "pool", "unknownArgsTools")); got != `[{"mode":"off","re":"^y$","source":"y"}]` {
				t.Errorf("pool unknownArgsTools %s", got)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err, _ := load(t, map[string]string{"main.yaml": "version: 1\n"}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := jsonOf(t, map[string]any{"config": c.Data["config"]}) // codes and vocab: TestRegoDataIsTheGoTables
	want := `{"config":{"confirmDestructive":false,"enforce":"enforce","exemptArgs":[],"pool":{"hidden":{"exact":{},"regex":[]},"rules":{"exact":{},"regex":[]},"unknownArgsTools":[],"writeTools":{"exact":{},"regex":[]}},"rules":{},"servers":{},"unknownArgs":"warn","write":"ask"}}`
	if got != want {
		t.Errorf("defaults:\n got %s\nwant %s", got, want)
	}
	// No config file at all is the defaults too.
	c2, err := config.Load(config.LoadOptions{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(t, map[string]any{"config": c2.Data["config"]}) != want {
		t.Errorf("no files: %s", jsonOf(t, c2.Data))
	}
}

func TestUnknownArgsSpellings(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"off", "0", "false", "no", "NO", "False", `"0"`, `"no"`, "Off"} {
		c, err, _ := load(t, map[string]string{"main.yaml": "version: 1\npolicy:\n  unknownArgs: " + v + "\n"}, config.LoadOptions{})
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if got := configData(t, c)["unknownArgs"]; got != "off" {
			t.Errorf("unknownArgs: %s gave %v, want off", v, got)
		}
	}
	for _, v := range []string{"warn", "reject"} {
		c, err, _ := load(t, map[string]string{"main.yaml": "version: 1\nservers:\n  fs:\n    unknownArgs: " + v + "\n"}, config.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := get(t, configData(t, c), "servers", "fs", "unknownArgs"); got != v {
			t.Errorf("%s gave %v", v, got)
		}
	}
}

// TestYAMLAnchors: an anchored schema reused through an alias is the same
// schema, so both rules share one package.
func TestYAMLAnchors(t *testing.T) {
	t.Parallel()
	cfg := `version: 1
servers:
  fs:
    argumentRules:
      - id: a
        tools: [x]
        schema: &ws {properties: {path: {pattern: "^/workspace/"}}}
      - id: b
        tools: [y]
        schema: *ws
`
	fc := &fakeCompiler{}
	c, err, _ := load(t, map[string]string{"main.yaml": cfg}, config.LoadOptions{SchemaCompiler: fc.compile})
	if err != nil {
		t.Fatal(err)
	}
	rules := configData(t, c)["rules"].(map[string]any)
	if rules["a"].(map[string]any)["package"] != rules["b"].(map[string]any)["package"] || fc.n != 1 {
		t.Errorf("aliased schema compiled %d times: %v", fc.n, rules)
	}
}

func TestSetAddsServer(t *testing.T) {
	t.Parallel()
	c, err, _ := load(t, map[string]string{"main.yaml": "version: 1\n"}, config.LoadOptions{Set: map[string]string{"servers.new.writePolicy": "deny"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, get(t, configData(t, c), "servers", "new")); got != `{"exemptArgs":[],"hidden":{"exact":{},"regex":[]},"rules":{"exact":{},"regex":[]},"unknownArgsTools":[],"write":"deny","writeTools":{"exact":{},"regex":[]}}` {
		t.Errorf("servers.new = %s", got)
	}
}
