package policy_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyListenProbesAndMetrics: `proxy --listen` answers /healthz and
// /readyz beside /mcp, and its /metrics counts what went through it: the
// decisions, each tools/call sent upstream by how it ended (answered, or
// lost when the server died on a write), none left in flight, and the
// unknown outcome the lost write left in the ledger.
func TestProxyListenProbesAndMetrics(t *testing.T) {
	t.Parallel()
	server := goServer(t, "../e2e/exitserver")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := freeLoopbackAddr(t)
	g := newGate(t, "notes", exitConfig, "--listen", addr)
	cmd := g.command(t, server)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(interrupt)
		cmd.Wait()
	})
	base := "http://" + addr
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := readAll(resp)
		return resp.StatusCode, b
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpx-policy-e2e", Version: "1"}, nil)
	var cs *mcp.ClientSession
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp"}, nil); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	defer cs.Close()
	if status, body := get("/healthz"); status != 200 || !strings.Contains(body, `"status":"ok"`) {
		t.Errorf("GET /healthz = %d %s", status, body)
	}
	if status, body := get("/readyz"); status != 200 || !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("GET /readyz = %d %s", status, body)
	}
	if res := call(t, ctx, cs, "read_note", map[string]any{}); res.IsError {
		t.Fatalf("read_note = %q", text(res))
	}
	if res := call(t, ctx, cs, "write_note", map[string]any{"text": "x"}); !strings.Contains(text(res), "Outcome unknown") {
		t.Fatalf("write_note = %q; want the unknown outcome", text(res))
	}
	_, m := get("/metrics")
	for _, want := range []string{
		`mcpx_policy_decisions_total{code="none",outcome="allow",shadow="false"} 2`,
		`mcpx_policy_upstream_call_duration_seconds_count{result="result"} 1`,
		`mcpx_policy_upstream_call_duration_seconds_count{result="lost"} 1`,
		`mcpx_policy_upstream_calls_in_flight 0`,
		`mcpx_policy_ledger_pending_entries{server="notes"} 1`,
		`mcpx_policy_ledger_readable 1`,
		`mcpx_policy_config_last_reload_successful 1`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics lacks %s:\n%s", want, grepLines(m, "mcpx_policy_"))
		}
	}
}
