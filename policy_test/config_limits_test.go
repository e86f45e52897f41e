package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/bench"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// memoryCap is the address space, in KiB, the binary runs under in these
// tests (ulimit -v): the Go runtime reserves about 1.4 GB of address space
// before it allocates anything, so this leaves it some 800 MB. A config
// that expands past that is killed by the kernel's refusal, failing the
// test, not the machine. The L workload's check (2,000 rules) fits.
const memoryCap = 2_200_000

// capped runs the built binary under memoryCap and GOMAXPROCS=2.
func capped(t testing.TB, ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), args...)
	cmd.Env = append(cleanEnv(), "GOMAXPROCS=2")
	return memoryCapped(t, cmd, memoryCap)
}

// Hostile config files: each took gigabytes or minutes before the load
// limits, and each is a config error with file and line now.
var hostile = []struct {
	name, file, want string
}{
	// 9 anchored lists of 9, each of the one before: 9^9 nodes from 511 bytes.
	{"alias bomb in a rule's schema", "bomb.yaml", `bomb.yaml:13: YAML aliases expand to more than 100000 nodes`},
	{"a 50 MB file", "big.yaml", `big.yaml:\d+: config file is larger than the limit of 2097152 bytes \(2 MiB\)`},
	{"a schema nested 2,000 levels", "deep.yaml", `deep.yaml:6: mappings and lists nest deeper than 100 levels`},
	{"an alias inside the schema it names", "cycle.yaml", `cycle.yaml:7: YAML alias \*s refers to a node that contains it`},
}

// writeHostile writes the hostile files into dir.
func writeHostile(t *testing.T, dir string) {
	t.Helper()
	var bomb strings.Builder
	bomb.WriteString("version: 1\npool:\n  argumentRules:\n    - id: bomb\n      tools: [\"*\"]\n      schema:\n        $defs:\n")
	bomb.WriteString(`          a: &a ["x","x","x","x","x","x","x","x","x"]` + "\n")
	prev := "a"
	for _, n := range "bcdefghi" {
		fmt.Fprintf(&bomb, "          %c: &%c [%s]\n", n, n, strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ","))
		prev = string(n)
	}
	var big bytes.Buffer
	big.WriteString("version: 1\npool:\n  hiddenTools:\n")
	for i := 0; big.Len() < 50<<20; i++ {
		fmt.Fprintf(&big, "    - \"tool_%08d\"\n", i)
	}
	files := map[string]string{
		"bomb.yaml":  bomb.String(),
		"big.yaml":   big.String(),
		"deep.yaml":  "version: 1\npool:\n  argumentRules:\n    - id: deep\n      tools: [t]\n      schema: " + strings.Repeat("{not: ", 1999) + "{}" + strings.Repeat("}", 1999) + "\n",
		"cycle.yaml": "version: 1\npool:\n  argumentRules:\n    - id: cycle\n      tools: [t]\n      schema:\n        properties: &s {a: {properties: *s}}\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckLimitsUnderMemoryCap runs check on each hostile file under the
// memory cap: each is refused with its file, line and limit, quickly and
// without running out of memory; and a large config still loads under the
// same cap: the L workload (2,000 rules, 6 s of CPU) in a full run
// (internal/sweep), the M workload (200 rules) in a quick one.
func TestCheckLimitsUnderMemoryCap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeHostile(t, dir)
	for _, h := range hostile {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var stderr bytes.Buffer
			cmd := capped(t, ctx, "check", "--config", filepath.Join(dir, h.file))
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := cmd.ProcessState.ExitCode()
			if ctx.Err() != nil {
				t.Fatalf("check did not finish within 60s")
			}
			want := regexp.MustCompile(`(?m)^mcpx-policy: error: .*` + h.want)
			if code != 1 || !want.MatchString(stderr.String()) {
				t.Errorf("exit %d (%v); want 1 and an error matching %s; stderr:\n%.2000s", code, err, want, stderr.String())
			}
		})
	}
	shape := bench.M
	if sweep.Full() {
		shape = bench.L
	}
	t.Run("the "+shape.Name+" workload", func(t *testing.T) {
		t.Parallel()
		ldir := t.TempDir()
		conf, err := bench.Generate(shape).WriteConfig(ldir)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out, err := capped(t, ctx, "check", "--config", conf).CombinedOutput()
		if want := fmt.Sprintf("ok: %d servers, %d argument rules", shape.Servers, shape.Rules); err != nil || !strings.Contains(string(out), want) {
			t.Errorf("check of the %s workload under the memory cap: %v; want %q\n%.2000s", shape.Name, err, want, out)
		}
	})
}

// TestServeSurvivesHostileReloads runs serve under the memory cap and
// replaces its config with each hostile file in turn: every reload fails,
// the process lives, and it keeps deciding with the old policy; a good
// config after them loads.
func TestServeSurvivesHostileReloads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeHostile(t, dir)
	conf := filepath.Join(dir, "etc", "mcpx-policy.yaml")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	good := "version: 1\nservers:\n  fs:\n    writePolicy: deny\n    hiddenTools: [\"move_*\"]\n"
	if err := os.WriteFile(conf, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := startServe(t, capped(t, ctx, "serve", "--config", conf, "--addr", addr, "--state-dir", filepath.Join(dir, "state"), "--decision-log", "off"), addr)
	base, stderr, exited := srv.base, srv.stderr, srv.exited
	health := func() (string, error) {
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		var h struct{ Revision string }
		return h.Revision, json.NewDecoder(resp.Body).Decode(&h)
	}
	first, err := health()
	if err != nil {
		t.Fatal(err)
	}
	decideWrite := func() string {
		body := `{"server":"fs","tool":{"name":"write_file","annotations":{"readOnlyHint":false}},"args":{},"mode":"allow"}`
		resp, err := http.Post(base+"/v1/decide", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("serve is gone: %v", err)
		}
		defer resp.Body.Close()
		var d struct{ Outcome string }
		json.NewDecoder(resp.Body).Decode(&d)
		return d.Outcome
	}
	// replace swaps the config the way editors do and waits for the
	// reload's log line.
	replace := func(body []byte, logLine string) {
		t.Helper()
		before := strings.Count(stderr.String(), logLine)
		tmp := conf + ".tmp"
		if err := os.WriteFile(tmp, body, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, conf); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(60 * time.Second); strings.Count(stderr.String(), logLine) == before; time.Sleep(50 * time.Millisecond) {
			select {
			case err := <-exited:
				t.Fatalf("serve exited: %v", err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log within 60s", logLine)
			}
		}
	}
	for _, h := range hostile {
		body, err := os.ReadFile(filepath.Join(dir, h.file))
		if err != nil {
			t.Fatal(err)
		}
		replace(body, "config reload failed")
		if rev, err := health(); err != nil || rev != first {
			t.Fatalf("after %s: revision %q (%v); want the old %q", h.name, rev, err, first)
		}
		if got := decideWrite(); got != "deny" {
			t.Errorf("after %s: a write to fs is %q; want deny by the old policy", h.name, got)
		}
	}
	if !regexp.MustCompile(`limit`).MatchString(stderr.String()) {
		t.Errorf("the failed reloads do not name their limits")
	}
	replace([]byte(good+"    writeTools: [\"exec_*\"]\n"), "config reloaded")
	if rev, err := health(); err != nil || rev == first {
		t.Errorf("after a good config: revision %q (%v); want a new one", rev, err)
	}
}
