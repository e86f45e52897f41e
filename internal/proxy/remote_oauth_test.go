package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	oauthClientID = "mcpx-client"
	oauthSecret   = "client-secret-1a2b3c4d5e6f7a8b9c0d"
)

// tokenServer is an OAuth 2.0 token endpoint that grants remoteToken for
// the client credentials (oauthClientID, oauthSecret) and echoes whatever
// it was sent into its refusals, as a careless one might.
type tokenServer struct {
	mu     sync.Mutex
	grants int
	scopes []string
}

func (s *tokenServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	r.ParseForm()
	if !ok || id != oauthClientID || secret != oauthSecret || r.Form.Get("grant_type") != "client_credentials" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"invalid_client","error_description":"bad client %s:%s"}`, id, secret)
		return
	}
	s.mu.Lock()
	s.grants++
	s.scopes = append(s.scopes, r.Form.Get("scope"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": remoteToken, "token_type": "Bearer", "expires_in": 3600})
}

// TestRemoteOAuthClientCredentials: with OAuth client credentials the
// proxy gets its bearer token from the token endpoint (once, kept until
// it expires) and the server sees only that token; the secret and the
// token show nowhere.
func TestRemoteOAuthClientCredentials(t *testing.T) {
	t.Parallel()
	ts := &tokenServer{}
	tokens := httptest.NewServer(ts)
	t.Cleanup(tokens.Close)
	r := newRemoteRigWith(t, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n", remoteServer(nil), nil, nil, proxy.RemoteOptions{
		OAuth: &proxy.ClientCredentials{TokenURL: tokens.URL + "/token", ClientID: oauthClientID, ClientSecret: oauthSecret, Scopes: []string{"mcp:tools", "mcp:read"}}})
	ctx := context.Background()
	for range 3 {
		res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "read"})
		if err != nil || res.IsError || resultText(res) != "read ok" {
			t.Fatalf("read = %v, %v", res, err)
		}
	}
	ts.mu.Lock()
	grants, scopes := ts.grants, strings.Join(ts.scopes, ",")
	ts.mu.Unlock()
	if grants != 1 || scopes != "mcp:tools mcp:read" {
		t.Errorf("the token endpoint granted %d tokens for scopes %q; want one, for \"mcp:tools mcp:read\"", grants, scopes)
	}
	r.front.mu.Lock()
	for _, a := range r.front.auths {
		if a != "Bearer "+remoteToken {
			t.Errorf("a request carried Authorization %q", a)
		}
	}
	r.front.mu.Unlock()
	r.noSecrets(t)
	if strings.Contains(r.log.String(), oauthSecret) {
		t.Errorf("the client secret shows in the log:\n%s", r.log)
	}
}

// TestRemoteOAuthRefused: credentials the token endpoint refuses make the
// request fail, with an error that names the token endpoint and shows
// neither the secret (which that endpoint echoed) nor the URL's query; a
// token URL in clear beyond loopback is refused before anything is sent.
func TestRemoteOAuthRefused(t *testing.T) {
	t.Parallel()
	tokens := httptest.NewServer(&tokenServer{})
	t.Cleanup(tokens.Close)
	mcpServer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the MCP server was reached without a token: %s", r.Header.Get("Authorization"))
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(mcpServer.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const wrong = "wrong-secret-99887766554433221100"
	back, err := proxy.ConnectRemote(ctx, mcpServer.URL+"/mcp?key=query-secret", proxy.RemoteOptions{
		OAuth: &proxy.ClientCredentials{TokenURL: tokens.URL + "/token", ClientID: oauthClientID, ClientSecret: wrong}})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if err := back.Write(ctx, initializeRequest(t)); err != nil {
		t.Fatal(err)
	}
	_, err = back.Read(ctx)
	if err == nil {
		t.Fatal("initialize with refused credentials: no error")
	}
	msg := err.Error()
	if strings.Contains(msg, wrong) || strings.Contains(msg, "query-secret") || !strings.Contains(msg, "OAuth token endpoint") {
		t.Errorf("the error = %q; want it to name the token endpoint and show no secret", msg)
	}
	if _, err := proxy.ConnectRemote(ctx, mcpServer.URL+"/mcp", proxy.RemoteOptions{
		OAuth: &proxy.ClientCredentials{TokenURL: "http://auth.example.com/token", ClientID: oauthClientID, ClientSecret: oauthSecret}}); err == nil {
		t.Error("a token URL in clear beyond loopback was accepted")
	}
	var _ jsonrpc.Message
}
