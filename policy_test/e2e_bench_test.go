package policy_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkE2EFilesystemCall measures one tools/call to the npm filesystem
// server, straight and through the proxy, from the MCP Go SDK client over
// stdio: two sessions, one straight to a server and one through the
// proxy to another, called in turn (which goes first alternates), so that
// both see the same load on a shared machine. It reports each side's p50
// and p99 latency and the proxy's over the direct ones (p50-x, p99-x). The
// difference is what the proxy adds: a read is decided and forwarded; a
// write also goes through the ledger (an in-flight marker made durable
// before the request, removed after the answer). read-2026 is the read
// with the MCP 2026-07-28 request metadata in each call's _meta, as a
// 2026-07-28 client sends it, through a proxy run with --tools-max-age
// 10s (without it, each such call lists the tools first).
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
			sessions := [2]*mcp.ClientSession{
				connect(b, ctx, direct(fsServer, root), nil),
				connect(b, ctx, g.command(b, fsServer, root), nil),
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
			lat := [2][]time.Duration{make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)}
			b.ResetTimer()
			for i := range b.N {
				p := params(i)
				for k := range 2 {
					side := (i + k) % 2
					lat[side] = append(lat[side], one(sessions[side], p))
				}
			}
			b.StopTimer()
			var p50, p99 [2]time.Duration
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
		})
	}
}
