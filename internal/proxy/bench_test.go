package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
		os         bool
	}{{"", "", false}, {"-2026", "," + meta2026, false}, {"-os", "", true}} {
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
			opts := proxy.Options{Engine: eng, Server: "s"}
			if c.meta != "" {
				opts.ToolsMaxAge = 1 << 62
			}
			var clientEnd io.ReadWriteCloser
			var front, back proxy.Conn
			var serverEnd io.Closer
			if c.os {
				clientEnd, front, back, serverEnd = osPipes(b, &opts)
			} else {
				var proxyFront, proxyBack net.Conn
				clientEnd, proxyFront = net.Pipe()
				proxyBack, serverEnd = net.Pipe()
				go benchServer(serverEnd.(net.Conn), serverEnd.(net.Conn))
				front, back = proxy.NewStreamConn(proxyFront, proxyFront), proxy.NewStreamConn(proxyBack, proxyBack)
			}
			done := make(chan error, 1)
			go func() {
				done <- proxy.Run(ctx, opts, front, back)
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
				// the path differs per run too: the engine's cache of
				// decisions is the process's, shared by the runs
				lines[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":"/ws/f%s%d.txt","head":%d}%s}}`, i+1, c.name, b.N, i+1, c.meta)
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
func benchServer(r io.Reader, w io.Writer) {
	br := bufio.NewReaderSize(r, 1<<16)
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
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
	}
}

// osPipes joins the client, the proxy and the server with the operating
// system's pipes, as `mcpx-policy proxy` runs between an MCP client and a
// server process: the client's side on blocking pipes (stdin and stdout
// are), the server's on pipes of the runtime's poller (os/exec's are), and
// the proxy's log at the info level to a pipe another goroutine drains
// (stderr). It returns the client's end, the proxy's two connections and
// what ends the server.
func osPipes(b *testing.B, opts *proxy.Options) (client io.ReadWriteCloser, front, back proxy.Conn, server io.Closer) {
	blocking := func() (r, w *os.File) {
		var fds [2]int
		if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
			b.Fatal(err)
		}
		return os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	}
	stdinR, stdinW := blocking()
	stdoutR, stdoutW := blocking()
	toServerR, toServerW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fromServerR, fromServerW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	go io.Copy(io.Discard, logR)
	b.Cleanup(func() { logW.Close(); logR.Close(); stdoutR.Close() })
	opts.Logger = slog.New(slog.NewTextHandler(logW, &slog.HandlerOptions{Level: slog.LevelInfo}))
	go benchServer(toServerR, fromServerW)
	front = proxy.StdioOf(stdinR, stdoutW)
	back = proxy.NewStreamConn(fromServerR, toServerW)
	return struct {
		io.Reader
		io.WriteCloser
	}{stdoutR, stdinW}, front, back, closers{toServerR, fromServerW}
}

type closers []io.Closer

func (c closers) Close() error {
	for _, x := range c {
		x.Close()
	}
	return nil
}
