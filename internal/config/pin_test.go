package config_test

import (
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/config"
)

// TestPinTools: pinTools is off by default; the pool's applies to every
// server, a server's own replaces it; the environment and the flags set
// both; the compiled data and PinMode agree.
func TestPinTools(t *testing.T) {
	t.Parallel()
	files := map[string]string{"main.yaml": `version: 1
pool:
  pinTools: ask
servers:
  fs:
    pinTools: deny
  git: {}
  notes:
    pinTools: no
`}
	c, err, _ := load(t, files, config.LoadOptions{Paths: []string{"main.yaml"}, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	for server, want := range map[string]string{"fs": "deny", "git": "ask", "notes": "off", "unconfigured": "ask"} {
		if got := c.PinMode(server); got != want {
			t.Errorf("PinMode(%s) = %s; want %s", server, got, want)
		}
	}
	cfg := configData(t, c)
	if get(t, cfg, "pool", "pinTools") != "ask" || get(t, cfg, "servers", "fs", "pinTools") != "deny" || get(t, cfg, "servers", "notes", "pinTools") != "off" {
		t.Errorf("compiled config %s", jsonOf(t, cfg))
	}
	if _, ok := get(t, cfg, "servers", "git").(map[string]any)["pinTools"]; ok {
		t.Errorf("git sets no pinTools but its data has one: %s", jsonOf(t, cfg))
	}

	none, err, _ := load(t, map[string]string{"main.yaml": "version: 1\nservers:\n  fs: {}\n"}, config.LoadOptions{Paths: []string{"main.yaml"}, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := none.PinMode("fs"); got != "off" {
		t.Errorf("default PinMode = %s; want off", got)
	}

	c, err, _ = load(t, files, config.LoadOptions{Paths: []string{"main.yaml"},
		Env: []string{"MCPX_POLICY_SERVERS_GIT_PINTOOLS=deny", "MCPX_POLICY_POOL_PINTOOLS=deny"},
		Set: map[string]string{"servers.notes.pinTools": "ask"}})
	if err != nil {
		t.Fatal(err)
	}
	for server, want := range map[string]string{"fs": "deny", "git": "deny", "notes": "ask", "other": "deny"} {
		if got := c.PinMode(server); got != want {
			t.Errorf("with env and flags: PinMode(%s) = %s; want %s", server, got, want)
		}
	}
}

// TestPinToolsErrors: a bad pinTools value is an error at its file and
// line, from the environment and the flags too.
func TestPinToolsErrors(t *testing.T) {
	t.Parallel()
	files := map[string]string{"main.yaml": `version: 1
pool:
  pinTools: warn
servers:
  fs:
    pinTools: [ask]
`}
	_, err, dir := load(t, files, config.LoadOptions{Paths: []string{"main.yaml"},
		Env: []string{"MCPX_POLICY_POOL_PINTOOLS=sometimes", "MCPX_POLICY_POOL_PINTOOL=ask"},
		Set: map[string]string{"servers.fs.pinTools": "allow"}})
	if err == nil {
		t.Fatal("bad pinTools values loaded")
	}
	got := rel(dir, err.Error())
	for _, want := range []string{
		`main.yaml:3: pool.pinTools: unknown mode "warn" (want ask, deny or off; off is also spelled 0, false or no)`,
		`main.yaml:6: servers.fs.pinTools: want a mode (ask, deny or off), got a list`,
		`env $MCPX_POLICY_POOL_PINTOOLS: pool.pinTools: unknown mode "sometimes"`,
		`env $MCPX_POLICY_POOL_PINTOOL: unknown setting`,
		`flags: servers.fs.pinTools: unknown mode "allow"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the errors do not say %q:\n%s", want, got)
		}
	}
}

// TestPinToolsLoosening: a later layer that relaxes pinTools — the pool's,
// or a server's own or inherited one — is a warning at its origin naming
// the value and origin in force before the layer; tightening says nothing.
func TestPinToolsLoosening(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.yaml": `version: 1
pool:
  pinTools: deny
servers:
  fs:
    pinTools: deny
  git: {}
`,
		"conf.d/10.yaml": `version: 1
pool:
  pinTools: ask
servers:
  git:
    pinTools: off
`,
	}
	c, err, dir := load(t, files, config.LoadOptions{Paths: []string{"main.yaml"},
		Env: []string{"MCPX_POLICY_SERVERS_FS_PINTOOLS=ask"}, Set: map[string]string{"pool.pinTools": "deny"}})
	if err != nil {
		t.Fatal(err)
	}
	wantWarnings(t, c, dir,
		`conf.d/10.yaml:3: pool.pinTools: loosened from deny (main.yaml:3) to ask by a later layer`,
		`conf.d/10.yaml:6: servers.git.pinTools: loosened from deny (main.yaml:3) to off by a later layer`,
		`env $MCPX_POLICY_SERVERS_FS_PINTOOLS: servers.fs.pinTools: loosened from deny (main.yaml:6) to ask by a later layer`,
	)
}
