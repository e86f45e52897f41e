package policy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkE2EFilesystemCall measures one tools/call to the npm filesystem
// server, straight and through the proxy, from the MCP Go SDK client over
// stdio, and reports the p50 and p99 latency of the calls. The difference
// between the two is what the proxy adds: a read is decided and
// forwarded; a write also goes through the ledger (an in-flight marker
// made durable before the request, removed after the answer).
//
//	go test -run '^$' -bench E2EFilesystemCall -benchtime 2000x ./policy_test
func BenchmarkE2EFilesystemCall(b *testing.B) {
	fsServer := npmServer(b, "mcp-server-filesystem")
	root := b.TempDir()
	file := filepath.Join(root, "f.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	g := newGate(b, "fs", transparentConfig)
	// Every call differs (head, content), so no decision comes from the
	// engine's cache of identical calls.
	calls := map[string]func(i int) *mcp.CallToolParams{
		"read": func(i int) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": file, "head": i + 1}}
		},
		"write": func(i int) *mcp.CallToolParams {
			return &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": filepath.Join(root, "w.txt"), "content": fmt.Sprint("x", i)}}
		},
	}
	for _, kind := range []string{"read", "write"} {
		for _, via := range []string{"direct", "proxy"} {
			b.Run(kind+"/"+via, func(b *testing.B) {
				ctx := context.Background()
				var cmd *exec.Cmd
				if via == "direct" {
					cmd = direct(fsServer, root)
				} else {
					cmd = g.command(b, fsServer, root)
				}
				cs := connect(b, ctx, cmd, nil)
				defer cs.Close()
				params := calls[kind]
				for i := range 20 { // warm up: the proxy's first call lists the tools
					if _, err := cs.CallTool(ctx, params(-i-1000)); err != nil {
						b.Fatal(err)
					}
				}
				lat := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				for i := range b.N {
					p := params(i)
					start := time.Now()
					res, err := cs.CallTool(ctx, p)
					lat = append(lat, time.Since(start))
					if err != nil || res.IsError {
						b.Fatalf("%s: %v %v", p.Name, err, res)
					}
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
			})
		}
	}
}
