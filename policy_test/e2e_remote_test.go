package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// remoteConfig: writes ask; echo counts as a write, and one message of it
// is denied by a rule; the long-running tool counts as a write.
const remoteEverythingConfig = `version: 1
policy:
  write: ask
servers:
  everything:
    writeTools: ["echo", "trigger-long-running-operation"]
    argumentRules:
      - id: no-rm
        tools: ["echo"]
        argument: message
        schema: {not: {const: "rm -rf /"}}
`

const e2eToken = "e2e-bearer-5f4e3d2c1b0a99887766554433221100"

// tokenGate is the HTTP server in front of the remote MCP server: it
// refuses a request without the bearer token (401) and records the
// tools/call names that reach the server.
type tokenGate struct {
	next  http.Handler
	mu    sync.Mutex
	calls []string
	auths int
}

func (g *tokenGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+e2eToken {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	g.mu.Lock()
	g.auths++
	if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
		g.calls = append(g.calls, m.Params.Name)
	}
	g.mu.Unlock()
	g.next.ServeHTTP(w, r)
}

func (g *tokenGate) reached() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.calls...)
}

// everythingOverHTTP starts @modelcontextprotocol/server-everything in
// its Streamable HTTP mode behind a tokenGate and returns the gate's URL
// and the server process.
func everythingOverHTTP(t *testing.T) (*tokenGate, string, *exec.Cmd) {
	t.Helper()
	port, server := everythingHTTP(t)
	target, _ := url.Parse("http://127.0.0.1:" + port)
	gate := &tokenGate{next: httputil.NewSingleHostReverseProxy(target)}
	front := httptest.NewServer(gate)
	t.Cleanup(front.Close)
	return gate, front.URL + "/mcp", server
}

// everythingHTTP starts @modelcontextprotocol/server-everything in its
// Streamable HTTP mode (at http://127.0.0.1:PORT/mcp) and returns its
// port once it listens, and the process (killed at the test's end).
func everythingHTTP(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	bin := npmServer(t, "mcp-server-everything")
	addr := freeLoopbackAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	server := exec.Command(bin, "streamableHttp")
	server.Env = append(cleanEnv(), "PORT="+port)
	out := &syncBuffer{}
	server.Stdout, server.Stderr = out, out
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		server.Process.Kill()
		server.Wait()
		if t.Failed() {
			t.Logf("server-everything output:\n%s", out)
		}
	})
	// It listens on every interface at PORT: wait until it answers.
	waitListening(t, "127.0.0.1:"+port)
	return port, server
}

