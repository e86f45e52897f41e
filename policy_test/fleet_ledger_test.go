package policy_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

// fleetConfig keeps the ledger in the PostgreSQL database $FLEET_DSN names.
const fleetConfig = `version: 1
policy:
  write: allow
servers:
  notes: {}
ledger:
  store: postgres
  dsnEnv: FLEET_DSN
`

// noteWrite is a decision request for the exit server's write tool.
const noteWrite = `{"server": "notes", "tool": {"name": "write_note", "annotations": {"readOnlyHint": false}, "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}, "args": {"text": "x"}}`

// TestFleetSharesThePostgresLedger: two `serve` processes and a proxy on
// one PostgreSQL ledger, as a fleet of gateways in front of one MCP
// server. A write whose outcome the proxy lost (the server died on it)
// blocks the very next write decision through both services; a clear
// through either service, or `mcpx-policy writes clear --config`,
// unblocks both; `writes --config` lists the entry; /readyz and /metrics
// read the shared ledger.
func TestFleetSharesThePostgresLedger(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	env := []string{"FLEET_DSN=" + dsn}
	server := goServer(t, "../e2e/exitserver")
	g := newGate(t, "notes", fleetConfig)
	token := filepath.Join(filepath.Dir(g.config), "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := runServe(t, env, "--config", g.config, "--token-file", token)
	b := runServe(t, env, "--config", g.config, "--token-file", token)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	decide := func(p *serveProcess) string {
		t.Helper()
		status, _, body := p.post(t, "/v1/decide", noteWrite)
		if status != 200 {
			t.Fatalf("decide: %d %s", status, body)
		}
		switch {
		case strings.Contains(string(body), `"outcome":"allow"`):
			return "allow"
		case strings.Contains(string(body), `"code":"UnknownOutcomePending"`):
			return "UnknownOutcomePending"
		}
		return string(body)
	}
	both := func(when, want string) {
		t.Helper()
		for name, p := range map[string]*serveProcess{"a": a, "b": b} {
			if got := decide(p); got != want {
				t.Errorf("%s: the next write decided through serve %s = %s; want %s", when, name, got, want)
			}
		}
	}
	// lose has the proxy lose a write and returns the command its answer
	// prints to clear it.
	lose := func() string {
		t.Helper()
		cmd := g.command(t, server)
		cmd.Env = append(cmd.Env, env...)
		cs := connect(t, ctx, cmd, nil)
		res := call(t, ctx, cs, "write_note", map[string]any{"text": "x"})
		if !res.IsError || !strings.Contains(text(res), "Outcome unknown") {
			t.Fatalf("the write that killed the server = %q; want an unknown outcome", text(res))
		}
		cs.Close()
		return printed(text(res))
	}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
		cmd.Env = append(cleanEnv(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mcpx-policy %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	clearHTTP := func(p *serveProcess) {
		t.Helper()
		status, _, body := p.post(t, "/v1/writes/clear", `{"server": "notes", "reason": "checked on the server"}`, "Authorization", "Bearer 0123456789abcdef0123456789abcdef")
		if status != 200 || !strings.Contains(string(body), "write_note") {
			t.Fatalf("clear: %d %s", status, body)
		}
	}

	both("before any loss", "allow")
	for _, p := range []*serveProcess{a, b} {
		resp, err := http.Get(p.base + "/readyz")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/readyz on the PostgreSQL ledger = %v, %v", resp, err)
		}
		resp.Body.Close()
	}

	lose()
	both("after the proxy lost a write", "UnknownOutcomePending")
	if w := cli("writes", "--config", g.config); !strings.Contains(w, "notes\twrite_note") || !strings.Contains(w, "--config "+g.config) {
		t.Errorf("writes --config lists:\n%s", w)
	}
	resp, err := http.Get(b.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := readAll(resp)
	if !strings.Contains(m, `mcpx_policy_ledger_pending_entries{server="notes"} 1`) {
		t.Errorf("/metrics of serve b does not show the pending entry:\n%s", grepLines(m, "ledger"))
	}
	clearHTTP(a)
	both("after a clear through serve a", "allow")

	lose()
	both("after the second loss", "UnknownOutcomePending")
	clearHTTP(b)
	both("after a clear through serve b", "allow")

	// The commands the proxy and serve print name the database through
	// --config (not the proxy's --state-dir), and run as printed.
	lost := lose()
	both("after the third loss", "UnknownOutcomePending")
	if want := " --config " + g.config; !strings.HasPrefix(lost, "mcpx-policy writes clear notes --id ") || !strings.HasSuffix(lost, want) {
		t.Errorf("the proxy prints %q; want it to end in %q", lost, want)
	}
	_, _, body := a.post(t, "/v1/decide", noteWrite)
	clear := clearDetail(t, body)
	if want := "mcpx-policy writes clear notes --seen <seen> --config " + g.config; seenRE.ReplaceAllString(clear, "--seen <seen>") != want {
		t.Errorf("serve's decision names %q; want %q", clear, want)
	}
	if out := paste(t, clear+" --reason 'fleet test'", env...); !strings.Contains(out, "1 write(s) cleared") {
		t.Errorf("writes clear --config: %s", out)
	}
	both("after writes clear --config", "allow")
}

func readAll(resp *http.Response) (string, error) {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
