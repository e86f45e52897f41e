package proxy_test

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHTTPNotificationWithoutStream: over --listen, a server's
// notifications/tools/list_changed for a client that never opened its
// standalone stream cannot reach it; the proxy says so once, at debug
// level, instead of a warning per notification — and once the client
// opens the stream, the next one reaches it.
func TestHTTPNotificationWithoutStream(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	conf := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\npolicy: {write: allow}\nservers: {s: {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	servers := make(chan *mcp.Server, 1)
	start := func(ctx context.Context) (proxy.Conn, error) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
		srv.AddTool(textTool("echo", true, func(context.Context) string { return "echo" }))
		proxyEnd, serverEnd := net.Pipe()
		if _, err := srv.Connect(ctx, &mcp.IOTransport{Reader: serverEnd, Writer: serverEnd}, nil); err != nil {
			return nil, err
		}
		servers <- srv
		return proxy.NewStreamConn(proxyEnd, proxyEnd), nil
	}
	log := &logBuffer{}
	h := proxy.NewHTTPHandler(ctx, proxy.Options{Engine: eng, Server: "s",
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))}, start)
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); h.Close() })
	r := &httpRig{url: hs.URL, h: h, eng: eng}
	id := r.initialize(t)
	srv := <-servers

	// no standalone stream: two changes, neither deliverable
	srv.AddTool(textTool("added1", true, func(context.Context) string { return "" }))
	log.waitFor(t, "the client has no standalone stream open")
	srv.AddTool(textTool("added2", true, func(context.Context) string { return "" }))

	// the client opens its standalone stream: the next change reaches it
	req, _ := http.NewRequestWithContext(ctx, "GET", r.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	defer resp.Body.Close()
	srv.AddTool(textTool("added3", true, func(context.Context) string { return "" }))
	lines := bufio.NewScanner(resp.Body)
	got := false
	for lines.Scan() {
		if strings.Contains(lines.Text(), "notifications/tools/list_changed") {
			got = true
			break
		}
	}
	if !got {
		t.Fatalf("the standalone stream ended without the list_changed notification: %v", lines.Err())
	}
	out := log.String()
	if strings.Contains(out, "level=WARN") {
		t.Fatalf("a notification the client had no stream for was logged as a warning:\n%s", out)
	}
	if n := strings.Count(out, "the client has no standalone stream open"); n != 1 {
		t.Fatalf("said %d times that the client has no stream; want once:\n%s", n, out)
	}
}
