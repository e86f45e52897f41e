package proxy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The remote rig joins a Go SDK client (over a pipe), the proxy and an MCP
// server served over Streamable HTTP by the Go SDK's own handler (or a raw
// handler of the test), through proxy.ConnectRemote: the path of
// `mcpx-policy proxy --url`.

const remoteToken = "tok-9f8e7d6c5b4a39281706f5e4d3c2b1a0"

// front is the HTTP server in front of the MCP server: it requires the
// bearer token (when token is set), records the tools/call it lets
// through and may answer in the server's place (intercept).
type front struct {
	next      http.Handler
	token     string
	mu        sync.Mutex
	calls     []string // tools/call names that reached the server
	auths     []string // Authorization headers seen
	gets      int      // GET requests (the standalone stream)
	intercept func(w http.ResponseWriter, r *http.Request, body []byte) bool
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.mu.Lock()
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	if r.Method == http.MethodGet {
		f.gets++
	}
	intercept := f.intercept
	f.mu.Unlock()
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if intercept != nil && intercept(w, r, body) {
		return
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" {
		f.mu.Lock()
		f.calls = append(f.calls, m.Params.Name)
		f.mu.Unlock()
	}
	f.next.ServeHTTP(w, r)
}

func (f *front) reached() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

type remoteRig struct {
	eng     *mcpxpolicy.Engine
	client  *mcp.ClientSession
	log     *logBuffer
	done    chan error
	front   *front
	http    *httptest.Server
	decided *bytes.Buffer
}

// newRemoteRig serves srv (nil: handler) over HTTP behind a front that
// requires remoteToken, and joins the proxy to it with that token.
func newRemoteRig(t *testing.T, config string, srv *mcp.Server, handler http.Handler, clientOpts *mcp.ClientOptions) *remoteRig {
	t.Helper()
	return newRemoteRigWith(t, config, srv, handler, clientOpts, proxy.RemoteOptions{Token: remoteToken})
}

// newRemoteRigWith is newRemoteRig with the proxy's RemoteOptions given.
func newRemoteRigWith(t *testing.T, config string, srv *mcp.Server, handler http.Handler, clientOpts *mcp.ClientOptions, ropts proxy.RemoteOptions) *remoteRig {
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
	if handler == nil {
		handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	f := &front{next: handler, token: remoteToken}
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close)
	r := &remoteRig{eng: eng, log: &logBuffer{}, done: make(chan error, 1), front: f, http: hs, decided: &bytes.Buffer{}}
	back, err := proxy.ConnectRemote(ctx, hs.URL+"/mcp?key=query-secret", ropts)
	if err != nil {
		t.Fatal(err)
	}
	clientEnd, proxyFront := net.Pipe()
	var mu sync.Mutex
	opts := proxy.Options{Engine: eng, Server: "s",
		Logger: slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		DecisionLog: func(c decision.Call, d mcpxpolicy.Redacted) error {
			b, _ := json.Marshal(map[string]any{"call": c, "decision": d})
			mu.Lock()
			r.decided.Write(b)
			mu.Unlock()
			return nil
		}}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		r.done <- proxy.Run(ctx, opts, proxy.NewStreamConn(proxyFront, proxyFront), back)
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, clientOpts)
	r.client, err = client.Connect(ctx, &mcp.IOTransport{Reader: clientEnd, Writer: clientEnd}, nil)
	if err != nil {
		t.Fatalf("connecting through the proxy: %v\n%s", err, r.log)
	}
	t.Cleanup(func() {
		r.client.Close()
		cancel()
		<-finished // the state dir is written no more
		eng.Close()
		if t.Failed() {
			t.Logf("proxy log:\n%s", r.log)
		}
	})
	return r
}

// noSecrets fails the test if the token or the URL's query shows in the
// proxy's log, the decisions or any text.
func (r *remoteRig) noSecrets(t *testing.T, texts ...string) {
	t.Helper()
	texts = append(texts, r.log.String(), r.decided.String())
	for _, s := range texts {
		for _, secret := range []string{remoteToken, "query-secret"} {
			if strings.Contains(s, secret) {
				t.Errorf("a secret (%s) shows:\n%s", secret, s)
			}
		}
	}
}

const remoteConfig = `version: 1
policy:
  write: ask
servers:
  s:
    hiddenTools: ["secret_*"]
    argumentRules:
      - id: no-rm
        tools: ["write"]
        argument: what
        schema: {not: {const: "rm -rf /"}}
`

