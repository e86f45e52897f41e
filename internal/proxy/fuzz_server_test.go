package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/hostile"
	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// FuzzServerFrames plays a hostile server behind one proxy session: its
// answers and unsolicited frames come from the input. The client sends
// the same things every run — initialize, a write as a task ("w1"), a
// plain write ("w2"), tasks/list ("l") — and leaves. What the server may
// never achieve:
//   - a write left in flight once the session has ended;
//   - a write it received that leaves no unknown outcome although the
//     server never answered it and never said "completed" anywhere;
//   - a tasks/list answer that shows the client a task its calls did not
//     create.
//
// An input is lines, each an action:
//
//	a METHOD FRAME   answer the next METHOD request the server receives
//	                 with FRAME, $ID replaced by its id (waiting briefly
//	                 for one); METHOD * is any request
//	s FRAME          send FRAME now
//
// Fuzz with
//
//	go test ./internal/proxy/ -run '^$' -fuzz FuzzServerFrames -parallel 1
func FuzzServerFrames(f *testing.F) {
	eng, state := newEngine(f, allowWrites)
	tools := `{"tools":[{"name":"deploy","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object"}}]}`
	for _, seed := range []string{
		"a initialize {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{}}\na tools/list {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":" + tools + "}\na tools/call {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"task\":{\"taskId\":\"t1\",\"status\":\"working\"}}}\na tools/call {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"content\":[]}}\na tasks/list {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"tasks\":[{\"taskId\":\"t1\",\"status\":\"working\"},{\"taskId\":\"other\",\"status\":\"completed\"}]}}",
		"a initialize {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{}}\na tools/list {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":" + tools + "}\na tools/call {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"resultType\":\"task\",\"taskId\":\"t1\",\"status\":\"working\"}}\ns {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks\",\"params\":{\"taskId\":\"t1\",\"status\":\"completed\"}}",
		"a initialize {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{}}\na tools/list {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":" + tools + "}\na tools/call {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"task\":{\"taskId\":\"t1\",\"status\":\"working\",\"Status\":\"completed\"}}}\ns {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tasks/status\",\"params\":{\"taskId\":\"t1\",\"status\":\"failed\"}}\na tasks/list {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"tasks\":[{\"taskId\":\"t1\",\"status\":\"working\"}]}}",
		"a initialize {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{}}\na tools/list {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":" + tools + "}\ns {\"jsonrpc\":\"2.0\",\"id\":\"w1\",\"result\":{\"content\":[]}}\na * {\"jsonrpc\":\"2.0\",\"id\":$ID,\"result\":{\"task\":{\"taskId\":\"t1\",\"status\":\"completed\"}}}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clientEnd, front := net.Pipe()
		back, serverEnd := net.Pipe()
		log := &logBuffer{}
		done := make(chan error, 1)
		go func() {
			opts := proxy.Options{Engine: eng, Server: "s", Logger: slog.New(slog.NewTextHandler(log, nil))}
			done <- proxy.Run(ctx, opts, proxy.NewStreamConn(front, front), proxy.NewStreamConn(back, back))
		}()
		srv := newFuzzServer(serverEnd)
		c := hostile.NewClient(clientEnd, clientEnd)
		c.Send(`{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`)
		c.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		c.Send(`{"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"deploy","arguments":{"n":1},"task":{}}}`)
		c.Send(`{"jsonrpc":"2.0","id":"w2","method":"tools/call","params":{"name":"deploy","arguments":{"n":2}}}`)
		c.Send(`{"jsonrpc":"2.0","id":"l","method":"tasks/list","params":{}}`)
		answered := srv.play(data)
		// What the client got for its requests, once they are answered
		// (or after a moment, for those that never are).
		got := map[string]map[string]any{}
		deadline := time.Now().Add(150 * time.Millisecond)
		for _, id := range []string{"w1", "w2", "l"} {
			got[id] = c.Try(hostile.IsAnswer(id), max(0, time.Until(deadline)))
		}
		clientEnd.Close()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("the session did not end after its client left\n%s", log)
		}
		serverEnd.Close()

		if l := readLedgerFile(t, state); len(l.InFlight) != 0 {
			t.Fatalf("writes left in flight after the session: %+v\n%s", l.InFlight, log)
		}
		ws, err := unknownWrites(eng)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			id string
			n  float64
		}{{"w1", 1}, {"w2", 2}} {
			if !srv.received(w.id) || answered[w.id] || bytes.Contains(data, []byte("completed")) {
				continue
			}
			sha, _ := decision.ArgsSHA256(map[string]any{"n": w.n})
			found := false
			for _, e := range ws {
				found = found || e.ArgsSHA256 == sha
			}
			if !found {
				t.Fatalf("write %s was received, never answered nor said completed, and left no unknown outcome\ninput %q\n%s", w.id, data, log)
			}
		}
		created := map[string]bool{}
		for _, id := range []string{"w1", "w2"} {
			if task, _ := hostile.TaskOf(got[id]); task != "" {
				created[task] = true
			}
		}
		if a := got["l"]; a != nil {
			list, _ := hostile.Result(a)["tasks"].([]any)
			for _, e := range list {
				m, _ := e.(map[string]any)
				if id, _ := m["taskId"].(string); !created[id] {
					t.Fatalf("tasks/list showed the client task %q, which its calls did not create: %v\ninput %q", id, a, data)
				}
			}
		}
		eng.Writes().Clear("s", "", "fuzz run ended")
	})
}

