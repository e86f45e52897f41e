package policy_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// everythingConfig asks before every write; the long-running tool, which
// the server annotates read-only, is forced to count as a write.
const everythingConfig = `version: 1
policy:
  write: ask
servers:
  everything:
    writePolicy: ask
    writeTools: ["trigger-long-running-operation"]
`

// person answers elicitations: the proxy's confirmations by approve, the
// server's own by declining. It records what it was asked.
type person struct {
	mu       sync.Mutex
	approve  bool
	confirms []*mcp.ElicitParams
	others   []*mcp.ElicitParams
}

func (p *person) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.HasPrefix(req.Params.Message, "Confirm this call") {
		p.confirms = append(p.confirms, req.Params)
		if p.approve {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	p.others = append(p.others, req.Params)
	return &mcp.ElicitResult{Action: "decline"}, nil
}

func (p *person) counts() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.confirms), len(p.others)
}

func (p *person) set(approve bool) {
	p.mu.Lock()
	p.approve = approve
	p.mu.Unlock()
}

func TestE2EEverything(t *testing.T) {
	t.Parallel()
	server := npmServer(t, "mcp-server-everything")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := newGate(t, "everything", everythingConfig)
	who := &person{approve: true}
	progress := make(chan struct{}, 64)
	cs := connect(t, ctx, g.command(t, server), &mcp.ClientOptions{
		ElicitationHandler: who.handle,
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})

	t.Run("a read goes through without asking (annotations from the server's list)", func(t *testing.T) {
		res := call(t, ctx, cs, "get-sum", map[string]any{"a": 2, "b": 3})
		if res.IsError || !strings.Contains(text(res), "5") {
			t.Fatalf("get-sum = %q (error %v)", text(res), res.IsError)
		}
		if n, _ := who.counts(); n != 0 {
			t.Errorf("a read-only tool asked for confirmation %d times", n)
		}
	})

	t.Run("a write asks through elicitation; approved it runs", func(t *testing.T) {
		res := call(t, ctx, cs, "toggle-simulated-logging", map[string]any{})
		if res.IsError {
			t.Fatalf("approved write failed: %s", text(res))
		}
		n, _ := who.counts()
		if n != 1 {
			t.Fatalf("%d confirmations; want 1", n)
		}
		p := who.confirms[0]
		if !strings.Contains(p.Message, "everything.toggle-simulated-logging") || !strings.Contains(p.Message, "sha256:") {
			t.Errorf("confirmation message does not show the exact call:\n%s", p.Message)
		}
	})

	t.Run("declined, it is refused", func(t *testing.T) {
		who.set(false)
		defer who.set(true)
		res := call(t, ctx, cs, "toggle-simulated-logging", map[string]any{})
		if code := refusal(res); code != "ConfirmationDeclined" {
			t.Fatalf("refusal %q; want ConfirmationDeclined (%s)", code, text(res))
		}
	})

	t.Run("the server's own elicitation passes through", func(t *testing.T) {
		tools := toolNames(t, ctx, cs)
		if _, ok := tools["trigger-elicitation-request"]; !ok {
			t.Fatalf("the pinned server registers trigger-elicitation-request for a client with elicitation; tools: %v", tools)
		}
		_, before := who.counts()
		res := call(t, ctx, cs, "trigger-elicitation-request", map[string]any{})
		if _, after := who.counts(); after != before+1 {
			t.Fatalf("the server's elicitation did not reach the client (result %s)", text(res))
		}
		if !strings.Contains(strings.ToLower(text(res)), "decline") {
			t.Errorf("result does not report the decline: %s", text(res))
		}
	})

	t.Run("a long-running write cancelled mid-call becomes an unknown outcome", func(t *testing.T) {
		// Cancel once the server reports progress: the call is running
		// there, so its request went out.
		cctx, ccancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-progress:
			case <-time.After(20 * time.Second):
			}
			ccancel()
		}()
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 30, "steps": 30}}
		params.SetProgressToken("long-running")
		_, err := cs.CallTool(cctx, params)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call returned %v; want context.Canceled", err)
		}
		eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{g.config}, StateDir: g.state, Env: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		var ws []decision.UnknownWrite
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if ws, err = entries(eng.Writes().List()); err == nil && len(ws) > 0 {
				break
			}
		}
		if len(ws) != 1 || ws[0].Tool != "trigger-long-running-operation" || !strings.Contains(ws[0].Cause, "cancelled") {
			t.Fatalf("unknown writes = %+v, %v; want the cancelled call", ws, err)
		}
		before, _ := who.counts()
		res := call(t, ctx, cs, "toggle-simulated-logging", map[string]any{})
		if code := refusal(res); code != "UnknownOutcomePending" {
			t.Fatalf("write after an unknown outcome: %q; want UnknownOutcomePending (%s)", code, text(res))
		}
		if after, _ := who.counts(); after != before {
			t.Error("a write blocked by the ledger still asked for confirmation")
		}
		if res := call(t, ctx, cs, "get-sum", map[string]any{"a": 1, "b": 1}); res.IsError {
			t.Errorf("a read was refused while writes are blocked: %s", text(res))
		}
		clear := exec.Command(filepath.Join(binDir, "mcpx-policy"), "writes", "clear", "everything", "--state-dir", g.state, "--reason", "e2e: checked")
		if out, err := clear.CombinedOutput(); err != nil {
			t.Fatalf("writes clear: %v\n%s", err, out)
		}
		if res := call(t, ctx, cs, "toggle-simulated-logging", map[string]any{}); res.IsError {
			t.Fatalf("write after the clear: %s", text(res))
		}
	})
}

func TestE2EEverythingWithoutElicitation(t *testing.T) {
	t.Parallel()
	server := npmServer(t, "mcp-server-everything")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := newGate(t, "everything", everythingConfig)
	cs := connect(t, ctx, g.command(t, server), nil)
	res := call(t, ctx, cs, "toggle-simulated-logging", map[string]any{})
	if code := refusal(res); code != "ConfirmationUnavailable" {
		t.Fatalf("ask without elicitation: %q; want ConfirmationUnavailable (%s)", code, text(res))
	}
	if res := call(t, ctx, cs, "echo", map[string]any{"message": "hi"}); res.IsError || !strings.Contains(text(res), "hi") {
		t.Errorf("echo = %q", text(res))
	}
}
