package server_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"
)

// BenchmarkServeDecide is the load run of `serve`: concurrent clients
// (GOMAXPROCS×4 goroutines, keep-alive) POST /v1/decide over loopback TCP
// to the real handler with the decision log on, alternating an allowed
// write and an argument-rule deny. It reports decisions per second.
//
//	go test -run '^$' -bench ServeDecide -benchtime 5s ./internal/server
func BenchmarkServeDecide(b *testing.B) {
	f := newFixture(b, token)
	bodies := [][]byte{
		[]byte(`{"server":"fs","tool":` + writeFile + `,"args":{"path":"/workspace/a","content":"x"}}`),
		[]byte(`{"server":"fs","tool":` + writeFile + `,"args":{"path":"/etc/passwd","content":"x"}}`),
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			resp, err := client.Post(f.srv.URL+"/v1/decide", "application/json", bytes.NewReader(bodies[i%2]))
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
			i++
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
}