// fuzzServer is the server end of FuzzServerFrames: it records the ids of
// the requests it receives and answers them as the input says.
type fuzzServer struct {
	conn net.Conn

	mu      sync.Mutex
	changed chan struct{}
	waiting []request       // requests received, not answered yet
	got     map[string]bool // ids of the tools/call received (unquoted)
}

// request is a request the fuzz server received: its id (as JSON) and
// method.
type request struct{ id, method string }

func newFuzzServer(conn net.Conn) *fuzzServer {
	s := &fuzzServer{conn: conn, changed: make(chan struct{}, 1), got: map[string]bool{}}
	go func() {
		br := bufio.NewReaderSize(conn, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			var m map[string]json.RawMessage
			if json.Unmarshal(line, &m) == nil && m["id"] != nil && m["method"] != nil {
				var method string
				json.Unmarshal(m["method"], &method)
				if method == "tools/call" {
					var id any
					json.Unmarshal(m["id"], &id)
					s.mu.Lock()
					s.got[fmt.Sprint(id)] = true
					s.mu.Unlock()
				}
				s.mu.Lock()
				if len(s.waiting) < 64 {
					s.waiting = append(s.waiting, request{string(m["id"]), method})
				}
				s.mu.Unlock()
				select {
				case s.changed <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return s
}

// next takes the oldest waiting request of method ("*": any), waiting
// briefly for one.
func (s *fuzzServer) next(method string) (string, bool) {
	deadline := time.After(100 * time.Millisecond)
	for {
		s.mu.Lock()
		for i, r := range s.waiting {
			if method == "*" || r.method == method {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				s.mu.Unlock()
				return r.id, true
			}
		}
		s.mu.Unlock()
		select {
		case <-s.changed:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			return "", false
		}
	}
}

func (s *fuzzServer) received(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[id]
}

// play runs the input's actions and returns which client ids an "a"
// action answered with a response.
func (s *fuzzServer) play(data []byte) map[string]bool {
	answered := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if len(line) < 2 {
			continue
		}
		frame := line[2:]
		switch line[0] {
		case 's':
			s.conn.SetWriteDeadline(time.Now().Add(time.Second))
			s.conn.Write([]byte(frame + "\n"))
		case 'a':
			method, frame, _ := strings.Cut(frame, " ")
			id, ok := s.next(method)
			if !ok {
				continue
			}
			frame = strings.ReplaceAll(frame, "$ID", id)
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(frame), &m) == nil && m["method"] == nil {
				var v any
				json.Unmarshal([]byte(id), &v)
				answered[fmt.Sprint(v)] = true
			}
			s.conn.SetWriteDeadline(time.Now().Add(time.Second))
			s.conn.Write([]byte(frame + "\n"))
		}
	}
	return answered
}

// FuzzListenBodies sends POST bodies to `proxy --listen` (HTTPHandler) in
// one session in front of the kit's server, and holds what an HTTP caller
// may never achieve: a panic, or a call reaching the server that the
// policy does not allow (writes are denied, secret* tools hidden).
// An input is lines, each a POST body; a line starting with "n " goes
// without the session id. Fuzz with
//
//	go test ./internal/proxy/ -run '^$' -fuzz FuzzListenBodies -parallel 1
func FuzzListenBodies(f *testing.F) {
	eng, _ := newEngine(f, "version: 1\npolicy: {write: deny}\nservers: {s: {hiddenTools: [\"secret*\"]}}\n")
	tools := []json.RawMessage{
		json.RawMessage(`{"name":"report","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}}`),
		json.RawMessage(`{"name":"deploy","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object"}}`),
		json.RawMessage(`{"name":"secret_read","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}}`),
	}
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret_read","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report","Name":"deploy","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"report","arguments":{},"task":{}}}` + "\n" + `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"x"}}`,
		"n " + `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"deploy"}}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var servers []*hostile.Server
		var mu sync.Mutex
		start := func(ctx context.Context) (proxy.Conn, error) {
			proxyEnd, serverEnd := net.Pipe()
			s := hostile.NewServer(hostile.Script{Tools: tools}, serverEnd)
			mu.Lock()
			servers = append(servers, s)
			mu.Unlock()
			go s.Serve(serverEnd)
			return proxy.NewStreamConn(proxyEnd, proxyEnd), nil
		}
		h := proxy.NewHTTPHandler(ctx, proxy.Options{Engine: eng, Server: "s"}, start, proxy.MaxSessions(2))
		var panicked any
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if p := recover(); p != nil {
					panicked = p
					panic(p)
				}
			}()
			h.ServeHTTP(w, r)
		}))
		defer func() {
			srv.Close()
			h.Close()
		}()
		client := &http.Client{Timeout: 3 * time.Second}
		post := func(session, body string) string {
			req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
			}
			resp, err := client.Do(req)
			if err != nil {
				return ""
			}
			defer resp.Body.Close()
			bufio.NewReader(resp.Body).ReadString(0)
			return resp.Header.Get("Mcp-Session-Id")
		}
		id := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "n "); ok {
				post("", rest)
				continue
			}
			post(id, line)
		}
		if panicked != nil {
			t.Fatalf("the handler panicked: %v", panicked)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, s := range servers {
			for _, m := range s.Received() {
				if m["method"] != "tools/call" {
					continue
				}
				p, _ := m["params"].(map[string]any)
				if p["name"] != "report" {
					t.Fatalf("the server received a call the policy does not allow: %v\ninput %q", m, data)
				}
			}
		}
	})
}
