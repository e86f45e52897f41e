package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestEverySettingFromEverySource: each row of the settings table, in
// each of its values, is read the same from a config file, the
// MCPX_POLICY_* environment and LoadOptions.Set — the compiled policy is
// the same — and every row changes the policy (no row is read by one
// source only, or by none).
func TestEverySettingFromEverySource(t *testing.T) {
	t.Parallel()
	load := func(t *testing.T, yaml string, env []string, set map[string]string) *Compiled {
		t.Helper()
		path := filepath.Join(t.TempDir(), "main.yaml")
		if err := os.WriteFile(path, []byte("version: 1\n"+yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(LoadOptions{Paths: []string{path}, Env: env, Set: set})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const server = "servers:\n  fs: {}\n"
	base := load(t, server, []string{}, nil).Revision
	for _, d := range scalars {
		t.Run(d.path("fs"), func(t *testing.T) {
			t.Parallel()
			changed := false
			for value := range d.kind.order {
				var yaml, env string
				switch d.scope {
				case "servers":
					yaml = "servers:\n  fs:\n    " + d.key + ": " + value + "\n"
					env = EnvPrefix + "SERVERS_FS" + d.env() + "=" + value
				default:
					yaml = d.scope + ":\n  " + d.key + ": " + value + "\n" + server
					env = d.env() + "=" + value
				}
				fromFile := load(t, yaml, []string{}, nil).Revision
				fromEnv := load(t, server, []string{env}, nil).Revision
				fromSet := load(t, server, []string{}, map[string]string{d.path("fs"): value}).Revision
				if fromFile != fromEnv || fromFile != fromSet {
					t.Errorf("%s: %s: file, environment and flags compile differently", d.path("fs"), value)
				}
				changed = changed || fromFile != base
			}
			if !changed {
				t.Errorf("%s: no value of it changes the compiled policy", d.path("fs"))
			}
		})
	}
}
