// Package hostile is the hostile-peer kit of the tests: a scriptable MCP
// server and a raw MCP client that speak newline-delimited JSON-RPC and do
// what a well-behaved peer would not — run tools as tasks and die halfway,
// storm notifications, page without end, answer slowly or never, forge
// replies, send frames of any size. The proxy's tests run them in process
// (over net.Pipe); the end-to-end tests run the server as a process
// (e2e/hostileserver) behind the built proxy and drive it with the client.
// Only tests import it.
package hostile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Script is what a Server does. Its zero value is a plain server with no
// tools. It is JSON so that e2e/hostileserver can read it from a file.
type Script struct {
	// Tools is the tools/list answer: raw Tool objects.
	Tools []json.RawMessage `json:"tools,omitempty"`
	// Protocol is the protocolVersion initialize answers (default
	// "2025-11-25").
	Protocol string `json:"protocol,omitempty"`
	// Tasks, when set, runs tool calls as tasks (tasks.go).
	Tasks *TaskScript `json:"tasks,omitempty"`
	// Storm, when set, sends frames without pause once the client has
	// initialized.
	Storm *Storm `json:"storm,omitempty"`
	// EndlessPages answers every tools/list with a nextCursor, so the
	// list never ends; PageTools is how many tools of Tools each page
	// carries (0: none).
	EndlessPages bool `json:"endlessPages,omitempty"`
	PageTools    int  `json:"pageTools,omitempty"`
	// DelayMs delays the answer to a method by that many milliseconds;
	// -1 never answers it (the request is held until the server ends).
	DelayMs map[string]int `json:"delayMs,omitempty"`
	// After sends these frames right after answering a method ($ID in a
	// frame is the request's id, as JSON): forged replies, notifications,
	// requests with reserved ids.
	After map[string][]string `json:"after,omitempty"`
	// HugeResult makes every plain tools/call result carry a text of this
	// many bytes.
	HugeResult int `json:"hugeResult,omitempty"`
	// CallResult, when set, is every tools/call's result as it is (a
	// forged task handle, say), unless Tasks runs the call.
	CallResult json.RawMessage `json:"callResult,omitempty"`
}

// Storm is a burst of frames: Count times Frame (default
// notifications/tools/list_changed).
type Storm struct {
	Count int    `json:"count"`
	Frame string `json:"frame,omitempty"`
}

// Server is a scripted MCP server on one stream. It records every line it
// receives and reads frames as the Node and Python SDKs do (exact keys; of
// duplicate keys, the last). Each request is handled on its own goroutine,
// so a blocking one (tasks/result) does not stop the others.
type Server struct {
	script Script
	w      io.Writer
	tasks  *TaskStore
	events io.Writer

	wmu sync.Mutex

	parked []parked // tasks waiting at a Gate step

	mu       sync.Mutex
	received [][]byte
	counts   map[string]int
	changed  chan struct{}
	stopped  chan struct{}
	stormed  bool
}

// ServerOption configures a Server.
type ServerOption func(*Server)

// WithTaskStore makes the server keep its tasks in st, which other servers
// may share (one back end behind several sessions, as a remote server
// has).
func WithTaskStore(st *TaskStore) ServerOption { return func(s *Server) { s.tasks = st } }

// WithEvents makes the server write one line per event to w, each with
// one Write call, before the frame that reveals it goes out: "call ID
// ARGS" when a tools/call arrives, "status TASK STATUS" when a task
// changes status. A test that kills the server reads what it did from
// them.
func WithEvents(w io.Writer) ServerOption { return func(s *Server) { s.events = w } }

