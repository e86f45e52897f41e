package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/hostile"
	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// The footprint tests drive a peer past each bound of a session and
// measure what the process holds meanwhile: goroutines, heap, child
// processes. They do not run in parallel with other tests, so the
// process's figures are theirs.

// sampler records the most goroutines and live heap bytes the process
// had while it ran.
type sampler struct {
	stop chan struct{}
	done chan struct{}

	mu                  sync.Mutex
	goroutines, heapMax uint64
	base, baseHeap      uint64
}

// heapBytes is the heap the last GC found live, plus goroutine stacks:
// what the process holds, garbage aside.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

func startSampler() *sampler {
	runtime.GC()
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{}),
		base: uint64(runtime.NumGoroutine()), baseHeap: heapBytes()}
	go func() {
		defer close(s.done)
		for {
			g, h := uint64(runtime.NumGoroutine()), heapBytes()
			s.mu.Lock()
			s.goroutines, s.heapMax = max(s.goroutines, g), max(s.heapMax, h)
			s.mu.Unlock()
			select {
			case <-s.stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return s
}

// end stops the sampler and returns the most goroutines and heap bytes
// above what the process had when it started.
func (s *sampler) end() (goroutines int, heap uint64) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return int(s.goroutines) - int(s.base), s.heapMax - min(s.heapMax, s.baseHeap)
}

// TestListChangedStormIsCoalesced: a server sends 20000
// notifications/tools/list_changed as fast as it can. The proxy passes
// each one on and lists the tools again, one listing at a time with at
// most one more waiting: it never holds more than a few goroutines or a
// few MB more for it.
func TestListChangedStormIsCoalesced(t *testing.T) {
	const storm = 20000
	eng, _ := newEngine(t, allowWrites)
	sc := hostile.Script{Tools: taskTools, Storm: &hostile.Storm{Count: storm}, DelayMs: map[string]int{"tools/list": 5}}
	r := newHostileRig(t, eng, proxy.Options{}, sc)
	s := startSampler()
	r.client.Initialize(t, "2025-11-25", `{}`)
	until(t, "the storm passes through", func() bool { return r.client.Count() >= storm+1 })
	// A call after the storm is judged with the list as it is now.
	if a := r.call(t, "c", "report", 1, false); !strings.HasPrefix(hostile.Text(a), "ran report") {
		t.Fatalf("a call after the storm: %v", a)
	}
	g, heap := s.end()
	lists := r.server.Count("tools/list")
	t.Logf("%d notifications: %d listings, at most %d more goroutines and %.1f MB more heap", storm, lists, g, float64(heap)/1e6)
	if g > 16 {
		t.Errorf("the storm made the proxy hold %d more goroutines; want a handful", g)
	}
	if heap > 32<<20 {
		t.Errorf("the storm made the proxy hold %.0f MB more heap", float64(heap)/1e6)
	}
}

// TestCallFloodIsBounded: a client sends 3000 tools/call at once. While
// the server's tool list does not come, at most maxDeciding are decided at
// once (each holds a goroutine) and the others are refused; while the
// server answers no call, at most maxPending wait for it and the others
// are refused. Nothing refused reaches the server.
func TestCallFloodIsBounded(t *testing.T) {
	const flood = 3000
	for _, c := range []struct {
		name     string
		delay    map[string]int
		accepted int
	}{
		{"the tool list never comes", map[string]int{"tools/list": -1}, 64},
		{"no call is answered", map[string]int{"tools/call": -1}, 1024},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng, _ := newEngine(t, allowWrites)
			r := newHostileRig(t, eng, proxy.Options{}, hostile.Script{Tools: taskTools, DelayMs: c.delay})
			r.client.Initialize(t, "2025-11-25", `{}`)
			s := startSampler()
			for i := range flood {
				r.client.Sendf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"report","arguments":{"n":%d}}}`, i, i)
			}
			refused := 0
			for range flood - c.accepted {
				a := r.client.Next(t, "a refusal", func(m map[string]any) bool { _, ok := m["id"]; return ok })
				if !strings.Contains(hostile.ErrorMessage(a), "the most it may have") {
					t.Fatalf("answer %v; want a refusal at the bound", a)
				}
				refused++
			}
			g, heap := s.end()
			t.Logf("%d calls: %d refused, at most %d more goroutines, %.1f MB more heap", flood, refused, g, float64(heap)/1e6)
			if g > c.accepted+16 {
				t.Errorf("the flood made the proxy hold %d more goroutines; want at most %d", g, c.accepted+16)
			}
			if n := r.server.Count("tools/call"); n > c.accepted {
				t.Errorf("the server received %d calls; at most %d may wait", n, c.accepted)
			}
		})
	}
}

// TestEndlessPagesAreBounded: a server whose tool list never ends (each
// page empty, each with a next cursor) gets at most maxListPages of the
// proxy's tools/list; the call that needed the list is refused
// (PolicyError), not decided without it.
func TestEndlessPagesAreBounded(t *testing.T) {
	eng, _ := newEngine(t, allowWrites)
	r := newHostileRig(t, eng, proxy.Options{}, hostile.Script{Tools: taskTools, EndlessPages: true})
	r.client.Initialize(t, "2025-11-25", `{}`)
	a := r.call(t, "c", "report", 1, false)
	if resultCode(a) != "PolicyError" || !strings.Contains(hostile.Text(a), "pages") {
		t.Fatalf("a call on a list without end: %v; want PolicyError naming the pages", a)
	}
	if n := r.server.Count("tools/list"); n > 1000 {
		t.Fatalf("the proxy asked for %d pages", n)
	}
}

// TestHugeFramesAreBounded: a server answering with results just under
// MaxFrame, over and over, costs the proxy a frame or two at a time, not
// their sum; one line past MaxFrame ends the session, as a broken pipe
// would, and the write it answered is an unknown outcome.
func TestHugeFramesAreBounded(t *testing.T) {
	eng, _ := newEngine(t, allowWrites)
	r := newHostileRig(t, eng, proxy.Options{}, hostile.Script{Tools: taskTools, HugeResult: proxy.MaxFrame - 1024})
	r.client.Initialize(t, "2025-11-25", `{}`)
	s := startSampler()
	for i := range 12 {
		id := fmt.Sprint("big", i)
		if a := r.call(t, id, "report", i, false); len(hostile.Text(a)) < proxy.MaxFrame-1024 {
			t.Fatalf("a result under MaxFrame was cut: %d bytes", len(hostile.Text(a)))
		}
	}
	_, heap := s.end()
	t.Logf("12 results of %d MB: at most %.0f MB more heap", proxy.MaxFrame>>20, float64(heap)/1e6)
	// One frame in flight exists several times over for a moment (the
	// server's buffer, the proxy's line and message, the client's): up
	// to 8 frames' worth; 12 frames held would be 12 at the least.
	if heap > 8*proxy.MaxFrame {
		t.Errorf("the proxy held %.0f MB for 12 frames of 16 MB: they add up", float64(heap)/1e6)
	}

	eng2, _ := newEngine(t, allowWrites)
	r2 := newHostileRig(t, eng2, proxy.Options{}, hostile.Script{Tools: taskTools, HugeResult: proxy.MaxFrame + 1})
	r2.client.Initialize(t, "2025-11-25", `{}`)
	r2.client.Send(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"deploy","arguments":{}}}`)
	if a := r2.client.Answer(t, "w"); !strings.Contains(hostile.Text(a), "Outcome unknown") {
		t.Fatalf("a write answered past MaxFrame: %v; want the unknown outcome", a)
	}
	if u := unknownTools(t, eng2); len(u) != 1 {
		t.Fatalf("unknown outcomes %v; want the write's", u)
	}
}

