package policy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/bench"
	"github.com/mcpx/mcpx-policy/internal/sweep"
	"github.com/mcpx/mcpx-policy/opabundle"
)

// opaBinary returns the stock OPA pinned by go.mod's tool directive (the
// same version the engine embeds), built by `go tool -n opa`: asked once
// per test binary, since each ask costs the go command 1½ s of CPU to
// find the build up to date.
func opaBinary(t *testing.T) string {
	t.Helper()
	path, err := opaPath()
	if err != nil {
		t.Fatalf("go tool -n opa: %v", err)
	}
	return path
}

var opaPath = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "tool", "-n", "opa").Output()
	return strings.TrimSpace(string(out)), err
})

// opaServer runs `opa run --server` on a free loopback port with bundle and
// returns its base URL once /health says the bundle is active; the server
// is killed when t ends.
func opaServer(t *testing.T, bundle string, extra ...string) string {
	t.Helper()
	base, stop, err := startOPAServer(opaBinary(t), bundle, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return base
}

// startOPAServer is opaServer for a server that outlives one test: stop
// kills it. The port is picked free and then bound by OPA, and another
// process can take it in between (any outgoing connection's port): a
// start that loses its port is tried again on another.
func startOPAServer(opa, bundle string, extra ...string) (base string, stop func(), err error) {
	for attempt := 1; ; attempt++ {
		base, stop, err = startOPAServerOnce(opa, bundle, extra...)
		if !errors.Is(err, errPortTaken) || attempt == 5 {
			return base, stop, err
		}
	}
}

// errPortTaken: the port picked for a server was taken before it bound it.
var errPortTaken = errors.New("the port was taken before the server bound it")

func startOPAServerOnce(opa, bundle string, extra ...string) (base string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr := l.Addr().String()
	l.Close()
	args := append([]string{"run", "--server", "--addr", addr, "--log-level", "error", "--disable-telemetry", "--bundle", bundle}, extra...)
	cmd := exec.Command(opa, args...)
	stderr := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	base = "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/health?bundles=true")
		// checked after the answer: a server that lost its port may have
		// reached the one that took it
		if strings.Contains(stderr.String(), "address already in use") {
			if err == nil {
				resp.Body.Close()
			}
			stop()
			return "", nil, fmt.Errorf("%w: %s", errPortTaken, stderr.String())
		}
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("opa server did not become healthy: %s", stderr.String())
}

// postDecision sends input to the server's decision endpoint and returns
// the HTTP status and the raw result.
func postDecision(t *testing.T, base string, input []byte) (int, json.RawMessage, string) {
	t.Helper()
	body := append(append([]byte(`{"input": `), input...), '}')
	resp, err := http.Post(base+"/v1/data/mcpx/decision", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result json.RawMessage `json:"result"`
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("opa answer %s: %v", raw, err)
		}
	}
	return resp.StatusCode, out.Result, string(raw)
}

