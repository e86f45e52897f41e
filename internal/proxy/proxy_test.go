package proxy_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logBuffer is a slog sink the tests poll.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls the log until it contains s.
func (l *logBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(l.String(), s) {
			return
		}
	}
	t.Fatalf("log never said %q:\n%s", s, l.String())
}

type rig struct {
	eng    *mcpxpolicy.Engine
	conf   string
	server *mcp.Server
	client *mcp.ClientSession
	log    *logBuffer
	done   chan error
}

// newRig joins a Go SDK client, the proxy and a Go SDK server in memory;
// the client speaks MCP 2025-11-25 (initialize, server-to-client requests).
func newRig(t *testing.T, config string, opts proxy.Options, server *mcp.Server, clientOpts ...*mcp.ClientOptions) *rig {
	t.Helper()
	return newRigAt(t, "2025-11-25", config, opts, server, clientOpts...)
}

// newRigAt is newRig with the client on protocol version (2026-07-28:
// server/discover, per-request metadata, input_required results).
func newRigAt(t *testing.T, version, config string, opts proxy.Options, server *mcp.Server, clientOpts ...*mcp.ClientOptions) *rig {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{eng: eng, conf: conf, server: server, log: &logBuffer{}, done: make(chan error, 1)}
	clientEnd, proxyFront := net.Pipe()
	proxyBack, serverEnd := net.Pipe()
	if _, err := server.Connect(ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil); err != nil {
		t.Fatal(err)
	}
	front := proxy.NewStreamConn(proxyFront, proxyFront)
	back := proxy.NewStreamConn(proxyBack, proxyBack)
	opts.Engine, opts.Server = eng, "s"
	opts.Logger = slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	var running sync.WaitGroup
	running.Add(1)
	go func() { defer running.Done(); r.done <- proxy.Run(ctx, opts, front, back) }()
	// the proxy's last writes (a write's settling) end before the state
	// dir is removed
	t.Cleanup(func() { cancel(); running.Wait() })
	var co *mcp.ClientOptions
	if len(clientOpts) > 0 {
		co = clientOpts[0]
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, co)
	r.client, err = client.Connect(ctx, &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.client.Close() })
	return r
}

