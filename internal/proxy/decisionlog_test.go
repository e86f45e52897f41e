package proxy_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDecisionLogFailsClosed: while the decision log cannot be written
// (proxy --decision-log on a full disk), an allowed write is refused and
// never reaches the server; once a line can be written again, the same
// call runs.
func TestDecisionLogFailsClosed(t *testing.T) {
	var ran atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(textTool("write", false, func(context.Context) string { ran.Add(1); return "written" }))
	var broken atomic.Bool
	broken.Store(true)
	var logged atomic.Int32
	r := newRig(t, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n", proxy.Options{DecisionLog: func(decision.Call, mcpxpolicy.Redacted) error {
		if broken.Load() {
			return errors.New("no space left on device")
		}
		logged.Add(1)
		return nil
	}}, srv)
	ctx := context.Background()
	call := &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"path": "/w/a"}}

	res, err := r.client.CallTool(ctx, call)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "decision log") {
		t.Fatalf("with the log unwritable: %v %v; want a refusal naming the decision log", res, err)
	}
	if ran.Load() != 0 {
		t.Fatal("the server ran a call whose decision was not logged")
	}

	broken.Store(false)
	res, err = r.client.CallTool(ctx, call)
	if err != nil || res.IsError || ran.Load() != 1 || logged.Load() != 1 {
		t.Fatalf("with the log writable again: %v %v (ran %d, logged %d); want the call run once and logged", res, err, ran.Load(), logged.Load())
	}
}
