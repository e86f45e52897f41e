package proxy_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// withBearer adds an Authorization header to every request.
type withBearer struct{ token string }

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestRemotePassesTheClientsToken: with PassAuthorization and
// RemoteOptions.PassClientAuthorization, each --listen session reaches
// the remote server with the bearer token its client gave the proxy (a
// stateless request with its own), and a client that gave none reaches
// it with none and is refused by the server; the token shows in no log
// line, decision or answer.
func TestRemotePassesTheClientsToken(t *testing.T) {
	t.Parallel()
	eng, _ := newEngine(t, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n")
	f := &front{next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remoteServer(nil) }, nil), token: remoteToken}
	upstream := httptest.NewServer(f)
	t.Cleanup(upstream.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log, decided := &logBuffer{}, &logBuffer{}
	start := func(ctx context.Context) (proxy.Conn, error) {
		return proxy.ConnectRemote(ctx, upstream.URL+"/mcp", proxy.RemoteOptions{PassClientAuthorization: true})
	}
	opts := proxy.Options{Engine: eng, Server: "s", Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		DecisionLog: func(c decision.Call, d mcpxpolicy.Redacted) error {
			b, _ := json.Marshal(map[string]any{"call": c, "decision": d})
			decided.Write(b)
			return nil
		}}
	h := proxy.NewHTTPHandler(ctx, opts, start, proxy.PassAuthorization(), proxy.DiscoverUpstream())
	listen := httptest.NewServer(h)
	t.Cleanup(func() { listen.Close(); h.Close() })

	connect := func(token string) (*mcp.ClientSession, error) {
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: listen.URL, HTTPClient: &http.Client{Transport: withBearer{token}}}, nil)
	}
	var texts []string
	session, err := connect(remoteToken)
	if err != nil {
		t.Fatalf("a client with the server's token: %v\n%s", err, log)
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "read", Arguments: map[string]any{}})
	if err != nil || resultText(res) != "read ok" {
		t.Fatalf("a read with the client's token: %v %v\n%s", res, err, log)
	}
	texts = append(texts, resultText(res))
	session.Close()
	f.mu.Lock()
	for _, a := range f.auths {
		if a != "Bearer "+remoteToken {
			t.Errorf("the server got Authorization %q; want the client's token", a)
		}
	}
	f.auths = nil
	f.mu.Unlock()

	// A stateless request passes its own token.
	req, _ := http.NewRequest("POST", listen.URL, strings.NewReader(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read","arguments":{},`+statelessMeta+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Authorization", "Bearer "+remoteToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	texts = append(texts, string(body))
	f.mu.Lock()
	stateless := append([]string(nil), f.auths...)
	f.auths = nil
	f.mu.Unlock()
	if len(stateless) == 0 || stateless[0] != "Bearer "+remoteToken {
		t.Errorf("a stateless request reached the server with Authorization %q; want the client's token", stateless)
	}

	// A client with no token, or another one, is the server's to refuse.
	for _, token := range []string{"", "not-the-servers-token"} {
		if s, err := connect(token); err == nil {
			s.Close()
			t.Errorf("a client with token %q got a session; want the server's refusal", token)
		} else {
			texts = append(texts, err.Error())
		}
	}
	f.mu.Lock()
	for _, a := range f.auths {
		if a == "Bearer "+remoteToken {
			t.Errorf("a client without the token reached the server with it")
		}
	}
	f.mu.Unlock()
	for _, s := range append(texts, log.String(), decided.String()) {
		if strings.Contains(s, remoteToken) {
			t.Errorf("the client's token shows:\n%s", s)
		}
	}
}