func remoteServer(block chan struct{}) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	srv.AddTool(textTool("read", true, func(context.Context) string { return "read ok" }))
	srv.AddTool(textTool("secret_dump", true, func(context.Context) string { return "dumped" }))
	srv.AddTool(&mcp.Tool{Name: "write", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"what": map[string]any{"type": "string"}}}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if block != nil && strings.Contains(string(req.Params.Arguments), "block") {
				select {
				case <-block:
				case <-ctx.Done():
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote"}}}, nil
		})
	return srv
}

// TestRemoteUpstream: a server over Streamable HTTP is judged as a stdio
// one is — the list filtered, a read allowed, a hidden tool and a denied
// write never reach it, a write asks — with the bearer token sent and
// shown nowhere.
func TestRemoteUpstream(t *testing.T) {
	t.Parallel()
	who := &person{approve: true}
	r := newRemoteRig(t, remoteConfig, remoteServer(nil), nil, &mcp.ClientOptions{ElicitationHandler: who.handler})
	ctx := context.Background()
	var texts []string

	list, err := r.client.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "read,write" {
		t.Errorf("tools/list = %v; want read,write (secret_dump hidden)", names)
	}
	res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "read"})
	if err != nil || res.IsError || resultText(res) != "read ok" {
		t.Fatalf("read = %v, %v", res, err)
	}
	// A hidden tool is answered as one the server does not have.
	if res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "secret_dump"}); err == nil && !res.IsError {
		t.Fatalf("hidden tool = %s; want a refusal", resultText(res))
	}
	res, err = r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "rm -rf /"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "no-rm") {
		t.Fatalf("denied write = %v, %v; want the no-rm refusal", res, err)
	}
	texts = append(texts, resultText(res))
	if n := len(who.prompts()); n != 0 {
		t.Errorf("a denied write asked (%d prompts)", n)
	}
	res, err = r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "hello"}})
	if err != nil || res.IsError || resultText(res) != "wrote" {
		t.Fatalf("approved write = %v, %v", res, err)
	}
	if n := len(who.prompts()); n != 1 {
		t.Errorf("the write asked %d times; want 1", n)
	}
	if got := strings.Join(r.front.reached(), ","); got != "read,write" {
		t.Errorf("calls that reached the server: %s; want read,write (nothing hidden or denied)", got)
	}
	r.front.mu.Lock()
	for _, a := range r.front.auths {
		if a != "Bearer "+remoteToken {
			t.Errorf("a request carried Authorization %q", a)
		}
	}
	r.front.mu.Unlock()
	r.noSecrets(t, texts...)
}

// TestRemoteLostAnswersAreUnknown: a write whose HTTP exchange fails (a
// 500), whose stream is cut before its answer, or whose session the
// server dropped (404) leaves an unknown outcome, as a stdio server that
// exits does; the dropped session ends the proxy's.
func TestRemoteLostAnswersAreUnknown(t *testing.T) {
	t.Parallel()
	const config = "version: 1\npolicy:\n  write: allow\n"
	cases := []struct {
		name    string
		fault   func(f *front) // set before the write
		gone    bool           // the session ends (a 5xx does not: the SDK counts it transient)
		wantErr string
	}{
		{"a 500 answers the POST", func(f *front) {
			f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
				if bytes.Contains(body, []byte(`"tools/call"`)) {
					http.Error(w, "boom", http.StatusInternalServerError)
					return true
				}
				return false
			}
		}, false, "Internal Server Error"},
		{"the session is dropped (404)", func(f *front) {
			// Dropped when the write comes, not before: a request of the
			// session before it (the standalone stream's reconnection)
			// would end the session first, and the write, never sent,
			// would rightly leave nothing.
			var dropped atomic.Bool
			f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
				if bytes.Contains(body, []byte(`"tools/call"`)) {
					dropped.Store(true)
				}
				if dropped.Load() && r.Header.Get("Mcp-Session-Id") != "" {
					http.Error(w, "session not found", http.StatusNotFound)
					return true
				}
				return false
			}
		}, true, "session not found"},
		{"the stream is cut before the answer", func(f *front) {
			f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
				if !bytes.Contains(body, []byte(`"tools/call"`)) {
					return false
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.WriteHeader(http.StatusOK)
				w.(http.Flusher).Flush()
				return true // the stream ends, no answer on it
			}
		}, false, "answer was lost"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRemoteRig(t, config, remoteServer(nil), nil, nil)
			ctx := context.Background()
			if _, err := r.client.ListTools(ctx, nil); err != nil {
				t.Fatal(err)
			}
			r.front.mu.Lock()
			c.fault(r.front)
			r.front.mu.Unlock()
			res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "x"}})
			switch {
			case err != nil && c.gone:
				// The session ends with the server's: the answer may lose
				// the race with the end of the client's connection (a
				// lost answer too); the ledger below is what must hold.
				t.Logf("write: %v (the session ended first)", err)
				res = &mcp.CallToolResult{}
			case err != nil:
				t.Fatalf("write: %v", err)
			default:
				if code := reasonCode(res); code != "UnknownOutcome" {
					t.Fatalf("write after the fault = %q (%s); want UnknownOutcome", code, resultText(res))
				}
			}
			if c.gone {
				// Run ends after the proxy has settled what was in flight:
				// the client's EOF may come before that.
				if err := <-r.done; !errors.Is(err, proxy.ErrServerGone) {
					t.Errorf("Run = %v; want ErrServerGone", err)
				}
			}
			ws := remoteUnknown(t, r.eng)
			if len(ws) != 1 || ws[0].Tool != "write" || !strings.Contains(ws[0].Cause, c.wantErr) {
				t.Fatalf("unknown writes = %+v; want the write, its cause naming %q", ws, c.wantErr)
			}
			r.noSecrets(t, resultText(res), ws[0].Cause)
		})
	}
}

