package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// BenchmarkProxyAllowedCall measures what the proxy adds to one allowed
// tools/call, in process: a client and a server that answer at once over
// pipes, the proxy between them (stdio framing, strict decoding, the
// decision, forwarding). Each call differs (its head argument), so no
// decision comes from the engine's cache of identical calls; "-2026"
// sends the MCP 2026-07-28 request metadata, with ToolsMaxAge set.
// Besides the time, it reports the process's CPU time per call
// (cpu-µs/op: the proxy, the client and the server), which the load of a
// shared machine moves less. Profile it with -cpuprofile/-memprofile:
//
//	go test -run '^$' -bench ProxyAllowedCall -benchmem ./internal/proxy
func BenchmarkProxyAllowedCall(b *testing.B) {
	for _, c := range []struct {
		name, meta string
	}{{"", ""}, {"-2026", "," + meta2026}} {
		b.Run("read"+c.name, func(b *testing.B) {
			dir := b.TempDir()
			conf := filepath.Join(dir, "mcpx-policy.yaml")
			if err := os.WriteFile(conf, []byte("version: 1\nservers:\n  s: {}\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			eng, err := mcpxpolicy.New(ctx, mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}})
			if err != nil {
				b.Fatal(err)
			}
			clientEnd, proxyFront := net.Pipe()
			proxyBack, serverEnd := net.Pipe()
			go benchServer(serverEnd)
			done := make(chan error, 1)
			go func() {
				opts := proxy.Options{Engine: eng, Server: "s"}
				if c.meta != "" {
					opts.ToolsMaxAge = 1 << 62
				}
				done <- proxy.Run(ctx, opts, proxy.NewStreamConn(proxyFront, proxyFront), proxy.NewStreamConn(proxyBack, proxyBack))
			}()
			in := bufio.NewReader(clientEnd)
			roundTrip := func(line string) {
				if _, err := clientEnd.Write([]byte(line + "\n")); err != nil {
					b.Fatal(err)
				}
				if line[len(line)-2] == '}' && !containsID(line) {
					return
				}
				if _, err := in.ReadSlice('\n'); err != nil {
					b.Fatal(err)
				}
			}
			roundTrip(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`)
			clientEnd.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
			lines := make([]string, b.N+20)
			for i := range lines {
				lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/ws/f.txt","head":%d}%s}}`, i+1, i+1, c.meta)
			}
			for _, l := range lines[b.N:] { // warm up: the first call lists the tools
				roundTrip(l)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for _, l := range lines[:b.N] {
				roundTrip(l)
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
			clientEnd.Close()
			<-done
			serverEnd.Close()
		})
	}
}

// cpuTime is the CPU time the process used so far (user and system): on
// a shared machine it moves less than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func containsID(line string) bool {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	return json.Unmarshal([]byte(line), &m) == nil && m.ID != nil
}

// benchServer answers initialize, tools/list (one read-only tool) and
// tools/call (a text result) at once.
func benchServer(conn net.Conn) {
	br := bufio.NewReaderSize(conn, 1<<16)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		var result string
		switch m.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"b","version":"1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"read_text_file","description":"Read a file","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number"}},"required":["path"]},"annotations":{"readOnlyHint":true}}]}`
		case "tools/call":
			result = `{"content":[{"type":"text","text":"hello\n"}]}`
		default:
			result = `{}`
		}
		fmt.Fprintf(conn, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
	}
}
