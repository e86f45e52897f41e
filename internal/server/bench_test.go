package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// BenchmarkServeDecide is the load run of `serve`: concurrent clients
// (GOMAXPROCS×4 goroutines, keep-alive) POST /v1/decide over loopback TCP
// to the real handler with the decision log on, alternating an allowed
// write and an argument-rule deny. Every call has its own path, so no
// decision is served from the engine's cache of identical calls. It
// reports decisions per second.
//
//	go test -run '^$' -bench ServeDecide -benchtime 5s ./internal/server
func BenchmarkServeDecide(b *testing.B) {
	f := newFixture(b, token)
	var seq atomic.Int64
	body := func() []byte {
		n := seq.Add(1)
		dir := "/workspace"
		if n%2 == 1 {
			dir = "/etc"
		}
		return fmt.Appendf(nil, `{"server":"fs","tool":%s,"args":{"path":"%s/f%d","content":"x"}}`, writeFile, dir, n)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(f.srv.URL+"/v1/decide", "application/json", bytes.NewReader(body()))
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
}

// BenchmarkServeDecideWithAsks is BenchmarkServeDecide with asks in the
// mix, as a decision service sees them: of every three calls one is an
// allowed write, one an argument-rule deny, one a write that asks — each a
// call of its own, so each ask is put on hold as an approval request of
// its own. With caps=default the caller's quota fills and further asks
// are refused; with caps=raised every ask is held, and the requests
// pending grow with the run. The decision log is on (discarded). It
// reports decisions per second.
//
//	go test -run '^$' -bench ServeDecideWithAsks -benchtime 3000x ./internal/server
func BenchmarkServeDecideWithAsks(b *testing.B) {
	for _, caps := range []string{"default", "raised"} {
		b.Run("caps="+caps, func(b *testing.B) {
			dir := b.TempDir()
			conf := filepath.Join(dir, "mcpx-policy.yaml")
			if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
				b.Fatal(err)
			}
			opts := mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, "state"), Env: []string{}}
			if caps == "raised" {
				opts.MaxApprovals, opts.MaxApprovalsPerCaller = 1<<20, 1<<20
			}
			eng, err := mcpxpolicy.New(context.Background(), opts)
			if err != nil {
				b.Fatal(err)
			}
			srv := httptest.NewServer(server.New(eng, server.Options{Token: token, DecisionLog: io.Discard, MaxBody: 4096}))
			defer srv.Close()
			var seq atomic.Int64
			body := func() []byte {
				n := seq.Add(1)
				switch n % 3 {
				case 0:
					return fmt.Appendf(nil, `{"server":"notes","tool":%s,"args":{"path":"/n/%d.md","content":"x"}}`, writeFile, n)
				case 1:
					return fmt.Appendf(nil, `{"server":"fs","tool":%s,"args":{"path":"/etc/f%d","content":"x"}}`, writeFile, n)
				}
				return fmt.Appendf(nil, `{"server":"fs","tool":%s,"args":{"path":"/workspace/f%d","content":"x"}}`, writeFile, n)
			}
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
			b.SetParallelism(4)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Post(srv.URL+"/v1/decide", "application/json", bytes.NewReader(body()))
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		})
	}
}