// TestRemoteServerGoneMidWrite: the HTTP server dies while a write runs:
// its outcome is unknown and the session ends.
func TestRemoteServerGoneMidWrite(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	r := newRemoteRig(t, "version: 1\npolicy:\n  write: allow\n", remoteServer(block), nil, nil)
	ctx := context.Background()
	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "block"}})
		if err != nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		got <- res
	}()
	until(t, "the write reaches the server", func() bool { return len(r.front.reached()) == 1 })
	r.http.CloseClientConnections()
	r.http.Close()
	res := <-got
	if code := reasonCode(res); code != "UnknownOutcome" {
		t.Fatalf("write cut off = %q (%s); want UnknownOutcome", code, resultText(res))
	}
	if ws := remoteUnknown(t, r.eng); len(ws) != 1 {
		t.Fatalf("unknown writes = %+v; want one", ws)
	}
}

// TestRemoteStrictFrames: the server's frames over HTTP — a JSON answer
// and an event of a stream — pass the strict check as a stdio server's
// lines do: an answer with a duplicate key is refused (a write's outcome
// is then unknown), and one the server pads with spaces or splits over
// data lines passes as the server meant it.
func TestRemoteStrictFrames(t *testing.T) {
	t.Parallel()
	srv := remoteServer(nil)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	answer := ""
	raw := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &m)
		mu.Lock()
		a := answer
		mu.Unlock()
		if m.Method != "tools/call" || a == "" {
			sdk.ServeHTTP(w, r)
			return
		}
		frame := strings.ReplaceAll(a, "ID", string(m.ID))
		if strings.Contains(frame, "data:") {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, frame)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, frame)
	})
	r := newRemoteRig(t, "version: 1\npolicy:\n  write: allow\n", nil, raw, nil)
	ctx := context.Background()
	if _, err := r.client.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	call := func(frame string) *mcp.CallToolResult {
		t.Helper()
		mu.Lock()
		answer = frame
		mu.Unlock()
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := r.client.CallTool(cctx, &mcp.CallToolParams{Name: "read"})
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		return res
	}
	ok := `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"fine"}]}}`
	if res := call(ok); res.IsError || resultText(res) != "fine" {
		t.Fatalf("a clean JSON answer = %s", resultText(res))
	}
	if res := call("data: " + ok + "\n\n"); res.IsError || resultText(res) != "fine" {
		t.Fatalf("a clean event = %s", resultText(res))
	}
	split := "id: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":ID,\r\ndata:   \"result\":{\"content\":[{\"type\":\"text\",\"text\":\"split\"}]}}  \n\n"
	if res := call(split); res.IsError || resultText(res) != "split" {
		t.Fatalf("an event split over data lines = %s", resultText(res))
	}
	for _, dup := range []string{
		`{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"a"}],"content":[{"type":"text","text":"b"}]}}`,
		"data: " + `{"jsonrpc":"2.0","id":ID,"result":{"content":[],"isError":false,"isError":true}}` + "\n\n",
	} {
		res := call(dup)
		if !res.IsError || !strings.Contains(resultText(res), "refused") {
			t.Errorf("an answer with a duplicate key = %s; want it refused", resultText(res))
		}
	}
}