// NewServer returns a server that plays sc on w once Serve reads its
// input.
func NewServer(sc Script, w io.Writer, opts ...ServerOption) *Server {
	s := &Server{script: sc, w: w, counts: map[string]int{}, changed: make(chan struct{}, 1), stopped: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	if s.tasks == nil {
		s.tasks = NewTaskStore(false)
	}
	return s
}

// Serve reads r until it ends, answering as the script says. Held
// requests are dropped when it returns.
func (s *Server) Serve(r io.Reader) error {
	defer close(s.stopped)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			s.record(t)
			s.handle(t)
		}
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

func (s *Server) record(line []byte) {
	var m struct {
		Method string `json:"method"`
	}
	json.Unmarshal(line, &m)
	s.mu.Lock()
	s.received = append(s.received, append([]byte(nil), line...))
	if m.Method != "" {
		s.counts[m.Method]++
	}
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Advance lets the task that has waited longest at a Gate step go on; it
// waits until one is waiting (or the server stops).
func (s *Server) Advance() {
	for {
		s.mu.Lock()
		if len(s.parked) > 0 {
			p := s.parked[0]
			s.parked = s.parked[1:]
			s.mu.Unlock()
			go s.run(p.t, p.step, true)
			return
		}
		s.mu.Unlock()
		select {
		case <-s.stopped:
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Count is how many requests and notifications of method the server
// received.
func (s *Server) Count(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[method]
}

// Received returns every frame the server received, decoded as it read
// them.
func (s *Server) Received() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, 0, len(s.received))
	for _, l := range s.received {
		if m, err := Decode(l); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// Send writes one frame to the client side.
func (s *Server) Send(frame string) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := io.WriteString(s.w, frame+"\n")
	return err
}

func (s *Server) sendJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	s.Send(string(b))
}

func (s *Server) event(fields ...string) {
	if s.events == nil {
		return
	}
	s.events.Write([]byte(strings.Join(fields, " ") + "\n"))
}

// handle reads a frame as a Node or Python server does: exact keys, the
// last of duplicates.
func (s *Server) handle(line []byte) {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil {
		return
	}
	var method string
	json.Unmarshal(m["method"], &method)
	id, isCall := m["id"]
	if method == "" {
		return // an answer
	}
	if !isCall {
		if method == "notifications/initialized" {
			s.startStorm()
		}
		return
	}
	if s.script.DelayMs[method] < 0 {
		return // held: never answered, and nothing kept running for it
	}
	go s.request(id, method, m["params"])
}

func (s *Server) startStorm() {
	s.mu.Lock()
	st := s.script.Storm
	go1 := st != nil && !s.stormed
	s.stormed = true
	s.mu.Unlock()
	if !go1 {
		return
	}
	frame := st.Frame
	if frame == "" {
		frame = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	}
	go func() {
		for range st.Count {
			if s.Send(frame) != nil {
				return
			}
		}
	}()
}

// request answers one request, after its delay.
func (s *Server) request(id json.RawMessage, method string, params json.RawMessage) {
	if d := s.script.DelayMs[method]; d > 0 {
		time.Sleep(time.Duration(d) * time.Millisecond)
	}
	answer := func(result any) {
		s.sendJSON(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	switch {
	case method == "initialize":
		proto := s.script.Protocol
		if proto == "" {
			proto = "2025-11-25"
		}
		caps := map[string]any{"tools": map[string]any{"listChanged": true}}
		if s.script.Tasks != nil {
			caps["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
				"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
		}
		answer(map[string]any{"protocolVersion": proto, "capabilities": caps,
			"serverInfo": map[string]any{"name": "hostile", "version": "1"}})
	case method == "tools/list":
		answer(s.toolsPage(params))
	case method == "tools/call":
		s.toolsCall(id, params, answer)
	case strings.HasPrefix(method, "tasks/"):
		s.taskRequest(id, method, params)
	default:
		answer(map[string]any{})
	}
	for _, f := range s.script.After[method] {
		s.Send(strings.ReplaceAll(f, "$ID", string(id)))
	}
}

func (s *Server) toolsPage(params json.RawMessage) map[string]any {
	tools := s.script.Tools
	if tools == nil {
		tools = []json.RawMessage{}
	}
	if !s.script.EndlessPages {
		return map[string]any{"tools": tools}
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	json.Unmarshal(params, &p)
	n := 0
	fmt.Sscan(strings.TrimPrefix(p.Cursor, "page-"), &n)
	page := tools[:min(s.script.PageTools, len(tools))]
	return map[string]any{"tools": page, "nextCursor": fmt.Sprintf("page-%d", n+1)}
}

func (s *Server) toolsCall(id json.RawMessage, params json.RawMessage, answer func(any)) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      json.RawMessage `json:"task"`
	}
	json.Unmarshal(params, &p)
	args := p.Arguments
	if args == nil {
		args = json.RawMessage("{}")
	}
	s.event("call", string(id), compact(args))
	if ts := s.script.Tasks; ts != nil && ts.runs(p.Name, p.Task != nil) {
		s.createTask(id, p.Name, args, answer)
		return
	}
	if s.script.CallResult != nil {
		answer(s.script.CallResult)
		return
	}
	text := fmt.Sprintf("ran %s %s", p.Name, args)
	if s.script.HugeResult > 0 {
		text = strings.Repeat("x", s.script.HugeResult)
	}
	answer(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
