package policy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkE2EFilesystemCall measures one tools/call to the npm filesystem
// server, straight and through the proxy, from the MCP Go SDK client over
// stdio: two sessions, one straight to a server and one through the
// proxy to another, called in turn (which goes first alternates), so that
// both see the same load on a shared machine. It reports each side's p50
// and p99 latency and the proxy's over the direct ones (p50-x, p99-x),
// and those of a relay (the server behind a cat on each pipe: what one
// more process on the way costs, whatever it does) over the direct ones
// (relay-p50-x, relay-p99-x). The
// difference is what the proxy adds: a read is decided and forwarded; a
// write also goes through the ledger (an in-flight marker made durable
// before the request, removed after the answer). read-2026 is the read
// with the MCP 2026-07-28 request metadata in each call's _meta, as a
// 2026-07-28 client sends it, through a proxy run with --tools-max-age
// 10s (without it, each such call lists the tools first).
// proxy-cpu-µs/op is the CPU time the proxy's process used per call.
//
//	go test -run '^$' -bench E2EFilesystemCall -benchtime 2000x ./policy_test
func BenchmarkE2EFilesystemCall(b *testing.B) {
	fsServer := npmServer(b, "mcp-server-filesystem")
	root := b.TempDir()
	file := filepath.Join(root, "f.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	// Every call differs (head, content), so no decision comes from the
	// engine's cache of identical calls.
	calls := map[string]func(i int) *mcp.CallToolParams{
		"read": func(i int) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": file, "head": i + 1}}
		},
		"read-2026": func(i int) *mcp.CallToolParams {
			return &mcp.CallToolParams{Meta: mcp.Meta{"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
				Name: "read_text_file", Arguments: map[string]any{"path": file, "head": i + 1}}
		},
		"write": func(i int) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": filepath.Join(root, "w.txt"), "content": fmt.Sprint("x", i)}}
		},
	}
	for _, kind := range []string{"read", "read-2026", "write"} {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			var flags []string
			if kind == "read-2026" {
				flags = []string{"--tools-max-age", "10s"}
			}
			g := newGate(b, "fs", transparentConfig, flags...)
			// The relay is the floor of any proxy in its own process: the
			// same server behind a cat on each pipe, one more hop each
			// way, as through the proxy.
			relay := direct("sh", "-c", `cat | "$0" "$1" | cat`, fsServer, root)
			proxied := g.command(b, fsServer, root)
			sessions := [3]*mcp.ClientSession{
				connect(b, ctx, direct(fsServer, root), nil),
				connect(b, ctx, proxied, nil),
				connect(b, ctx, relay, nil),
			}
			params := calls[kind]
			one := func(cs *mcp.ClientSession, p *mcp.CallToolParams) time.Duration {
				start := time.Now()
				res, err := cs.CallTool(ctx, p)
				d := time.Since(start)
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %v", p.Name, err, res)
				}
				return d
			}
			for i := range 20 { // warm up: the proxy's first call lists the tools
				for _, cs := range sessions {
					one(cs, params(-i-1000))
				}
			}
			var lat [3][]time.Duration
			for side := range lat {
				lat[side] = make([]time.Duration, 0, b.N)
			}
			cpu0 := processCPU(proxied.Process.Pid)
			b.ResetTimer()
			for i := range b.N {
				p := params(i)
				for k := range 3 {
					side := (i + k) % 3
					lat[side] = append(lat[side], one(sessions[side], p))
				}
			}
			b.StopTimer()
			if cpu := processCPU(proxied.Process.Pid) - cpu0; cpu0 >= 0 && cpu >= 0 {
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "proxy-cpu-µs/op")
			}
			var p50, p99 [3]time.Duration
			for side, l := range lat {
				slices.Sort(l)
				p50[side], p99[side] = l[len(l)/2], l[len(l)*99/100]
			}
			b.ReportMetric(float64(p50[0].Microseconds()), "direct-p50-µs")
			b.ReportMetric(float64(p99[0].Microseconds()), "direct-p99-µs")
			b.ReportMetric(float64(p50[1].Microseconds()), "proxy-p50-µs")
			b.ReportMetric(float64(p99[1].Microseconds()), "proxy-p99-µs")
			b.ReportMetric(float64(p50[1])/float64(p50[0]), "p50-x")
			b.ReportMetric(float64(p99[1])/float64(p99[0]), "p99-x")
			b.ReportMetric(float64(p50[2])/float64(p50[0]), "relay-p50-x")
			b.ReportMetric(float64(p99[2])/float64(p99[0]), "relay-p99-x")
		})
	}
}

// processCPU is the CPU time (user and system) process pid used so far,
// from /proc (in clock ticks of 10 ms); -1 where /proc cannot say.
func processCPU(pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// the fields after the command's name, which ends with the last ')'
	i := bytes.LastIndexByte(raw, ')')
	f := strings.Fields(string(raw[i+1:]))
	if i < 0 || len(f) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
