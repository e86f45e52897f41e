package proxy_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The legacy HTTP+SSE transport (MCP 2024-11-05) on the remote path: the
// same judging, the same strict frames and the same accounting of lost
// answers as over Streamable HTTP, with the Go SDK's own SSE handler as
// the server.

// sseRig is a remote rig whose server speaks HTTP+SSE, behind the front
// that requires remoteToken; wrap, when set, wraps what the server writes
// to its event stream.
func sseRig(t *testing.T, config string, block chan struct{}, clientOpts *mcp.ClientOptions, wrap func(http.ResponseWriter) http.ResponseWriter) *remoteRig {
	t.Helper()
	srv := remoteServer(block)
	var handler http.Handler = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if wrap != nil {
		sse := handler
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				w = wrap(w)
			}
			sse.ServeHTTP(w, r)
		})
	}
	return newRemoteRigWith(t, config, nil, handler, clientOpts, proxy.RemoteOptions{Token: remoteToken, SSE: true})
}

// TestRemoteSSE: a server on the legacy SSE transport is judged as a stdio
// one is — the list filtered, a read allowed, a hidden tool and a denied
// write never reaching it, a write asked — with the token on every request
// and shown nowhere; a frame on its stream that fails the strict check is
// refused; a write whose POST fails, or whose server dies before its
// answer, is an unknown outcome.
func TestRemoteSSE(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("judged", func(t *testing.T) {
		t.Parallel()
		who := &person{approve: true}
		r := sseRig(t, remoteConfig, nil, &mcp.ClientOptions{ElicitationHandler: who.handler}, nil)
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
		if res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "read"}); err != nil || res.IsError || resultText(res) != "read ok" {
			t.Fatalf("read = %v, %v", res, err)
		}
		if res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "secret_dump"}); err == nil && !res.IsError {
			t.Fatalf("hidden tool = %s; want a refusal", resultText(res))
		}
		res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "rm -rf /"}})
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "no-rm") {
			t.Fatalf("denied write = %v, %v; want the no-rm refusal", res, err)
		}
		denied := resultText(res)
		if res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "hello"}}); err != nil || res.IsError || resultText(res) != "wrote" {
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
		r.noSecrets(t, denied)
	})
	t.Run("strict frames", func(t *testing.T) {
		t.Parallel()
		// The answer to read comes with a duplicate key.
		r := sseRig(t, "version: 1\npolicy:\n  write: allow\n", nil, nil, func(w http.ResponseWriter) http.ResponseWriter {
			return &rewriter{ResponseWriter: w, from: `"content":[{"type":"text","text":"read ok"`, to: `"content":[],"content":[{"type":"text","text":"read ok"`}
		})
		res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "read"})
		if err == nil && !res.IsError || err == nil && !strings.Contains(resultText(res), "refused") {
			t.Fatalf("an answer with a duplicate key = %v, %v; want it refused", resultText(res), err)
		}
		if res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "x"}}); err != nil || res.IsError {
			t.Fatalf("the next call = %v, %v; want it served", res, err)
		}
	})
	t.Run("a failed POST", func(t *testing.T) {
		t.Parallel()
		r := sseRig(t, "version: 1\npolicy:\n  write: allow\n", nil, nil, nil)
		if _, err := r.client.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		r.front.mu.Lock()
		r.front.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
			if bytes.Contains(body, []byte(`"tools/call"`)) {
				http.Error(w, "boom", http.StatusInternalServerError)
				return true
			}
			return false
		}
		r.front.mu.Unlock()
		res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "x"}})
		if err != nil || reasonCode(res) != "UnknownOutcome" {
			t.Fatalf("a write whose POST failed = %v, %v; want UnknownOutcome", resultText(res), err)
		}
		if ws := remoteUnknown(t, r.eng); len(ws) != 1 || ws[0].Tool != "write" || !strings.Contains(ws[0].Cause, "Internal Server Error") {
			t.Fatalf("unknown writes = %+v; want the write, its cause the 500", ws)
		}
	})
	t.Run("the server dies mid-write", func(t *testing.T) {
		t.Parallel()
		block := make(chan struct{})
		defer close(block)
		r := sseRig(t, "version: 1\npolicy:\n  write: allow\n", block, nil, nil)
		got := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := r.client.CallTool(ctx, &mcp.CallToolParams{Name: "write", Arguments: map[string]any{"what": "block"}})
			if err != nil {
				res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
			}
			got <- res
		}()
		until(t, "the write reaches the server", func() bool { return len(r.front.reached()) == 1 })
		// (Not Close: the SDK's handler of the stream waits for the
		// blocked call, which ends with the test.)
		r.http.CloseClientConnections()
		if res := <-got; reasonCode(res) != "UnknownOutcome" {
			t.Fatalf("write cut off = %q (%s); want UnknownOutcome", reasonCode(res), resultText(res))
		}
		if ws := remoteUnknown(t, r.eng); len(ws) != 1 {
			t.Fatalf("unknown writes = %+v; want one", ws)
		}
	})
}

// TestRemoteSSEEndpointStaysWithItsOrigin: an SSE server whose endpoint
// event names another origin (or a user) is refused before anything is
// POSTed: the calls and the token go to the URL's origin only.
func TestRemoteSSEEndpointStaysWithItsOrigin(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var posted []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		posted = append(posted, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer other.Close()
	for _, endpoint := range []string{other.URL + "/messages", "//" + strings.TrimPrefix(other.URL, "http://") + "/messages", "http://user@" + strings.TrimPrefix(other.URL, "http://")} {
		origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: endpoint\ndata: "+endpoint+"\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}))
		c, err := proxy.ConnectRemote(context.Background(), origin.URL+"/sse", proxy.RemoteOptions{Token: remoteToken, SSE: true})
		if err == nil {
			c.Write(context.Background(), initializeRequest(t))
			c.Close()
			t.Errorf("endpoint %s: connected; want it refused", endpoint)
		} else if !strings.Contains(err.Error(), "not on http://127.0.0.1") || strings.Contains(err.Error(), remoteToken) {
			t.Errorf("endpoint %s: %v; want it refused as another origin, the token not shown", endpoint, err)
		}
		origin.CloseClientConnections()
		origin.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posted) != 0 {
		t.Errorf("the other origin got %d POSTs (Authorization %q)", len(posted), posted)
	}
}

// rewriter replaces from with to in what is written through it.
type rewriter struct {
	http.ResponseWriter
	from, to string
}

func (w *rewriter) Write(b []byte) (int, error) {
	if _, err := w.ResponseWriter.Write(bytes.ReplaceAll(b, []byte(w.from), []byte(w.to))); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (w *rewriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }
