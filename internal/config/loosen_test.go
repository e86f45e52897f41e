package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// TestLooseningIsNeverSilent: every layer after the first main file may
// make a setting less strict, and each time it does the load says so: the
// setting, the value and origin it replaced, the new value at its origin.
// Tightening, and whatever the first file sets, says nothing.
func TestLooseningIsNeverSilent(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.yaml": `version: 1
policy:
  write: deny
  unknownArgs: reject
  confirmDestructive: true
servers:
  fs:
    writePolicy: deny
    unknownArgs: reject
  git:
    writePolicy: ask
`,
		"extra.yaml": `version: 1
policy:
  write: ask
`,
		"conf.d/50-dev.yaml": `version: 1
policy:
  confirmDestructive: false
servers:
  fs:
    writePolicy: allow
  new:
    writePolicy: allow
  git:
    unknownArgs: reject
`,
	}
	opts := config.LoadOptions{
		Paths: []string{"main.yaml", "extra.yaml"},
		Env: []string{
			"MCPX_POLICY_POLICY_WRITE=deny", // tightens ask: no warning
			"MCPX_POLICY_POLICY_UNKNOWNARGS=off",
			"MCPX_POLICY_SERVERS_FS_UNKNOWNARGS=warn",
		},
		Set: map[string]string{"policy.write": "ask", "servers.git.writePolicy": "allow"},
	}
	c, err, dir := load(t, files, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c, dir,
		`extra.yaml:3: policy.write: loosened from deny (main.yaml:3) to ask by a later layer`,
		`conf.d/50-dev.yaml:3: policy.confirmDestructive: loosened from true (main.yaml:5) to false by a later layer`,
		`conf.d/50-dev.yaml:6: servers.fs.writePolicy: loosened from deny (main.yaml:8) to allow by a later layer`,
		`conf.d/50-dev.yaml:8: servers.new.writePolicy: loosened from ask (extra.yaml:3) to allow by a later layer`,
		`env $MCPX_POLICY_POLICY_UNKNOWNARGS: policy.unknownArgs: loosened from reject (main.yaml:4) to off by a later layer`,
		`env $MCPX_POLICY_SERVERS_FS_UNKNOWNARGS: servers.fs.unknownArgs: loosened from reject (main.yaml:9) to warn by a later layer`,
		`flags: policy.write: loosened from deny (env $MCPX_POLICY_POLICY_WRITE) to ask by a later layer`,
		`flags: servers.git.writePolicy: loosened from ask (main.yaml:11) to allow by a later layer`,
	)
	// The warnings describe the config the load compiled.
	cfg := configData(t, c)
	if cfg["write"] != "ask" || cfg["unknownArgs"] != "off" || cfg["confirmDestructive"] != false ||
		get(t, cfg, "servers", "fs", "write") != "allow" || get(t, cfg, "servers", "git", "write") != "allow" {
		t.Errorf("compiled config %s", jsonOf(t, cfg))
	}
}

// TestNoLooseningNoWarning: the first main file is the base, whatever it
// sets against the defaults, and a later layer that tightens or repeats a
// value is silent.
func TestNoLooseningNoWarning(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.yaml":          "version: 1\npolicy:\n  write: allow\n  unknownArgs: off\nservers:\n  fs:\n    writePolicy: allow\n",
		"conf.d/10-ops.yaml": "version: 1\npolicy:\n  write: allow\n  confirmDestructive: true\nservers:\n  fs:\n    writePolicy: ask\n",
	}
	c, err, dir := load(t, files, config.LoadOptions{
		Env: []string{"MCPX_POLICY_POLICY_UNKNOWNARGS=warn", "MCPX_POLICY_SERVERS_FS_WRITEPOLICY=deny"},
		Set: map[string]string{"policy.confirmDestructive": "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range c.Warnings {
		t.Errorf("unexpected warning %s", rel(dir, w.String()))
	}
}

// TestLooseningByToolPattern: an unknownArgsTools entry of a later layer
// that gives its tools a less strict mode than they had — an earlier entry
// for the same pattern, else the server's mode (for the pool, which comes
// before every server's own mode, the strictest of them) — is a loosening.
func TestLooseningByToolPattern(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.yaml": `version: 1
policy:
  unknownArgs: warn
servers:
  fs:
    unknownArgs: reject
    unknownArgsTools:
      - {tools: [read_*], mode: reject}
  git:
    unknownArgsTools:
      - {tools: [log], mode: off}
`,
		"conf.d/50-dev.yaml": `version: 1
pool:
  unknownArgsTools:
    - {tools: ["*"], mode: warn}
servers:
  fs:
    unknownArgsTools:
      - {tools: [read_*], mode: warn}
  git:
    unknownArgsTools:
      - {tools: [log], mode: warn}
      - {tools: [diff], mode: off}
`,
	}
	c, err, dir := load(t, files, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c, dir,
		`conf.d/50-dev.yaml:4: pool.unknownArgsTools[0].tools[0]: loosened from reject (main.yaml:6) to warn by a later layer`,
		`conf.d/50-dev.yaml:8: servers.fs.unknownArgsTools[0].tools[0]: loosened from reject (main.yaml:8) to warn by a later layer`,
		`conf.d/50-dev.yaml:12: servers.git.unknownArgsTools[1].tools[0]: loosened from warn (main.yaml:3) to off by a later layer`,
	)
}

// TestShadowIsALoosening: shadow lets a call the policy refuses go ahead,
// so a later layer that puts the policy or a server in shadow mode is a
// loosening (enforce > shadow), said at its origin; the first file's
// shadow and a later layer's enforce are silent. The compiled config keeps
// policy.enforce always and a server's enforce where set.
func TestShadowIsALoosening(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.yaml": `version: 1
policy:
  enforce: enforce
servers:
  fs: {}
  git:
    enforce: shadow
  web: {}
`,
		"conf.d/50-try.yaml": `version: 1
servers:
  fs:
    enforce: shadow
  git:
    enforce: enforce
`,
	}
	c, err, dir := load(t, files, config.LoadOptions{
		Env: []string{"MCPX_POLICY_SERVERS_WEB_ENFORCE=shadow"},
		Set: map[string]string{"policy.enforce": "shadow"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c, dir,
		`conf.d/50-try.yaml:4: servers.fs.enforce: loosened from enforce (main.yaml:3) to shadow by a later layer`,
		`env $MCPX_POLICY_SERVERS_WEB_ENFORCE: servers.web.enforce: loosened from enforce (main.yaml:3) to shadow by a later layer`,
		`flags: policy.enforce: loosened from enforce (main.yaml:3) to shadow by a later layer`,
	)
	cfg := configData(t, c)
	if cfg["enforce"] != "shadow" || get(t, cfg, "servers", "fs", "enforce") != "shadow" ||
		get(t, cfg, "servers", "git", "enforce") != "enforce" || get(t, cfg, "servers", "web", "enforce") != "shadow" {
		t.Errorf("compiled config %s", jsonOf(t, cfg))
	}
}

// TestShadowDefault: without an enforce key the policy enforces, and a
// server without its own has no enforce in the compiled config.
func TestShadowDefault(t *testing.T) {
	t.Parallel()
	c, err, _ := load(t, map[string]string{"main.yaml": "version: 1\nservers:\n  fs: {}\n"}, config.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := configData(t, c)
	if cfg["enforce"] != "enforce" {
		t.Errorf("policy enforce = %v; want enforce", cfg["enforce"])
	}
	if _, ok := get(t, cfg, "servers", "fs").(map[string]any)["enforce"]; ok {
		t.Errorf("servers.fs has an enforce it was not given: %s", jsonOf(t, cfg))
	}
}

// TestListsAndLedgerLoosenNeverSilently: the two loosenings a later layer
// could make without a word — an exemptArgs key that turns an
// UnknownArguments deny into an allow, and a ledger section that points
// at another database (the unknown outcomes of the one before stop
// blocking writes) — are warnings at their origin; the same key or the
// same database again is not.
func TestListsAndLedgerLoosenNeverSilently(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.yaml": `version: 1
policy:
  unknownArgs: reject
  exemptArgs: [cursor]
servers:
  fs:
    exemptArgs: [fields]
ledger:
  store: postgres
  dsnEnv: LEDGER_DSN
`,
		"conf.d/50-dev.yaml": `version: 1
policy:
  exemptArgs: [cursor, path]
servers:
  fs:
    exemptArgs: [fields, cursor, content]
ledger:
  store: postgres
  dsnEnv: OTHER_DSN
`,
	}
	c, err, dir := load(t, files, config.LoadOptions{Env: []string{"LEDGER_DSN=dbname=real", "OTHER_DSN=dbname=scratch"}})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c, dir,
		`conf.d/50-dev.yaml:3: policy.exemptArgs[1]: loosened by a later layer: adds "path", an argument key the unknown-arguments check never reports`,
		`conf.d/50-dev.yaml:6: servers.fs.exemptArgs[2]: loosened by a later layer: adds "content", an argument key the unknown-arguments check never reports`,
		`conf.d/50-dev.yaml:8: ledger: ledger store postgres at the connection string in $OTHER_DSN replaces the one at the connection string in $LEDGER_DSN set at main.yaml:9: writes are checked against another ledger`,
	)
	if strings.Contains(fmt.Sprint(c.Warnings), "dbname=") {
		t.Errorf("a warning shows a connection string: %v", c.Warnings)
	}
}
