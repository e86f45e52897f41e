package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
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

// TestEverySettingThroughTheLayers: for each row of the settings table,
// global or a server's, and each subset of the five layers — the first
// --config file, a second one, a conf.d file, the MCPX_POLICY_*
// environment and LoadOptions.Set — that set it, each layer to a value
// other than the one before it, the compiled policy holds the value of
// the last layer that set it (and a server setting no layer sets is not
// in the server's data, so the policy falls back to the global one). A
// layer whose value were dropped, or layers merged out of order, show.
func TestEverySettingThroughTheLayers(t *testing.T) {
	t.Parallel()
	const layers = 5 // main.yaml, extra.yaml, conf.d/10.yaml, env, flags
	for _, d := range scalars {
		t.Run(d.path("fs"), func(t *testing.T) {
			t.Parallel()
			values := make([]string, 0, len(d.kind.order))
			for v := range d.kind.order {
				values = append(values, v)
			}
			sort.Strings(values)
			for subset := 0; subset < 1<<layers; subset++ {
				files := map[string]string{"main.yaml": "", "extra.yaml": "", "conf.d/10.yaml": ""}
				names := []string{"main.yaml", "extra.yaml", "conf.d/10.yaml"}
				var env []string
				set := map[string]string{}
				want, wantSet := "", false
				for i := 0; i < layers; i++ {
					if subset&(1<<i) == 0 {
						continue
					}
					v := values[(i+subset)%len(values)]
					if wantSet && v == want {
						v = values[(i+subset+1)%len(values)]
					}
					want, wantSet = v, true
					switch {
					case i < 3 && d.scope == "servers":
						files[names[i]] = "servers:\n  fs:\n    " + d.key + ": " + v + "\n"
					case i < 3:
						files[names[i]] = d.scope + ":\n  " + d.key + ": " + v + "\n"
					case i == 3 && d.scope == "servers":
						env = append(env, EnvPrefix+"SERVERS_FS"+d.env()+"="+v)
					case i == 3:
						env = append(env, d.env()+"="+v)
					default:
						set[d.path("fs")] = v
					}
				}
				dir := t.TempDir()
				var paths []string
				for _, name := range names {
					body := "version: 1\n" + files[name]
					if name == "main.yaml" && !strings.Contains(body, "servers:") {
						body += "servers:\n  fs: {}\n"
					}
					p := filepath.Join(dir, filepath.FromSlash(name))
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
						t.Fatal(err)
					}
					if name != "conf.d/10.yaml" {
						paths = append(paths, p)
					}
				}
				c, err := Load(LoadOptions{Paths: paths, Env: env, Set: set})
				if err != nil {
					t.Fatalf("layers %05b: %v", subset, err)
				}
				config := c.Data["config"].(map[string]any)
				var scope map[string]any
				switch d.scope {
				case "policy":
					scope = config
				case "pool":
					scope = config["pool"].(map[string]any)
				default:
					scope = config["servers"].(map[string]any)["fs"].(map[string]any)
				}
				got, ok := scope[d.dataKey()]
				switch {
				case !wantSet && d.scope == "policy":
					if fmt.Sprint(got) != d.def {
						t.Errorf("layers %05b: %s is %v, want the default %s", subset, d.path("fs"), got, d.def)
					}
				case !wantSet:
					if ok {
						t.Errorf("layers %05b: %s is %v, want it unset", subset, d.path("fs"), got)
					}
				case fmt.Sprint(got) != want:
					t.Errorf("layers %05b: %s is %v, want %s (the last layer's)", subset, d.path("fs"), got, want)
				}
				if d.kind == kindPin {
					mode := DefaultPinTools
					if wantSet {
						mode = want
					}
					if got := c.PinMode("fs"); got != mode {
						t.Errorf("layers %05b: PinMode(fs) is %s, want %s", subset, got, mode)
					}
				}
			}
		})
	}
}
