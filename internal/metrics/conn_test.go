package metrics_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpx/mcpx-policy/internal/metrics"
)

// TestConnCountsUpstreamCalls runs tools/call requests over a real
// in-memory MCP connection pair: the instrumented side counts each call in
// flight until its response comes back, by result, and a call left
// unanswered when the connection closes as lost. Other methods are not
// counted.
func TestConnCountsUpstreamCalls(t *testing.T) {
	ctx := context.Background()
	m := metrics.New(metrics.Options{})
	a, b := mcp.NewInMemoryTransports()
	ca, err := a.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	server, err := b.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	proxy := m.Upstream(ca)
	call := func(id int64, method string) {
		t.Helper()
		jid, err := jsonrpc.MakeID(float64(id))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			done <- proxy.Write(ctx, &jsonrpc.Request{ID: jid, Method: method, Params: json.RawMessage(`{}`)})
		}()
		if _, err := server.Read(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	answer := func(id int64, fail bool) {
		t.Helper()
		jid, err := jsonrpc.MakeID(float64(id))
		if err != nil {
			t.Fatal(err)
		}
		resp := &jsonrpc.Response{ID: jid, Result: json.RawMessage(`{"content":[]}`)}
		if fail {
			resp = &jsonrpc.Response{ID: jid, Error: &jsonrpc.Error{Code: -32603, Message: "boom"}}
		}
		go server.Write(ctx, resp)
		if _, err := proxy.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	call(1, "tools/call")
	call(2, "tools/call")
	call(3, "tools/list")
	call(4, "tools/call")
	if v := gathered(t, m, "mcpx_policy_upstream_calls_in_flight", ""); v != 3 {
		t.Fatalf("in flight after 3 tools/call = %v; want 3", v)
	}
	answer(1, false)
	answer(2, true)
	answer(3, false) // tools/list: not counted
	if v := gathered(t, m, "mcpx_policy_upstream_calls_in_flight", ""); v != 1 {
		t.Fatalf("in flight after 2 answers = %v; want 1", v)
	}
	proxy.Close()
	server.Close()
	if v := gathered(t, m, "mcpx_policy_upstream_calls_in_flight", ""); v != 0 {
		t.Errorf("in flight after close = %v; want 0", v)
	}
	for result, want := range map[string]int{"result": 1, "error": 1, "lost": 1} {
		if got := gathered(t, m, "mcpx_policy_upstream_call_duration_seconds", result); got != float64(want) {
			t.Errorf("upstream calls with result %s = %v; want %d", result, got, want)
		}
	}
}

// gathered returns the value of a gauge, or the sample count of a
// histogram series with label result (when not "").
func gathered(t *testing.T, m *metrics.Metrics, name, result string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.Metric {
			if result != "" && (len(s.Label) != 1 || s.Label[0].GetValue() != result) {
				continue
			}
			if s.Gauge != nil {
				return s.Gauge.GetValue()
			}
			return float64(s.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series %s{result=%q}", name, result)
	return 0
}
