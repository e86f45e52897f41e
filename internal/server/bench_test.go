package server_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
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
