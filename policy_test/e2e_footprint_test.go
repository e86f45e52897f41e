package policy_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kit "github.com/mcpx/mcpx-policy/internal/hostile"
)

// The footprint tests of the built binary: a hostile peer (the kit's
// server, e2e/hostileserver, or raw HTTP callers) drives the proxy or
// serve past a bound, and the test measures what the process holds —
// its peak resident memory, its child processes, its open descriptors.

// hostileScript writes a kit script and returns the command that plays
// it: e2e/hostileserver SCRIPT.
func hostileScript(t *testing.T, sc kit.Script) []string {
	t.Helper()
	raw, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{goServer(t, "../e2e/hostileserver"), path}
}

// procStatus is a field of /proc/PID/status in KiB (VmHWM: the peak
// resident memory).
func procStatus(t *testing.T, pid int, field string) int {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// openFiles counts the descriptors process pid has open.
func openFiles(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds)
}

var taskToolsJSON = []json.RawMessage{
	json.RawMessage(`{"name":"report","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}}`),
}

// TestE2EListChangedStorm: a server sends 100000
// notifications/tools/list_changed as fast as it can behind the built
// proxy. The proxy passes each one on and re-lists the tools one listing
// at a time: its peak resident memory stays under 100 MB (about 60 MB
// measured; each notification started a listing of its own before, and
// the same storm took it past 120 MB).
func TestE2EListChangedStorm(t *testing.T) {
	t.Parallel()
	const storm = 100000
	g := newGate(t, "s", "version: 1\nservers: {s: {}}\n")
	cmd := g.command(t, hostileScript(t, kit.Script{Tools: taskToolsJSON, Storm: &kit.Storm{Count: storm}, DelayMs: map[string]int{"tools/list": 2}})...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	c := kit.NewClient(stdout, stdin)
	c.Initialize(t, "2025-11-25", `{}`)
	for deadline := time.Now().Add(2 * time.Minute); c.Count() < storm+1; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d notifications came through", c.Count()-1, storm)
		}
	}
	c.Send(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"report","arguments":{}}}`)
	if a := c.Answer(t, "after"); !strings.HasPrefix(kit.Text(a), "ran report") {
		t.Fatalf("a call after the storm: %v", a)
	}
	peak := procStatus(t, cmd.Process.Pid, "VmHWM")
	t.Logf("%d list_changed: the proxy's peak resident memory %d MB", storm, peak>>10)
	if peak > 100<<10 {
		t.Fatalf("a storm of list_changed took the proxy to %d MB resident", peak>>10)
	}
}

// TestE2EListenSessionsBounded: 60 unauthenticated initialize POSTs at
// once to the built `proxy --listen`, none of them followed up. Each
// session would be a server process: at most 4 are started (the rest are
// answered 503), and they end, with their processes, when their clients
// do not finish initializing.
func TestE2EListenSessionsBounded(t *testing.T) {
	t.Parallel()
	addr := freeLoopbackAddr(t)
	g := newGate(t, "s", "version: 1\nservers: {s: {}}\n", "--listen", addr)
	cmd := g.command(t, hostileScript(t, kit.Script{Tools: taskToolsJSON})...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(interrupt)
		cmd.Wait()
	})
	url := "http://" + addr + "/mcp"
	waitListening(t, addr)
	var mu sync.Mutex
	peak, done := 0, make(chan struct{})
	go func() {
		for {
			n := len(children(cmd.Process.Pid))
			mu.Lock()
			peak = max(peak, n)
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var started, refused int
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			switch resp.StatusCode {
			case http.StatusOK:
				started++
			case http.StatusServiceUnavailable:
				refused++
			}
		}()
	}
	wg.Wait()
	for deadline := time.Now().Add(time.Minute); len(children(cmd.Process.Pid)) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the sessions' %d server processes were not stopped", len(children(cmd.Process.Pid)))
		}
	}
	close(done)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("60 initializes never followed up: %d started, %d refused 503, at most %d server processes", started, refused, peak)
	if started > 4 || peak > 4 || started+refused != 60 {
		t.Fatalf("%d sessions started, %d refused, %d server processes at once; want at most 4 started and the rest refused", started, refused, peak)
	}
}

// waitListening waits until addr accepts connections.
func waitListening(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s", addr)
		}
	}
}

// TestE2EConnectionsBounded: 600 callers open connections to the built
// `serve` and `proxy --listen` and send nothing. Each process holds at
// most its cap of them open (128) and answers the others 503 at once.
func TestE2EConnectionsBounded(t *testing.T) {
	t.Parallel()
	for _, surface := range []string{"serve", "proxy --listen"} {
		t.Run(surface, func(t *testing.T) {
			addr := freeLoopbackAddr(t)
			dir := t.TempDir()
			conf := filepath.Join(dir, "mcpx-policy.yaml")
			os.WriteFile(conf, []byte("version: 1\nservers: {s: {}}\n"), 0o644)
			var args []string
			if surface == "serve" {
				args = []string{"serve", "--config", conf, "--state-dir", filepath.Join(dir, "state"), "--addr", addr}
			} else {
				args = append([]string{"proxy", "--config", conf, "--server", "s", "--state-dir", filepath.Join(dir, "state"), "--listen", addr, "--"}, hostileScript(t, kit.Script{})...)
			}
			cmd := execBin(args...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				cmd.Process.Signal(interrupt)
				cmd.Wait()
			}()
			waitListening(t, addr)
			before := openFiles(cmd.Process.Pid)
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			busy := 0
			for i := range 600 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
				if i >= 200 && i%50 == 0 {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					buf := make([]byte, 32)
					if n, _ := c.Read(buf); strings.Contains(string(buf[:n]), " 503 ") {
						busy++
					}
				}
			}
			held := openFiles(cmd.Process.Pid) - before
			t.Logf("%s: 600 silent connections: %d more descriptors held, %d of 8 probed past the cap answered 503", surface, held, busy)
			if held > 140 {
				t.Fatalf("%s holds %d more descriptors for 600 silent connections; want at most its cap, 128", surface, held)
			}
			if busy != 8 {
				t.Fatalf("%d of 8 connections past the cap were answered 503", busy)
			}
		})
	}
}

// execBin is the built mcpx-policy with args, its stderr kept for a
// failure.
func execBin(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
	cmd.Env = cleanEnv()
	return cmd
}
