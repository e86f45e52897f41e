package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// TestInFlightBounded: callers that start request bodies and never finish
// them hold at most MaxInFlight requests; past it a request is answered
// 503 before its body is read, while the probes still answer.
func TestInFlightBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	h := server.New(eng, server.Options{MaxInFlight: 4})
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	status := func(c net.Conn) string {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 64)
		n, _ := c.Read(buf)
		return string(buf[:n])
	}
	for i := range 12 {
		if i == 4 {
			// The fifth is sent only when the four hold their slots: sent
			// earlier, it could take the slot of a fourth still on its way
			// and wait for its body. Nothing else asks for a slot meanwhile
			// (a probing request could take a slot a holder then misses).
			for deadline := time.Now().Add(30 * time.Second); server.InFlight(h) < 4; {
				if time.Now().After(deadline) {
					t.Fatalf("four requests reading their bodies: %d hold a slot after 30 s; want 4", server.InFlight(h))
				}
				time.Sleep(time.Millisecond)
			}
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/decide HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
		if i < 4 {
			continue // these hold their slots, reading a body that does not come
		}
		if got := status(c); !strings.Contains(got, " 503 ") {
			t.Fatalf("request %d past MaxInFlight: %q; want 503", i, got)
		}
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz at the cap: %d", resp.StatusCode)
	}
}

// TestAuthZENBatchBounded: a batch of more than MaxEvaluations
// evaluations is refused whole (400), none of them decided.
func TestAuthZENBatchBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	one := `{"subject":{"type":"user","id":"a"},"action":{"name":"tools/call"},"resource":{"type":"mcp_tool","id":"fs/read_file"}}`
	batch := `{"evaluations":[` + strings.Repeat(one+",", server.MaxEvaluations) + one + `]}`
	// The fixture caps bodies at 4 KiB; this one needs more.
	h := server.New(f.eng, server.Options{MaxBody: 1 << 20})
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+server.EvaluationsPath, "application/json", strings.NewReader(batch))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), fmt.Sprint(server.MaxEvaluations)) {
		t.Fatalf("a batch of %d evaluations: %d %s; want 400 naming the cap", server.MaxEvaluations+1, resp.StatusCode, raw)
	}
}
