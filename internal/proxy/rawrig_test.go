package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// The raw rig joins a scripted client and a recording server to the proxy
// (proxy.Run over proxy.NewStreamConn) with raw JSON-RPC lines, so tests
// can send what no SDK would and see exactly what the server received.

// recServer is a scripted MCP server: it records every line it receives
// and answers initialize, tools/list (its tools), tools/call (a text
// result naming the call as it read it) and any other request ({}).
type recServer struct {
	conn net.Conn
	w    sync.Mutex

	mu       sync.Mutex
	tools    []string // raw Tool objects of its tools/list
	listErr  bool     // answer tools/list with an error
	onList   func(id json.RawMessage) []string
	received [][]byte
	changed  chan struct{}
}

func (s *recServer) serve() {
	br := bufio.NewReaderSize(s.conn, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.mu.Lock()
			s.received = append(s.received, bytes.TrimSpace(line))
			s.mu.Unlock()
			select {
			case s.changed <- struct{}{}:
			default:
			}
			s.handle(line)
		}
		if err != nil {
			return
		}
	}
}

// handle reads a frame as a Node or Python server does: exact keys, the
// last of duplicates.
func (s *recServer) handle(line []byte) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return
	}
	id, method := m["id"], ""
	json.Unmarshal(m["method"], &method)
	if id == nil || method == "" {
		return // a notification or an answer
	}
	s.mu.Lock()
	tools, listErr, onList := s.tools, s.listErr, s.onList
	s.mu.Unlock()
	var result string
	switch method {
	case "initialize":
		result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"rec","version":"1"}}`
	case "tools/list":
		if onList != nil {
			for _, f := range onList(id) {
				s.send(f)
			}
		}
		if listErr {
			s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"no list today"}}`, id))
			return
		}
		result = `{"tools":[` + strings.Join(tools, ",") + `]}`
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(m["params"], &p)
		result = fmt.Sprintf(`{"content":[{"type":"text","text":"ran %s"}]}`, p.Name)
	default:
		result = `{}`
	}
	s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
}

// send writes one line to the proxy.
func (s *recServer) send(line string) {
	s.w.Lock()
	defer s.w.Unlock()
	s.conn.Write([]byte(line + "\n"))
}