// TestTasksPerSessionBounded: a server that never ends its tasks. A
// session keeps at most maxTasks of them (the oldest read's is
// forgotten: its client is told it does not exist) and at most maxWrites
// writes in flight (the next write is refused before anything is
// recorded or sent).
func TestTasksPerSessionBounded(t *testing.T) {
	eng, state := newEngine(t, allowWrites)
	r := newHostileRig(t, eng, proxy.Options{}, taskScript("2025-11-25", hostile.Step{Status: "completed", Gate: true}))
	r.client.Initialize(t, "2025-11-25", `{}`)
	s := startSampler()
	first := ""
	for i := range 1100 {
		task := r.taskCall(t, fmt.Sprint("r", i), "report", i)
		if i == 0 {
			first = task
		}
	}
	if a := r.request(t, "old", "tasks/get", fmt.Sprintf(`{"taskId":%q}`, first)); hostile.ErrorCode(a) != "-32602" {
		t.Fatalf("the oldest of 1100 tasks: %v; want it forgotten", a)
	}
	for i := range 256 {
		r.taskCall(t, fmt.Sprint("w", i), "deploy", i)
	}
	a := r.call(t, "w-past", "deploy", 999, true)
	if !strings.Contains(hostile.ErrorMessage(a), "256 writes in flight") {
		t.Fatalf("the 257th write in flight: %v; want it refused", a)
	}
	if n := len(readLedgerFile(t, state).InFlight); n != 256 {
		t.Fatalf("%d writes in flight in the ledger; want 256", n)
	}
	g, heap := s.end()
	t.Logf("1356 tasks: at most %d more goroutines, %.1f MB more heap", g, float64(heap)/1e6)
	if g > 16 {
		t.Errorf("tasks held %d more goroutines", g)
	}
}

