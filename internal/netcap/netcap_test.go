package netcap_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/netcap"
)

// serve runs an HTTP server on a capped loopback listener; its handler
// answers "/" at once and holds "/hold" until release is closed.
func serve(t *testing.T, n int, release chan struct{}) (*netcap.Limiter, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := netcap.New(ln, n)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/hold", func(w http.ResponseWriter, r *http.Request) { <-release })
	srv := &http.Server{Handler: mux, ConnState: l.ConnState}
	go srv.Serve(l.Listener())
	t.Cleanup(func() { srv.Close() })
	return l, ln.Addr().String()
}

// get sends one GET on c and returns the status line of its answer.
func get(t *testing.T, c net.Conn, path string) string {
	t.Helper()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	line, _ := br.ReadString('\n')
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(line), br)), nil)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return strings.TrimSpace(line)
}

// TestBusyConnectionsRefused: with every connection busy, a new one is
// answered 503 at once; 1000 more cost no goroutine each.
func TestBusyConnectionsRefused(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	l, addr := serve(t, 8, release)
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	}
	before := runtime.NumGoroutine()
	for i := range 1000 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if line := get(t, c, "/"); !strings.Contains(line, " 503 ") {
				t.Fatalf("past the cap: %q; want 503", line)
			}
		}
		c.Close()
	}
	until(t, "all 1000 refused", func() bool { _, _, refused := l.Stats(); return refused == 1000 })
	if g := runtime.NumGoroutine() - before; g > 50 {
		t.Fatalf("1000 refused connections left %d more goroutines", g)
	}
	if open, _, _ := l.Stats(); open != 8 {
		t.Fatalf("%d connections open; want the 8 busy ones", open)
	}
}

// TestIdleConnectionsMakeRoom: at the cap, the connection idle the longest
// is closed to let a new one in; a busy one never is.
func TestIdleConnectionsMakeRoom(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	l, addr := serve(t, 2, release)
	busy, _ := net.Dial("tcp", addr)
	defer busy.Close()
	fmt.Fprintf(busy, "GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
	idle, _ := net.Dial("tcp", addr)
	defer idle.Close()
	if line := get(t, idle, "/"); !strings.Contains(line, " 200 ") {
		t.Fatalf("a first request: %q", line)
	}
	until(t, "the connection is idle", func() bool { _, idle, _ := l.Stats(); return idle == 1 })
	fresh, _ := net.Dial("tcp", addr)
	defer fresh.Close()
	if line := get(t, fresh, "/"); !strings.Contains(line, " 200 ") {
		t.Fatalf("a new connection at the cap, with one idle: %q; want it served", line)
	}
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); err == nil {
		t.Fatal("the idle connection was not closed to make room")
	}
}

func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
	}
}