// TestRemoteURLAndTLS: a URL that would send calls in clear beyond
// loopback, or carries credentials, is refused; a certificate the roots
// do not vouch for fails the connection, one they do works.
func TestRemoteURLAndTLS(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"http://example.com/mcp", "https://u:p@example.com/mcp", "ftp://example.com/", "https:///mcp", "https://example.com/mcp#x"} {
		if _, err := proxy.CheckRemoteURL(bad); !errors.Is(err, proxy.ErrInsecureURL) {
			t.Errorf("CheckRemoteURL(%s) = %v; want ErrInsecureURL", bad, err)
		} else if strings.Contains(err.Error(), ":p@") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	for _, good := range []string{"https://example.com/mcp", "http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:9/mcp"} {
		if _, err := proxy.CheckRemoteURL(good); err != nil {
			t.Errorf("CheckRemoteURL(%s) = %v", good, err)
		}
	}
	srv := remoteServer(nil)
	hs := httptest.NewTLSServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	ctx := context.Background()
	init := func(roots bool) (jsonrpcErr string) {
		opts := proxy.RemoteOptions{}
		if roots {
			opts.RootCAs = hs.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
		}
		c, err := proxy.ConnectRemote(ctx, hs.URL+"/mcp", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Write(ctx, initializeRequest(t)); err != nil {
			return err.Error()
		}
		_, err = c.Read(ctx)
		if err != nil {
			return err.Error()
		}
		return ""
	}
	if e := init(false); !strings.Contains(e, "certificate") {
		t.Errorf("an unknown certificate: %q; want a certificate error", e)
	}
	if e := init(true); e != "" {
		t.Errorf("a trusted certificate: %s", e)
	}
}

// reasonCode is "UnknownOutcome" for the proxy's unknown-outcome answer,
// else the code of a refusal's first reason ("" for none).
func reasonCode(res *mcp.CallToolResult) string {
	if res.Meta["mcpx-policy/unknown_outcome"] != nil {
		return "UnknownOutcome"
	}
	b, _ := json.Marshal(res.Meta["mcpx-policy/decision"])
	var d struct {
		Reasons []struct {
			Code string `json:"code"`
		} `json:"reasons"`
	}
	if json.Unmarshal(b, &d) != nil || len(d.Reasons) == 0 {
		return ""
	}
	return d.Reasons[0].Code
}

func remoteUnknown(t *testing.T, eng *mcpxpolicy.Engine) []decision.UnknownWrite {
	t.Helper()
	ws, err := unknownWrites(eng)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func initializeRequest(t *testing.T) *jsonrpc.Request {
	t.Helper()
	id, _ := jsonrpc.MakeID(float64(1))
	return &jsonrpc.Request{ID: id, Method: "initialize",
		Params: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)}
}

// TestRemoteTokenStaysWithItsOrigin: a server that redirects gets no
// answer followed, and the token never reaches the redirect's target.
func TestRemoteTokenStaysWithItsOrigin(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "no", http.StatusNotFound)
	}))
	defer other.Close()
	origin := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", http.StatusTemporaryRedirect))
	defer origin.Close()
	ctx := context.Background()
	c, err := proxy.ConnectRemote(ctx, origin.URL+"/mcp", proxy.RemoteOptions{Token: remoteToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Write(ctx, initializeRequest(t)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Errorf("a redirect = %v; want it refused", err)
	} else if strings.Contains(err.Error(), remoteToken) {
		t.Errorf("the error shows the token: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 0 {
		t.Errorf("the redirect's target was asked %d times (Authorization %q)", len(leaked), leaked)
	}
}

// TestRemoteStandaloneStream: what the server sends outside a call's
// answer (here notifications/tools/list_changed on the standalone GET
// stream) reaches the proxy, which re-checks its catalog and passes the
// notification on.
func TestRemoteStandaloneStream(t *testing.T) {
	t.Parallel()
	srv := remoteServer(nil)
	changed := make(chan struct{}, 8)
	r := newRemoteRig(t, "version: 1\npolicy:\n  write: allow\n", srv, nil, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}})
	ctx := context.Background()
	if _, err := r.client.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// The stream is opened once the client has initialized: wait for it.
	until(t, "the standalone stream is opened", func() bool {
		r.front.mu.Lock()
		defer r.front.mu.Unlock()
		return r.front.gets > 0
	})
	srv.AddTool(textTool("late", true, func(context.Context) string { return "late ok" }))
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatalf("the client never heard of the change:\n%s", r.log)
	}
	r.log.waitFor(t, "the server's tool list changed")
	res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "late"})
	if err != nil || res.IsError || resultText(res) != "late ok" {
		t.Fatalf("late = %v, %v", res, err)
	}
}
