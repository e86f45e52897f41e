package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpRig serves the proxy over Streamable HTTP; every session's server is
// a Go SDK server in memory, whose end is reported on ended.
type httpRig struct {
	url   string
	h     *proxy.HTTPHandler
	eng   *mcpxpolicy.Engine
	ended chan struct{}
	// gate holds every call of the read-only tool "gate" until a value is
	// sent on it; gateRuns counts the calls the server ran.
	gate     chan struct{}
	gateRuns atomic.Int32
	// starts counts the servers started; "whoami" answers its server's
	// number.
	starts atomic.Int32
	// hanging receives a value when the server starts running a call of
	// the write "hang" (which ends only with its call).
	hanging chan struct{}
}

func newHTTPRig(t *testing.T, idle time.Duration) *httpRig {
	t.Helper()
	return newHTTPRigConfig(t, idle, "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n")
}

// newHTTPRigConfig is newHTTPRig with the config given.
func newHTTPRigConfig(t *testing.T, idle time.Duration, config string, opts ...proxy.HTTPOption) *httpRig {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	rig := &httpRig{eng: eng, ended: make(chan struct{}, 8), gate: make(chan struct{}), hanging: make(chan struct{}, 8)}
	start := func(ctx context.Context) (proxy.Conn, error) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		n := rig.starts.Add(1)
		srv.AddTool(textTool("whoami", true, func(context.Context) string { return fmt.Sprintf("server-%d", n) }))
		srv.AddTool(textTool("echo", true, func(context.Context) string { return "echo" }))
		srv.AddTool(textTool("write", false, func(context.Context) string { return "written" }))
		srv.AddTool(textTool("gate", true, func(ctx context.Context) string {
			rig.gateRuns.Add(1)
			select {
			case <-rig.gate:
				return "opened"
			case <-ctx.Done():
				return "too late"
			}
		}))
		srv.AddTool(textTool("hang", false, func(ctx context.Context) string {
			select {
			case rig.hanging <- struct{}{}:
			default:
			}
			<-ctx.Done()
			return "too late"
		}))
		proxyEnd, serverEnd := net.Pipe()
		ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil)
		if err != nil {
			return nil, err
		}
		go func() {
			ss.Wait()
			rig.ended <- struct{}{}
		}()
		return proxy.NewStreamConn(proxyEnd, proxyEnd), nil
	}
	h := proxy.NewHTTPHandler(ctx, proxy.Options{Engine: eng, Server: "s"}, start, append([]proxy.HTTPOption{proxy.IdleTimeout(idle)}, opts...)...)
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		h.Close()
	})
	rig.url, rig.h = srv.URL, h
	return rig
}

// post sends one JSON-RPC message and returns the session id.
func (r *httpRig) post(t *testing.T, session, body string) string {
	t.Helper()
	req, _ := http.NewRequest("POST", r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	bufio.NewReader(resp.Body).ReadString(0)
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %s", body, resp.Status)
	}
	return resp.Header.Get("Mcp-Session-Id")
}

func (r *httpRig) initialize(t *testing.T) string {
	t.Helper()
	id := r.post(t, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r.post(t, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return id
}

func (r *httpRig) waitEnded(t *testing.T, within time.Duration, what string) {
	t.Helper()
	select {
	case <-r.ended:
	case <-time.After(within):
		t.Fatalf("%s: the session's server was not stopped within %s", what, within)
	}
}

func (r *httpRig) notEnded(t *testing.T, during time.Duration, what string) {
	t.Helper()
	select {
	case <-r.ended:
		t.Fatalf("%s: the session's server was stopped", what)
	case <-time.After(during):
	}
}

// TestHTTPSessionEndsWhenItsClientGoes: a --listen session whose client
// went away without DELETE has its server stopped — after the idle
// timeout when the client just stopped sending, and once its standalone
// stream closed; never while that stream is open.
func TestHTTPSessionEndsWhenItsClientGoes(t *testing.T) {
	t.Parallel()
	const idle = 400 * time.Millisecond
	r := newHTTPRig(t, idle)

	r.initialize(t)
	r.waitEnded(t, 10*idle, "a client that stopped sending")

	id := r.initialize(t)
	ctx, closeStream := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", r.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	r.notEnded(t, 3*idle, "a client holding its standalone stream open")
	closeStream()
	resp.Body.Close()
	r.waitEnded(t, 10*idle, "a client whose standalone stream closed")
}

// TestHTTPWriteOfAGoneClientIsUnknown: a write in flight when its client
// went away (the POST dropped, nothing more sent) becomes an unknown
// outcome once the idle session is ended and its server stopped.
func TestHTTPWriteOfAGoneClientIsUnknown(t *testing.T) {
	t.Parallel()
	const idle = 400 * time.Millisecond
	r := newHTTPRig(t, idle)
	id := r.initialize(t)
	ctx, drop := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", r.url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"hang","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	go func() {
		// the client goes once its write runs: a fixed sleep could drop
		// it before the call was sent, on a loaded machine
		select {
		case <-r.hanging:
		case <-time.After(20 * time.Second):
		}
		drop()
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	r.waitEnded(t, 20*idle, "a client that dropped its call")
	var ws []decision.UnknownWrite
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && len(ws) == 0; time.Sleep(50 * time.Millisecond) {
		ws, err = entries(r.eng.Writes().List())
	}
	if len(ws) != 1 || ws[0].Tool != "hang" {
		t.Fatalf("unknown writes = %+v, %v; want the write in flight", ws, err)
	}
}