// TestE2ERemoteEverything: the proxy fronts server-everything over
// Streamable HTTP (`proxy --url`) with a bearer token from a file, and an
// MCP Go SDK client on stdio sees it judged as a stdio server is: the
// tools listed, a read allowed, a write a rule denies never reaching the
// server, a write asked and run; the token in no output. The server
// dying mid-write leaves an unknown outcome.
func TestE2ERemoteEverything(t *testing.T) {
	t.Parallel()
	gate, endpoint, server := everythingOverHTTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(e2eToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	decisions := filepath.Join(dir, "decisions.jsonl")
	g := newGate(t, "everything", remoteEverythingConfig, "--url", endpoint, "--bearer-token-file", tokenFile, "--decision-log", decisions, "--log-level", "debug")
	who := &person{approve: true}
	progress := make(chan struct{}, 64)
	proxyCmd := g.command(t)
	cs := connect(t, ctx, proxyCmd, &mcp.ClientOptions{
		ElicitationHandler: who.handle,
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- struct{}{}:
			default:
			}
		},
	})
	var texts []string

	tools := toolNames(t, ctx, cs)
	for _, name := range []string{"get-sum", "echo", "toggle-simulated-logging", "trigger-long-running-operation"} {
		if tools[name] == nil {
			t.Fatalf("tools/list through the proxy lacks %s: %v", name, tools)
		}
	}
	res := call(t, ctx, cs, "get-sum", map[string]any{"a": 2, "b": 3})
	if res.IsError || !strings.Contains(text(res), "5") {
		t.Fatalf("get-sum = %q (error %v)", text(res), res.IsError)
	}
	if n, _ := who.counts(); n != 0 {
		t.Errorf("a read asked %d times", n)
	}
	res = call(t, ctx, cs, "echo", map[string]any{"message": "rm -rf /"})
	if code := refusal(res); code != "ArgumentRuleViolation" {
		t.Errorf("echo of a denied message: refusal %q; want ArgumentRuleViolation (%s)", code, text(res))
	}
	texts = append(texts, text(res))
	if n, _ := who.counts(); n != 0 {
		t.Errorf("a denied write asked %d times", n)
	}
	res = call(t, ctx, cs, "toggle-simulated-logging", map[string]any{})
	if res.IsError {
		t.Fatalf("approved write failed: %s", text(res))
	}
	if n, _ := who.counts(); n != 1 {
		t.Errorf("the write asked %d times; want 1", n)
	}
	texts = append(texts, text(res))
	if got := strings.Join(gate.reached(), ","); got != "get-sum,toggle-simulated-logging" {
		t.Errorf("calls that reached the server: %s; want get-sum,toggle-simulated-logging (never the denied echo)", got)
	}

	// The server dies while a write runs: once it reports progress the
	// call is running there.
	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 60, "steps": 60}}
		params.SetProgressToken("long")
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}
		}
		got <- res
	}()
	select {
	case <-progress:
	case <-ctx.Done():
		t.Fatal("the long-running write never reported progress")
	}
	server.Process.Kill()
	res = <-got
	if res.Meta["mcpx-policy/unknown_outcome"] == nil {
		t.Fatalf("the write the server died in = %s; want the unknown-outcome answer", text(res))
	}
	texts = append(texts, text(res))
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{g.config}, StateDir: g.state, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ws, err := entries(eng.Writes().List())
	if err != nil || len(ws) != 1 || ws[0].Tool != "trigger-long-running-operation" {
		t.Fatalf("unknown writes = %+v, %v; want the write the server died in", ws, err)
	}
	texts = append(texts, ws[0].Cause)
	// The session is gone: the proxy ends, saying so.
	cs.Close()
	proxyCmd.Wait()
	if !strings.Contains(g.stderr.String(), "the MCP server at http://127.0.0.1:") {
		t.Errorf("the proxy's stderr does not name the remote server:\n%s", g.stderr)
	}

	logged, err := os.ReadFile(decisions)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(logged, []byte("\n")); n < 4 {
		t.Errorf("the decision log holds %d lines; want one per call (4)", n)
	}
	texts = append(texts, g.stderr.String(), string(logged))
	for _, s := range texts {
		if strings.Contains(s, e2eToken) {
			t.Errorf("the bearer token shows in an output:\n%s", s)
		}
	}
}

// TestE2ERemoteTokenRequired: without the token the server refuses the
// session and nothing is judged as run; a token file other users may
// write is refused before anything is sent.
func TestE2ERemoteTokenRequired(t *testing.T) {
	t.Parallel()
	gate, endpoint, _ := everythingOverHTTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := newGate(t, "everything", remoteEverythingConfig, "--url", endpoint)
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpx-policy-e2e", Version: "1"}, nil)
	if cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: g.command(t)}, nil); err == nil {
		cs.Close()
		t.Fatal("a session without the token was initialized")
	}
	if n := len(gate.reached()); n != 0 {
		t.Errorf("%d calls reached the server", n)
	}

	dir := t.TempDir()
	loose := filepath.Join(dir, "token")
	if err := os.WriteFile(loose, []byte(e2eToken), 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(loose, 0o666)
	g = newGate(t, "everything", remoteEverythingConfig, "--url", endpoint, "--bearer-token-file", loose)
	err := g.command(t).Run()
	out := g.stderr.String()
	if err == nil || !strings.Contains(out, "bearer-token-file") {
		t.Errorf("a token file others may write: %v\n%s", err, out)
	}
	if strings.Contains(out, e2eToken) {
		t.Errorf("the refusal shows the token:\n%s", out)
	}
}

