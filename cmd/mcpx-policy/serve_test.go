package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a writer the test reads while serve writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestServeAndProxyUsage(t *testing.T) {
	cases := [][]string{
		{"serve"},
		{"serve", "--config", "x.yaml", "extra"},
		{"proxy"},
		{"proxy", "--config", "x.yaml", "--", "cat"},
		{"proxy", "--config", "x.yaml", "--server", "fs"},
		{"proxy", "--config", "x.yaml", "--server", "fs", "--log-level", "loud", "--", "cat"},
		{"serve", "--config", "x.yaml", "--decide-timeout", "0"},
		{"proxy", "--config", "x.yaml", "--server", "fs", "--decide-timeout", "-1s", "--", "cat"},
		{"eval", "--config", "x.yaml", "--decide-timeout", "0", "call.json"},
	}
	for _, args := range cases {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 1 || !strings.HasPrefix(errb.String(), "mcpx-policy: error: ") || !strings.Contains(errb.String(), "usage: mcpx-policy "+args[0]) {
			t.Errorf("%v: exit %d, stderr %q; want 1 with an error and the usage", args, code, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"serve", "--config", "missing.yaml"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "missing.yaml") {
		t.Errorf("serve with a missing config: exit %d, %q", code, errb.String())
	}
}

// TestServeLifecycle runs serve in-process: it answers, reloads on
// SIGHUP, and on SIGTERM drains and exits 0.
func TestServeLifecycle(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\npolicy: {write: allow}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := []string{"serve", "--config", conf, "--state-dir", filepath.Join(dir, "state"), "--addr", addr, "--token-file", tokenFile}
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), "shorter than 16") {
		t.Fatalf("a short token: exit %d, %q", code, errb.String())
	}
	if err := os.WriteFile(tokenFile, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	exit := make(chan int, 1)
	go func() { exit <- run(args, stdout, stderr) }()
	base := "http://" + addr
	var rev string
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			var h struct{ Revision string }
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			rev = h.Revision
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", stderr)
		}
	}
	call := `{"server":"fs","tool":{"name":"write_file","annotations":{"readOnlyHint":false}},"args":{"path":"/x","content":"s3cret-value"}}`
	resp, err := http.Post(base+"/v1/decide", "application/json", strings.NewReader(call))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"outcome":"allow"`) {
		t.Fatalf("decide = %d %s", resp.StatusCode, body)
	}
	// SIGHUP (or the file watch, whichever comes first) reloads the changed config.
	if err := os.WriteFile(conf, []byte("version: 1\npolicy: {write: deny}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "config reloaded"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged:\n%s", stderr)
		}
	}
	resp, err = http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var h struct{ Revision string }
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if h.Revision == rev {
		t.Error("revision unchanged after a reload of a changed config")
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("serve exit %d after SIGTERM:\n%s", code, stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	if !strings.Contains(stderr.String(), "draining") {
		t.Errorf("no graceful shutdown logged:\n%s", stderr)
	}
	if log := stdout.String(); !strings.Contains(log, `"path":"mcpx/decision"`) || strings.Contains(log, "s3cret") {
		t.Errorf("decision log = %s", log)
	}
}