// TestHTTPSessionsBounded: a caller POSTs 40 initializes at once to
// --listen and never finishes any. Each session is a server process: at
// most DefaultMaxUninitialized are started, the rest are answered 503,
// and those started end after the init timeout — the processes with
// them. Initialized sessions are capped at MaxSessions.
func TestHTTPSessionsBounded(t *testing.T) {
	eng, _ := newEngine(t, allowWrites)
	script, _ := json.Marshal(hostile.Script{Tools: taskTools})
	start := func(ctx context.Context) (proxy.Conn, error) {
		cmd := crashtest.Command(roleEnv+"=hostile-server", "HOSTILE_SCRIPT="+string(script))
		return proxy.StartCommand(cmd, time.Second)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// listen serves a handler of its own for each phase.
	var url string
	listen := func() {
		h := proxy.NewHTTPHandler(ctx, proxy.Options{Engine: eng, Server: "s"}, start, proxy.MaxSessions(6), proxy.InitTimeout(2*time.Second))
		srv := httptest.NewServer(h)
		t.Cleanup(func() {
			srv.Close()
			h.Close()
		})
		url = srv.URL
	}
	listen()
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	post := func(session, body string) (int, string) {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	var wg sync.WaitGroup
	codes := make(chan int, 40)
	peak := 0
	stopPeak := make(chan struct{})
	peakDone := make(chan struct{})
	go func() {
		defer close(peakDone)
		for {
			peak = max(peak, len(childProcesses()))
			select {
			case <-stopPeak:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := post("", initialize)
			codes <- code
		}()
	}
	wg.Wait()
	close(codes)
	started, refused := 0, 0
	for c := range codes {
		switch c {
		case http.StatusOK:
			started++
		case http.StatusServiceUnavailable:
			refused++
		default:
			t.Fatalf("an initialize was answered %d", c)
		}
	}
	until(t, "the uninitialized sessions end, their processes with them", func() bool { return len(childProcesses()) == 0 })
	close(stopPeak)
	<-peakDone
	t.Logf("40 initializes never finished: %d started, %d refused, at most %d server processes", started, refused, peak)
	if started > proxy.DefaultMaxUninitialized || peak > proxy.DefaultMaxUninitialized {
		t.Fatalf("%d sessions started, %d processes at once; at most %d may wait to initialize", started, peak, proxy.DefaultMaxUninitialized)
	}
	// Initialized sessions count against MaxSessions.
	listen()
	var ids []string
	for range 8 {
		code, id := post("", initialize)
		if code != http.StatusOK {
			if code != http.StatusServiceUnavailable {
				t.Fatalf("initialize: %d", code)
			}
			continue
		}
		post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		ids = append(ids, id)
	}
	if len(ids) != 6 || len(childProcesses()) != 6 {
		t.Fatalf("%d initialized sessions and %d processes; want MaxSessions, 6", len(ids), len(childProcesses()))
	}
}

// childProcesses lists this process's children that have not exited.
func childProcesses() []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := strconv.Itoa(os.Getpid())
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == me && f[0] != "Z" {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, pid)
		}
	}
	return out
}

// TestHTTPBodyBudget: callers that start POST bodies and never finish
// them hold at most the body budget: past it a POST is answered 503 before
// anything is decided.
func TestHTTPBodyBudget(t *testing.T) {
	eng, _ := newEngine(t, allowWrites)
	start := func(ctx context.Context) (proxy.Conn, error) {
		proxyEnd, serverEnd := net.Pipe()
		go hostile.NewServer(hostile.Script{Tools: taskTools}, serverEnd).Serve(serverEnd)
		return proxy.NewStreamConn(proxyEnd, proxyEnd), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := proxy.NewHTTPHandler(ctx, proxy.Options{Engine: eng, Server: "s"}, start, proxy.BodyBudget(1<<20))
	srv := httptest.NewServer(h)
	defer func() {
		srv.Close()
		h.Close()
	}()
	// Eight callers each declare 256 KiB and send all but the last byte.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	addr := strings.TrimPrefix(srv.URL, "http://")
	busy := 0
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		const n = 256 << 10
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, n)
		c.Write([]byte(strings.Repeat(" ", n-1)))
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		buf := make([]byte, 64)
		if k, _ := c.Read(buf); strings.Contains(string(buf[:k]), " 503 ") {
			busy++
		}
	}
	t.Logf("8 unfinished bodies of 256 KiB against a 1 MiB budget: %d refused", busy)
	if busy != 4 {
		t.Fatalf("%d of 8 unfinished 256 KiB bodies refused; want 4 (1 MiB budget)", busy)
	}
}