// generic is v as decoded JSON, so two decisions compare field by field.
func generic(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// seenFlag is the --seen flag the engine's answer adds to a clear command.
var seenFlag = regexp.MustCompile(` --seen [0-9a-f]{16}`)

// bareClear says whether d (or its shadow decision) has a clear command
// without --seen.
func bareClear(d decision.Decision) bool {
	rs := d.Reasons
	if d.Shadow != nil {
		rs = append(slices.Clone(rs), d.Shadow.Reasons...)
	}
	return slices.ContainsFunc(rs, func(r decision.Reason) bool {
		c, ok := r.Details["clear"].(string)
		return ok && !seenFlag.MatchString(c)
	})
}

// withoutSeen is d with the --seen flag taken out of its reasons' details
// and messages (and its shadow decision's).
func withoutSeen(d decision.Decision) decision.Decision {
	strip := func(rs []decision.Reason) []decision.Reason {
		out := make([]decision.Reason, len(rs))
		for i, r := range rs {
			r.Message = seenFlag.ReplaceAllString(r.Message, "")
			if c, ok := r.Details["clear"].(string); ok {
				r.Details = maps.Clone(r.Details)
				r.Details["clear"] = seenFlag.ReplaceAllString(c, "")
			}
			out[i] = r
		}
		return out
	}
	d.Reasons = strip(d.Reasons)
	if d.Shadow != nil {
		sh := *d.Shadow
		sh.Reasons = strip(sh.Reasons)
		d.Shadow = &sh
	}
	return d
}

// readCallFile reads a call file of examples/ (a whole MCP Tool in "tool").
func readCallFile(t *testing.T, path string) decision.Call {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var f struct {
		decision.Call
		Tool json.RawMessage `json:"tool"`
	}
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	call := f.Call
	tool, err := mcpxpolicy.ParseTool(f.Tool)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	call.Tool = tool
	return call
}

type equivCase struct {
	name   string
	layers []string // config files after examples/mcpx-policy.yaml
	ledger string   // ledger file for the state dir, "" for none
	pins   string   // pins file for the state dir, "" for none
	calls  []string
	sign   bool
	// evalError: the policy fails at evaluation; the engine denies with
	// PolicyError and stock OPA answers an error status (fail closed on
	// the caller's side).
	evalError bool
}

func examplesCalls(t *testing.T) []string {
	t.Helper()
	calls, err := filepath.Glob("../examples/calls/*.json")
	if err != nil || len(calls) == 0 {
		t.Fatalf("no example calls: %v", err)
	}
	return calls
}

// manyEntries writes a ledger file with n unknown-outcome entries for fs
// and returns its path.
func manyEntries(t *testing.T, n int) string {
	t.Helper()
	entries := make([]map[string]string, n)
	for i := range entries {
		entries[i] = map[string]string{"id": fmt.Sprintf("e%02d", i), "server": "fs", "tool": "write_file",
			"args_sha256": fmt.Sprintf("%064x", i), "time": fmt.Sprintf("2026-11-29T21:14:%02dZ", i), "surface": "mcp"}
	}
	b, err := json.Marshal(map[string]any{"version": 1, "entries": entries})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ledger-many.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStockOPAEquivalence builds the bundle of each config, serves it from
// a stock `opa run --server`, POSTs every call's input (the same document
// the engine evaluates, from Engine.OPAInput) to /v1/data/mcpx/decision and
// requires the whole decision — outcome, step, every reason with its
// message and details, warnings, write, destructive, call with sha256 — to
// equal the embedded engine's. The corpus is the example calls plus, for
// each decided reason code, the config and call of examples/calls-reasons;
// and with fs in shadow mode, where the decision carries the policy's own
// under "shadow" on both.
func TestStockOPAEquivalence(t *testing.T) {
	if testing.Short() {
		t.Skip("starts stock OPA servers")
	}
	t.Parallel()
	cr := "../examples/calls-reasons/"
	all := append(examplesCalls(t), cr+"read-typo.json", cr+"write-env-file.json", cr+"write-ci-config.json",
		cr+"invalid-mode.json", cr+"contractor-write.json", cr+"maintainer-write.json", cr+"git-config-write.json")
	cases := []equivCase{
		{name: "example", calls: all, sign: true},
		{name: "ledger-pending", ledger: cr + "ledger-pending.json", calls: all},
		{name: "ledger-many", ledger: manyEntries(t, 25), calls: all}, // the input lists 10 and the total
		{name: "ledger-corrupt", ledger: cr + "ledger-corrupt.json", calls: all},
		{name: "unknown-args-warn", layers: []string{cr + "unknown-args-warn.yaml"}, calls: all},
		{name: "write-deny", layers: []string{cr + "write-deny.yaml"}, calls: all},
		{name: "destructive-floor", layers: []string{cr + "destructive-floor.yaml"}, calls: all},
		{name: "overrides", layers: []string{cr + "overrides.yaml"}, calls: all},
		{name: "malformed-override", layers: []string{cr + "malformed-override.yaml"}, calls: all},
		{name: "pins-changed", layers: []string{cr + "pin-tools.yaml"}, pins: cr + "pins-changed.json", calls: all},
		{name: "policy-error", layers: []string{cr + "policy-error.yaml"}, calls: []string{"../examples/calls/2-write-asks.json"}, evalError: true},
		{name: "shadow", layers: []string{cr + "shadow.yaml"}, calls: all},
		{name: "shadow-ledger-pending", ledger: cr + "ledger-pending.json", layers: []string{cr + "shadow.yaml"}, calls: all},
		{name: "shadow-ledger-corrupt", ledger: cr + "ledger-corrupt.json", layers: []string{cr + "shadow.yaml", cr + "write-deny.yaml"}, calls: all},
		{name: "budgets", ledger: budgetLedger(t), layers: []string{budgetLayer(t)}, calls: all},
		{name: "budgets-unspent", layers: []string{budgetLayer(t)}, calls: all},
		{name: "shadow-budgets", ledger: budgetLedger(t), layers: []string{budgetLayer(t), cr + "shadow.yaml"}, calls: all},
		{name: "flows", layers: []string{flowLayer(t)}, calls: all},
		{name: "shadow-flows", layers: []string{flowLayer(t), cr + "shadow.yaml"}, calls: all},
	}
	seen := map[decision.Code]bool{}
	done := make(chan map[decision.Code]bool, len(cases))
	servers := &bundleServers{opa: opaBinary(t), started: map[[sha256.Size]byte]func() (string, error){}}
	t.Cleanup(servers.stopAll)
	t.Cleanup(func() {
		for range cases {
			for c := range <-done {
				seen[c] = true
			}
		}
		t.Logf("%d cases, %d stock OPA servers (one per distinct bundle)", len(cases), len(servers.started))
		for _, info := range []decision.Code{
			decision.HiddenTool, decision.UnknownOutcomePending, decision.LedgerUnreadable, decision.UnknownArguments,
			decision.IgnoredArguments, decision.ArgumentRuleViolation, decision.WriteDenied, decision.WriteNeedsConfirmation,
			decision.DestructiveNeedsConfirmation, decision.OverrideDeny, decision.OverrideAsk, decision.InvalidInput,
			decision.PolicyError, decision.ToolDefinitionChanged, decision.WriteBudgetExceeded, decision.RepeatedCall,
			decision.FlowDenied, decision.FlowNeedsConfirmation,
		} {
			if !seen[info] {
				t.Errorf("the corpus never produced %s: add a call that does", info)
			}
		}
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := map[decision.Code]bool{}
			defer func() { done <- got }()
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			if err := os.MkdirAll(state, 0o700); err != nil {
				t.Fatal(err)
			}
			for name, from := range map[string]string{"ledger.json": c.ledger, "pins.json": c.pins} {
				if from == "" {
					continue
				}
				b, err := os.ReadFile(from)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(state, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			opts := mcpxpolicy.Options{ConfigPaths: append([]string{"../examples/mcpx-policy.yaml"}, c.layers...), Env: []string{}, StateDir: state}
			eng, err := mcpxpolicy.New(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			tarball := filepath.Join(dir, "bundle.tar.gz")
			var extra []string
			if c.sign {
				key, err := rsa.GenerateKey(rand.Reader, 2048)
				if err != nil {
					t.Fatal(err)
				}
				priv := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
				der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
				if err != nil {
					t.Fatal(err)
				}
				pub := filepath.Join(dir, "public.pem")
				if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
					t.Fatal(err)
				}
				writeBundle(t, opts, tarball, &opabundle.Signing{Key: string(priv)})
				extra = []string{"--verification-key", pub}
			} else {
				writeBundle(t, opts, tarball, nil)
			}
			base, err := servers.get(tarball, extra...)
			if err != nil {
				t.Fatal(err)
			}
			// With flow rules, a gateway that asks the stock OPA alone
			// (OPAInput, then ParseDecision: never Decide) remembers the
			// labels its calls touch as the engine does, so every one of
			// its decisions is the engine's — the write after the read is
			// the flow rule's too.
			var gateway *mcpxpolicy.Engine
			if strings.Contains(c.name, "flows") {
				if gateway, err = mcpxpolicy.New(context.Background(), opts); err != nil {
					t.Fatal(err)
				}
				defer gateway.Close()
			}
			relaxed := 0
			for _, path := range c.calls {
				call := readCallFile(t, path)
				d := compareOne(t, eng, base, filepath.Base(path), call, c.evalError, got)
				if d.Relaxed() {
					relaxed++
				}
				if gateway == nil {
					continue
				}
				input, err := gateway.OPAInput(call)
				if err != nil {
					t.Fatal(err)
				}
				status, result, raw := postDecision(t, base, input)
				if status != http.StatusOK {
					t.Fatalf("%s: opa answered %d %s", path, status, raw)
				}
				gd, err := gateway.ParseDecision(call, result)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := generic(t, gd), generic(t, d); !reflect.DeepEqual(g, w) {
					ge, de := gd.Enforced(), d.Enforced()
					t.Errorf("%s: the gateway asking the stock OPA alone decided %s (%s), the engine %s (%s)", filepath.Base(path),
						ge.Outcome, ge.First().Code, de.Outcome, de.First().Code)
				}
			}
			if strings.HasPrefix(c.name, "shadow") != (relaxed > 0) {
				t.Errorf("%d decisions relaxed by shadow mode; want some exactly when fs is in shadow mode", relaxed)
			}
		})
	}
}

// bundleServers starts one stock OPA server per distinct bundle: cases
// whose bundles are the same bytes (the same configuration layers; the
// ledger and the pins are the input's, not the bundle's) ask one server
// loaded with exactly their bundle, at 1 s of CPU per server spared.
type bundleServers struct {
	opa     string
	mu      sync.Mutex
	started map[[sha256.Size]byte]func() (string, error)
	stops   []func()
}

// get returns the base URL of the server loaded with the bundle at
// tarball (and the extra flags), starting it on the first ask.
func (s *bundleServers) get(tarball string, extra ...string) (string, error) {
	b, err := os.ReadFile(tarball)
	if err != nil {
		return "", err
	}
	key := sha256.Sum256(append(b, []byte("\x00"+strings.Join(extra, "\x00"))...))
	s.mu.Lock()
	start, ok := s.started[key]
	if !ok {
		start = sync.OnceValues(func() (string, error) {
			base, stop, err := startOPAServer(s.opa, tarball, extra...)
			if err == nil {
				s.mu.Lock()
				s.stops = append(s.stops, stop)
				s.mu.Unlock()
			}
			return base, err
		})
		s.started[key] = start
	}
	s.mu.Unlock()
	return start()
}

// stopAll kills the servers; it runs when every case has ended.
func (s *bundleServers) stopAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, stop := range s.stops {
		stop()
	}
}

// firstOfACode reports whether the engine answers call with one of codes
// that seen lacks.
func firstOfACode(t *testing.T, eng *mcpxpolicy.Engine, call decision.Call, codes []decision.Code, seen map[decision.Code]bool) bool {
	t.Helper()
	d, err := eng.Decide(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(append([]decision.Reason{}, d.Reasons...), d.Warnings...) {
		if slices.Contains(codes, r.Code) && !seen[r.Code] {
			return true
		}
	}
	return false
}

// compareOne decides call both ways, compares the whole decision and
// returns the engine's.
func compareOne(t *testing.T, eng *mcpxpolicy.Engine, base, name string, call decision.Call, evalError bool, seen map[decision.Code]bool) decision.Decision {
	t.Helper()
	want, derr := eng.Decide(context.Background(), call)
	for _, r := range append(append([]decision.Reason{}, want.Reasons...), want.Warnings...) {
		seen[r.Code] = true
	}
	input, err := eng.OPAInput(call)
	if err != nil {
		t.Fatalf("%s: OPAInput: %v", name, err)
	}
	status, result, raw := postDecision(t, base, input)
	if evalError {
		if derr == nil || want.First().Code != decision.PolicyError || status == http.StatusOK {
			t.Errorf("%s: want an engine PolicyError and an OPA error status; got engine %v (%v), OPA %d %s", name, want.First().Code, derr, status, raw)
		}
		return want
	}
	if status != http.StatusOK || len(result) == 0 {
		t.Fatalf("%s: opa answered %d %s", name, status, raw)
	}
	if derr != nil {
		t.Fatalf("%s: engine: %v", name, derr)
	}
	got, err := eng.ParseDecision(call, result)
	if err != nil {
		t.Fatalf("%s: opa decision %s: %v", name, result, err)
	}
	if bareClear(got) {
		// A stock OPA's deny that lists only some of the entries cannot
		// carry their token (docs/fleet.md): the answer's clear command
		// then clears every entry; the policy's findings agree.
		want = withoutSeen(want)
	}
	if g, w := generic(t, got), generic(t, want); !reflect.DeepEqual(g, w) {
		gj, _ := json.MarshalIndent(g, "", "  ")
		wj, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("%s: stock OPA decided\n%s\nthe engine decided\n%s", name, gj, wj)
	}
	if want.Call.SHA256 == "" {
		t.Errorf("%s: the decision has no call sha256", name)
	}
	return want
}

// TestStockOPAEquivalenceWorkload runs a slice of the M reference workload
// (generated rule packages for 200 rules mixing the supported keywords)
// through a stock OPA server and the engine: 300 calls in a full run; in a
// quick one every sweep.Stride-th of them, and the first call the engine
// answers with each code the test must meet.
func TestStockOPAEquivalenceWorkload(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a stock OPA server")
	}
	t.Parallel()
	w := bench.Generate(bench.M)
	dir := t.TempDir()
	opts, err := w.Options(dir)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "bundle.tar.gz")
	writeBundle(t, opts, tarball, nil)
	base := opaServer(t, tarball)
	seen := map[decision.Code]bool{}
	codes := []decision.Code{decision.ArgumentRuleViolation, decision.HiddenTool, decision.UnknownArguments, decision.IgnoredArguments}
	const n = 300
	extra := 0
	for i, call := range w.Calls[:n] {
		if !sweep.Take(i) {
			if !firstOfACode(t, eng, call, codes, seen) {
				continue
			}
			extra++
		}
		compareOne(t, eng, base, fmt.Sprintf("M call %d (%s.%s)", i, call.Server, call.Tool.Name), call, false, seen)
	}
	t.Logf("stock OPA and the engine agree on %s, and %d more, each the first of its code", sweep.Describe(n), extra)
	for _, c := range codes {
		if !seen[c] {
			t.Errorf("the workload slice never produced %s", c)
		}
	}
}