func textTool(name string, readOnly bool, handler func(ctx context.Context) string) (*mcp.Tool, mcp.ToolHandler) {
	tool := &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: readOnly}}
	return tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: handler(ctx)}}}, nil
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestListChangedRechecksRules: the config is checked against the
// server's tool list, and again when the server announces a change.
func TestListChangedRechecksRules(t *testing.T) {
	t.Parallel()
	const config = `version: 1
policy: {write: allow}
servers:
  s:
    argumentRules:
      - id: later-rule
        tools: ["later"]
        schema: {properties: {n: {type: integer}}}
`
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(textTool("now", true, func(context.Context) string { return "now" }))
	r := newRig(t, config, proxy.Options{}, srv)
	ctx := context.Background()
	res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "now", Arguments: map[string]any{}})
	if err != nil || resultText(res) != "now" {
		t.Fatalf("call now: %v %v", res, err)
	}
	r.log.waitFor(t, `matches no tool`)
	r.log.waitFor(t, `tools=1 warnings=1`)
	srv.AddTool(textTool("later", true, func(context.Context) string { return "later" }))
	r.log.waitFor(t, `tools=2 warnings=0`)
	res, err = r.client.CallTool(ctx, &mcp.CallToolParams{Name: "later", Arguments: map[string]any{"n": "x"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "later-rule") {
		t.Fatalf("call later with a bad argument: %v %v; want the rule's refusal", res, err)
	}
	// A reloaded config is checked against the list at the next call.
	if err := os.WriteFile(r.conf, []byte(strings.Replace(config, `tools: ["later"]`, `tools: ["gone"]`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.eng.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "now", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	r.log.waitFor(t, `pattern \"gone\" matches no tool`)
}

// TestWriteTimeoutIsUnknown: a write with no answer within CallTimeout is
// an unknown outcome; the server is told to cancel.
func TestWriteTimeoutIsUnknown(t *testing.T) {
	t.Parallel()
	cancelled := make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(textTool("slow_write", false, func(ctx context.Context) string {
		<-ctx.Done()
		close(cancelled)
		return "too late"
	}))
	srv.AddTool(textTool("write", false, func(context.Context) string { return "written" }))
	cmds := mcpxpolicy.Commands{StateDir: "/var/lib/state dir"}
	r := newRig(t, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n", proxy.Options{CallTimeout: time.Second, Commands: cmds}, srv)
	ctx := context.Background()
	res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{}})
	if err != nil || resultText(res) != "written" {
		t.Fatalf("a quick write: %v %v", res, err)
	}
	res, err = r.client.CallTool(ctx, &mcp.CallToolParams{Name: "slow_write", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "Outcome unknown") {
		t.Fatalf("a write past the timeout: %v %v; want the unknown outcome", res, err)
	}
	// The clear command, in the answer and in the log, runs as printed: it
	// names the proxy's state dir.
	id := res.Meta["mcpx-policy/unknown_outcome"].(map[string]any)["ledger_id"].(string)
	clear := cmds.WritesClear("s", id, "")
	if !strings.Contains(resultText(res), "(`"+clear+"`)") {
		t.Errorf("the answer does not name %q: %s", clear, resultText(res))
	}
	r.log.waitFor(t, `clear="mcpx-policy writes clear s --id `+id+` --state-dir '/var/lib/state dir' --reason '<what you found on the server>'"`)
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Error("the server was not told to cancel the timed-out call")
	}
	ws, err := entries(r.eng.Writes().List())
	if err != nil || len(ws) != 1 || ws[0].Tool != "slow_write" || ws[0].Cause != "no answer within 1s" {
		t.Fatalf("unknown writes = %+v, %v", ws, err)
	}
	res, err = r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "UnknownOutcomePending") {
		t.Fatalf("a write after the unknown outcome: %v %v; want UnknownOutcomePending", res, err)
	}
}

// TestAskAndCancel: an ask is elicited from the client and, approved,
// forwarded; a write the client cancels after it was sent is an unknown
// outcome, and the server sees the cancellation.
func TestAskAndCancel(t *testing.T) {
	t.Parallel()
	started, cancelled := make(chan struct{}), make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	srv.AddTool(textTool("write", false, func(context.Context) string { return "written" }))
	srv.AddTool(textTool("hang", false, func(ctx context.Context) string {
		close(started)
		<-ctx.Done()
		close(cancelled)
		return "cancelled"
	}))
	var mu sync.Mutex
	var asked []string
	elicit := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		asked = append(asked, req.Params.Message)
		mu.Unlock()
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}
	r := newRig(t, "version: 1\npolicy: {write: ask, unknownArgs: \"off\"}\n", proxy.Options{}, srv, &mcp.ClientOptions{ElicitationHandler: elicit})
	ctx := context.Background()
	res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"k": "v"}})
	if err != nil || res.IsError || resultText(res) != "written" {
		t.Fatalf("approved write: %v %v", res, err)
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "s.write") || !strings.Contains(asked[0], `{"k":"v"}`) {
		t.Errorf("asked %q; want one confirmation of the exact call", asked)
	}
	mu.Unlock()
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		<-started
		cancel()
	}()
	if _, err := r.client.CallTool(cctx, &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the cancellation")
	}
	var ws []decision.UnknownWrite
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && len(ws) == 0; time.Sleep(20 * time.Millisecond) {
		ws, err = entries(r.eng.Writes().List())
	}
	if len(ws) != 1 || ws[0].Tool != "hang" || !strings.Contains(ws[0].Cause, "cancelled by the client") {
		t.Fatalf("unknown writes = %+v, %v", ws, err)
	}
}

// TestHTTPRefusesRebinding: a loopback listener refuses a non-loopback
// Host (DNS rebinding) and cross-origin browser requests, before any
// server is started.
func TestHTTPRefusesRebinding(t *testing.T) {
	t.Parallel()
	started := false
	h := proxy.NewHTTPHandler(context.Background(), proxy.Options{}, func(context.Context) (proxy.Conn, error) {
		started = true
		return nil, context.Canceled
	})
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	for name, set := range map[string]func(*http.Request){
		"rebound host":         func(r *http.Request) { r.Host = "evil.example:80" },
		"cross-origin browser": func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
	} {
		req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d; want 403", name, resp.StatusCode)
		}
	}
	if started {
		t.Error("a refused request started a server")
	}
}

// entries are the unknown-outcome entries of a ledger listing.
func entries(st mcpxpolicy.WritesState, err error) ([]decision.UnknownWrite, error) {
	return st.Entries, err
}
