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

	"github.com/jackc/pgx/v5"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
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
	if want := " --config " + g.config + clearReason; !strings.HasPrefix(lost, "mcpx-policy writes clear notes --id ") || !strings.HasSuffix(lost, want) {
		t.Errorf("the proxy prints %q; want it to end in %q", lost, want)
	}
	_, _, body := a.post(t, "/v1/decide", noteWrite)
	clear := clearDetail(t, body)
	if want := "mcpx-policy writes clear notes --seen <seen> --config " + g.config + clearReason; seenRE.ReplaceAllString(clear, "--seen <seen>") != want {
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

// TestLedgerOutageIsLoggedOnce: serve and a proxy on a PostgreSQL ledger
// each log, on stderr, the moment the database stops taking connections
// (once, however many checks fail meanwhile) and the moment it takes them
// again (once).
func TestLedgerOutageIsLoggedOnce(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	env := []string{"FLEET_DSN=" + dsn}
	g := newGate(t, "notes", fleetConfig)
	srv := runServe(t, env, "--config", g.config)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := g.command(t, goServer(t, "../e2e/exitserver"))
	cmd.Env = append(cmd.Env, env...)
	connect(t, ctx, cmd, nil) // the proxy runs while the session is open
	proxyErr := g.stderr

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	var db string
	err = conn.QueryRow(ctx, "SELECT current_database()").Scan(&db)
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, pgtest.Base(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	do := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	const down = "unknown-outcome ledger unreadable: every write is denied (LedgerUnreadable) until it reads again"
	const up = "unknown-outcome ledger readable again"
	// waitFor waits until each stderr holds line, and fails the test if it
	// never comes.
	waitFor := func(line string) {
		t.Helper()
		for _, s := range []*syncBuffer{srv.stderr, proxyErr} {
			for !strings.Contains(s.String(), line) {
				select {
				case <-ctx.Done():
					t.Fatalf("no %q on stderr:\nserve:\n%s\nproxy:\n%s", line, srv.stderr, proxyErr)
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}
	if strings.Contains(srv.stderr.String(), down) || strings.Contains(proxyErr.String(), down) {
		t.Fatalf("an outage logged while the database is up:\n%s\n%s", srv.stderr, proxyErr)
	}

	// The outage: no new connection, and the open ones ended.
	do(`ALTER DATABASE "` + db + `" ALLOW_CONNECTIONS false`)
	do(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + db + `'`)
	waitFor(down)
	// a write decided meanwhile is refused for the ledger
	if status, _, body := srv.post(t, "/v1/decide", noteWrite); status != 200 || !strings.Contains(string(body), `"code":"LedgerUnreadable"`) {
		t.Errorf("a write during the outage: %d %s", status, body)
	}
	do(`ALTER DATABASE "` + db + `" ALLOW_CONNECTIONS true`)
	waitFor(up)
	for name, s := range map[string]*syncBuffer{"serve": srv.stderr, "proxy": proxyErr} {
		out := s.String()
		if n, m := strings.Count(out, down), strings.Count(out, up); n != 1 || m != 1 {
			t.Errorf("%s logged the outage %d times and its end %d times; want once each:\n%s", name, n, m, out)
		}
		if i, j := strings.Index(out, down), strings.Index(out, up); i > j {
			t.Errorf("%s logged the end before the outage:\n%s", name, out)
		}
	}
	if status, _, body := srv.post(t, "/v1/decide", noteWrite); status != 200 || !strings.Contains(string(body), `"outcome":"allow"`) {
		t.Errorf("a write after the outage: %d %s", status, body)
	}
}

// TestLedgerUnreadableNamesTheRealCommand: when the PostgreSQL ledger a
// config names does not answer, a write's LedgerUnreadable deny tells the
// operator the command that shows why — mcpx-policy writes with this
// engine's config files, absolute, in its details — not a placeholder
// ('--config …'); its message, which an agent reads, names no path.
func TestLedgerUnreadableNamesTheRealCommand(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": fleetConfig})
	cfg := filepath.Join(dir, "mcpx-policy.yaml")
	// a port nothing listens on: the database never answers
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{cfg}, StateDir: filepath.Join(dir, "state"),
		Env: []string{"FLEET_DSN=postgres://nobody@127.0.0.1:1/none?connect_timeout=2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	write := decision.Tool{Name: "write_note", Annotations: &decision.Annotations{ReadOnlyHint: ptr(false)}}
	d, _ := eng.Decide(context.Background(), decision.Call{Server: "notes", Tool: write, Args: map[string]any{"text": "x"}})
	r := d.First()
	want := "mcpx-policy writes --config " + cfg
	if r.Code != decision.LedgerUnreadable || r.Details["writes"] != want || strings.Contains(r.Message, "…") || strings.Contains(r.Message, cfg) {
		t.Errorf("the deny of a write with the database down:\n%s: %s %v\nwant details.writes %q, and a message (an agent's) that names no path and no placeholder", r.Code, r.Message, r.Details, want)
	}
}