// frames returns what the server received, decoded as it read them.
func (s *recServer) frames() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range s.received {
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.UseNumber()
		if dec.Decode(&m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// calls returns the params of every tools/call the server received.
func (s *recServer) calls() []map[string]any {
	var out []map[string]any
	for _, m := range s.frames() {
		if m["method"] == "tools/call" {
			p, _ := m["params"].(map[string]any)
			out = append(out, p)
		}
	}
	return out
}

// waitFor waits until the server received a frame for which ok holds.
func (s *recServer) waitFor(t testing.TB, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, m := range s.frames() {
			if ok(m) {
				return m
			}
		}
		select {
		case <-s.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("the server never received %s; it got %v", what, s.frames())
		}
	}
}

// rawClient is the client's end: lines in, frames out.
type rawClient struct {
	conn net.Conn

	mu       sync.Mutex
	frames   []map[string]any // everything the proxy sent the client
	taken    map[int]bool     // frames next returned already
	changed  chan struct{}
	finished bool
}

func (c *rawClient) send(line string) {
	c.conn.Write([]byte(line + "\n"))
}

func (c *rawClient) add(m map[string]any) {
	c.mu.Lock()
	c.frames = append(c.frames, m)
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// next returns the first frame the proxy sent the client for which ok
// holds and that next did not return before, waiting for it.
func (c *rawClient) next(t testing.TB, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		for i, m := range c.frames {
			if !c.taken[i] && ok(m) {
				c.taken[i] = true
				c.mu.Unlock()
				return m
			}
		}
		finished := c.finished
		c.mu.Unlock()
		if finished {
			t.Fatalf("the proxy closed the client's connection before %s", what)
		}
		select {
		case <-c.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("the client never got %s", what)
		}
	}
}

// answer returns the proxy's answer to the client request with this id.
func (c *rawClient) answer(t testing.TB, id string) map[string]any {
	t.Helper()
	return c.next(t, "the answer to id "+id, func(m map[string]any) bool {
		_, isReq := m["method"]
		return !isReq && fmt.Sprint(m["id"]) == id
	})
}

type rawRig struct {
	eng    *mcpxpolicy.Engine
	client *rawClient
	server *recServer
	log    *logBuffer
	done   chan error
}

// newRawRig starts a session of the proxy between a raw client and a
// recording server listing tools, with config as the policy of server "s".
// The client has initialized (declaring elicitation when elicit is set).
func newRawRig(t testing.TB, config string, elicit bool, tools ...string) *rawRig {
	t.Helper()
	return newRawRigWith(t, config, elicit, nil, tools...)
}

// newRawRigWith is newRawRig with the proxy's options changed by with
// (when not nil).
func newRawRigWith(t testing.TB, config string, elicit bool, with func(proxy.Options) proxy.Options, tools ...string) *rawRig {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	r := startRawWith(t, eng, tools, with)
	caps := `{}`
	if elicit {
		caps = `{"elicitation":{}}`
	}
	r.client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	r.client.answer(t, "0")
	r.client.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// startRaw runs one proxy session with eng between fresh pipes.
func startRaw(t testing.TB, eng *mcpxpolicy.Engine, tools []string) *rawRig {
	return startRawWith(t, eng, tools, nil)
}

// startRawWith is startRaw with the proxy's options changed by with (when
// not nil).
func startRawWith(t testing.TB, eng *mcpxpolicy.Engine, tools []string, with func(proxy.Options) proxy.Options) *rawRig {
	ctx, cancel := context.WithCancel(context.Background())
	clientEnd, proxyFront := net.Pipe()
	proxyBack, serverEnd := net.Pipe()
	r := &rawRig{
		eng:    eng,
		client: &rawClient{conn: clientEnd, taken: map[int]bool{}, changed: make(chan struct{}, 1)},
		server: &recServer{conn: serverEnd, tools: tools, changed: make(chan struct{}, 1)},
		log:    &logBuffer{},
		done:   make(chan error, 1),
	}
	go r.server.serve()
	go func() {
		defer func() {
			r.client.mu.Lock()
			r.client.finished = true
			r.client.mu.Unlock()
		}()
		br := bufio.NewReaderSize(clientEnd, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var m map[string]any
				dec := json.NewDecoder(bytes.NewReader(line))
				dec.UseNumber()
				if dec.Decode(&m) == nil {
					r.client.add(m)
				}
			}
			if err != nil {
				return
			}
		}
	}()
	opts := proxy.Options{Engine: eng, Server: "s",
		Logger: slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if with != nil {
		opts = with(opts)
	}
	go func() {
		r.done <- proxy.Run(ctx, opts, proxy.NewStreamConn(proxyFront, proxyFront), proxy.NewStreamConn(proxyBack, proxyBack))
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s", r.log)
		}
		clientEnd.Close()
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Error("the proxy did not end after the client left")
		}
		cancel()
		serverEnd.Close()
	})
	return r
}

// errorCode is the JSON-RPC error code of an answer, "" for a result.
func errorCode(m map[string]any) string {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return ""
	}
	return fmt.Sprint(e["code"])
}

func errorMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// resultCode is the first reason code of a refusal the proxy rendered as
// a CallToolResult, "" for anything else.
func resultCode(m map[string]any) string {
	r, _ := m["result"].(map[string]any)
	meta, _ := r["_meta"].(map[string]any)
	sc, _ := meta["mcpx-policy/decision"].(map[string]any)
	reasons, _ := sc["reasons"].([]any)
	if len(reasons) == 0 {
		return ""
	}
	first, _ := reasons[0].(map[string]any)
	s, _ := first["code"].(string)
	return s
}

// resultText is the text of a CallToolResult answer.
func resultTextOf(m map[string]any) string {
	r, _ := m["result"].(map[string]any)
	content, _ := r["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(map[string]any); ok {
			s, _ := tc["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}
