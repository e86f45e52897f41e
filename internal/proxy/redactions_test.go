package proxy_test

import (
	"context"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRefusalRedactsOnce: a tools/call the policy refuses — answered to
// the client and recorded (proxy --record) — redacts its decision once,
// and so does an allowed call that is recorded. Not parallel: it reads
// the process's count of redactions.
func TestRefusalRedactsOnce(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(textTool("read", true, func(context.Context) string { return "read" }))
	srv.AddTool(textTool("write", false, func(context.Context) string { return "written" }))
	var recorded []mcpxpolicy.Redacted
	r := newRig(t, "version: 1\npolicy: {write: deny}\nservers: {s: {}}\n", proxy.Options{OnDecision: func(_ decision.Call, shown mcpxpolicy.Redacted, _ bool) {
		recorded = append(recorded, shown)
	}}, srv)
	ctx := context.Background()

	before := redact.Count()
	res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"token": "ghp_16C7e42F292c6912E7710c838347Ae178B4a"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "WriteDenied") {
		t.Fatalf("the write: %v %v; want a WriteDenied refusal", res, err)
	}
	if n := redact.Count() - before; n != 1 || len(recorded) != 1 {
		t.Errorf("a refused call: %d redactions, %d recorded; want 1 and 1", n, len(recorded))
	}

	before = redact.Count()
	res, err = r.client.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("the read: %v %v", res, err)
	}
	if n := redact.Count() - before; n != 1 || len(recorded) != 2 {
		t.Errorf("an allowed, recorded call: %d redactions, %d recorded; want 1 and 2", n, len(recorded))
	}
}