// TestE2ERemoteBehindListen: `proxy --listen --url` — HTTP on both sides,
// the token from the environment: a read runs, a denied write is never
// sent, and the token shows nowhere.
func TestE2ERemoteBehindListen(t *testing.T) {
	t.Parallel()
	gate, endpoint, _ := everythingOverHTTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr := freeLoopbackAddr(t)
	g := newGate(t, "everything", remoteEverythingConfig, "--listen", addr, "--url", endpoint, "--bearer-token-env", "E2E_UPSTREAM_TOKEN")
	cmd := g.command(t)
	cmd.Env = append(cmd.Env, "E2E_UPSTREAM_TOKEN="+e2eToken)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(interrupt)
		cmd.Wait()
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpx-policy-e2e", Version: "1"}, nil)
	var cs *mcp.ClientSession
	var err error
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if cs, err = client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("connecting over HTTP: %v", err)
	}
	defer cs.Close()
	if res := call(t, ctx, cs, "get-sum", map[string]any{"a": 4, "b": 5}); res.IsError || !strings.Contains(text(res), "9") {
		t.Errorf("get-sum = %q", text(res))
	}
	res := call(t, ctx, cs, "echo", map[string]any{"message": "rm -rf /"})
	if code := refusal(res); code != "ArgumentRuleViolation" {
		t.Errorf("a denied echo = %q (%s)", code, text(res))
	}
	if got := strings.Join(gate.reached(), ","); got != "get-sum" {
		t.Errorf("calls that reached the server: %s; want get-sum", got)
	}
	cmd.Process.Signal(interrupt)
	cmd.Wait()
	if strings.Contains(g.stderr.String(), e2eToken) {
		t.Errorf("the token shows on stderr:\n%s", g.stderr)
	}
}

// TestE2ERemoteOAuth: `proxy --url` with OAuth client credentials — the
// built proxy gets its bearer token from a token endpoint (the client id
// and the secret from a file, in HTTP Basic authentication, once), the
// server-everything behind the token gate runs the calls, and neither
// the secret nor the token shows in any output.
func TestE2ERemoteOAuth(t *testing.T) {
	t.Parallel()
	const secret = "e2e-client-secret-0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	var mu sync.Mutex
	grants := 0
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, sec, ok := r.BasicAuth()
		r.ParseForm()
		if !ok || id != "mcpx-e2e" || sec != secret || r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("scope") != "mcp" {
			http.Error(w, `{"error":"invalid_client"}`, http.StatusUnauthorized)
			return
		}
		mu.Lock()
		grants++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": e2eToken, "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(tokens.Close)
	gate, endpoint, _ := everythingOverHTTP(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newGate(t, "everything", remoteEverythingConfig, "--url", endpoint, "--oauth-token-url", tokens.URL+"/token",
		"--oauth-client-id", "mcpx-e2e", "--oauth-client-secret-file", secretFile, "--oauth-scope", "mcp", "--log-level", "debug")
	cs := connect(t, ctx, g.command(t), nil)
	for _, n := range []float64{2, 3} {
		res := call(t, ctx, cs, "get-sum", map[string]any{"a": n, "b": 3})
		if res.IsError || !strings.Contains(text(res), fmt.Sprint(n+3)) {
			t.Fatalf("get-sum = %q (error %v)", text(res), res.IsError)
		}
	}
	if got := strings.Join(gate.reached(), ","); got != "get-sum,get-sum" {
		t.Errorf("calls that reached the server: %s; want get-sum twice", got)
	}
	mu.Lock()
	if grants != 1 {
		t.Errorf("the token endpoint granted %d tokens; want 1 (kept until it expires)", grants)
	}
	mu.Unlock()
	cs.Close()
	for _, s := range []string{secret, e2eToken} {
		if strings.Contains(g.stderr.String(), s) {
			t.Errorf("the proxy's stderr shows a secret:\n%s", g.stderr)
		}
	}
}
