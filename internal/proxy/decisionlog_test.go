package proxy_test

import (
	"context"
	"errors"
	"strings"
	"sync"
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

// TestDecisionLogSaysWhatTheClientGot: for an ask, the decision log has
// the policy's ask and then what the client got — the held refusal for a
// client that cannot ask, and, once a person approved it out of band, the
// allow of the retry — and the counter of asks' ends sees the same.
func TestDecisionLogSaysWhatTheClientGot(t *testing.T) {
	var ran atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(textTool("write", false, func(context.Context) string { ran.Add(1); return "written" }))
	var mu sync.Mutex
	var lines, answered []string
	r := newRig(t, "version: 1\npolicy: {write: ask}\nservers: {s: {}}\n", proxy.Options{
		DecisionLog: func(_ decision.Call, shown mcpxpolicy.Redacted) error {
			d := shown.Decision()
			mu.Lock()
			lines = append(lines, string(d.Outcome)+" "+string(d.First().Code))
			mu.Unlock()
			return nil
		},
		OnAskAnswered: func(o decision.Outcome, c decision.Code) {
			mu.Lock()
			answered = append(answered, string(o)+" "+string(c))
			mu.Unlock()
		},
	}, srv)
	ctx := context.Background()
	call := &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"path": "/w/a"}}

	res, err := r.client.CallTool(ctx, call)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "mcpx-policy approve ") {
		t.Fatalf("the ask: %v %v; want the held refusal", res, err)
	}
	list, err := r.eng.Approvals().List()
	if err != nil || len(list) != 1 {
		t.Fatalf("requests: %v %v; want the one held", list, err)
	}
	if _, err := r.eng.Approvals().Approve(list[0].ID, list[0].SHA256); err != nil {
		t.Fatal(err)
	}
	if res, err := r.client.CallTool(ctx, call); err != nil || res.IsError || ran.Load() != 1 {
		t.Fatalf("the retry after the approval: %v %v (ran %d)", res, err, ran.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	if got, want := strings.Join(lines, " | "), "ask WriteNeedsConfirmation | deny ConfirmationUnavailable | ask WriteNeedsConfirmation | allow WriteNeedsConfirmation"; got != want {
		t.Errorf("decision log: %s\nwant:         %s", got, want)
	}
	if got, want := strings.Join(answered, " | "), "deny ConfirmationUnavailable | allow WriteNeedsConfirmation"; got != want {
		t.Errorf("asks' ends: %s; want %s", got, want)
	}
}

// TestUnlistedToolLogsWhatHappened: a call to a tool the server does not
// list is answered as an unknown tool, and the proxy's log says so — not
// an allow — while the decision log and the record of decisions get
// nothing that claims it was judged or sent.
func TestUnlistedToolLogsWhatHappened(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(textTool("read", true, func(context.Context) string { return "read" }))
	var mu sync.Mutex
	var logged []string
	var dispatched []bool
	r := newRig(t, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n", proxy.Options{
		DecisionLog: func(c decision.Call, shown mcpxpolicy.Redacted) error {
			mu.Lock()
			logged = append(logged, c.Tool.Name+" "+string(shown.Decision().Outcome))
			mu.Unlock()
			return nil
		},
		OnDecision: func(c decision.Call, _ mcpxpolicy.Redacted, sent bool) {
			mu.Lock()
			dispatched = append(dispatched, sent)
			mu.Unlock()
		},
	}, srv)
	ctx := context.Background()
	_, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "test_simple_text"`) {
		t.Fatalf("calling an unlisted tool: %v; want the unknown-tool error", err)
	}
	// a listed call after it, so its line is in the log before we read it
	if res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("calling a listed tool: %v %v", res, err)
	}
	r.log.waitFor(t, "msg=decision server=s tool=read outcome=allow")
	log := r.log.String()
	if !strings.Contains(log, "msg=decision server=s tool=test_simple_text outcome=unknown-tool") {
		t.Fatalf("the log does not say the unlisted call was answered as an unknown tool:\n%s", log)
	}
	if strings.Contains(log, "tool=test_simple_text outcome=allow") {
		t.Fatalf("the log says an unlisted call was allowed:\n%s", log)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || logged[0] != "read allow" || len(dispatched) != 1 || !dispatched[0] {
		t.Fatalf("decision log %q, records %v; want only the listed call, logged and recorded as sent", logged, dispatched)
	}
}
