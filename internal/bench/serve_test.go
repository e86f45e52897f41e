package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/server"
)

// serveClients is how many keep-alive clients send calls at once.
const serveClients = 16

// BenchmarkServeVsOPA is `serve` (the real handler, loopback TCP, the
// decision log on, asks put on hold as a daemon holds them, every tool
// seen once before: serveEngine) side by side
// with a stock `opa run --server` holding the same config's bundle, on
// the same distinct M calls (the workload's mix: allows, asks, write-mode,
// hidden, argument-rule and unknown-argument refusals), each sent by
// serveClients keep-alive clients at once. The two are run alternately,
// four rounds of b.N/4 calls each, so both see the same load on a shared
// machine. It reports each side's decisions per second, their ratio
// ("serve/opa-x") and serve's p50 and p99 under that load; a call is
// timed from the request to its response read whole.
func BenchmarkServeVsOPA(b *testing.B) {
	b.Run(M.Name, func(b *testing.B) { serveVsOPA(b, load(b, M)) })
}

func serveVsOPA(b *testing.B, f *fixture) {
	opa := f.server(b)
	serve := f.serve(b)
	n := max(b.N, 4*serveClients)
	calls := f.w.Fresh(n)
	opaBodies := make([][]byte, n)
	serveBodies := make([][]byte, n)
	for i, c := range calls {
		in, err := f.eng.OPAInput(c)
		if err != nil {
			b.Fatal(err)
		}
		opaBodies[i] = append(append([]byte(`{"input": `), in...), '}')
		if serveBodies[i], err = callDocument(c); err != nil {
			b.Fatal(err)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: serveClients, MaxConnsPerHost: serveClients,
		DialContext: (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext}, Timeout: 60 * time.Second}
	// one call each first, so both have their connections open
	warmup := func(url string, body []byte) {
		var wg sync.WaitGroup
		for range serveClients {
			wg.Go(func() { _, _ = post(client, url, body) })
		}
		wg.Wait()
	}
	warmup(opa+"/v1/data/mcpx/decision", opaBodies[0])
	warmup(serve+"/v1/decide", serveBodies[0])

	var opaTime, serveTime time.Duration
	serveLat := make([]time.Duration, 0, n)
	b.ReportAllocs()
	b.ResetTimer()
	const rounds = 4
	for r := range rounds {
		lo, hi := r*n/rounds, (r+1)*n/rounds
		d, _ := fire(b, client, opa+"/v1/data/mcpx/decision", opaBodies[lo:hi], okOPA)
		opaTime += d
		d, lat := fire(b, client, serve+"/v1/decide", serveBodies[lo:hi], okServe)
		serveTime += d
		serveLat = append(serveLat, lat...)
	}
	b.StopTimer()
	slices.Sort(serveLat)
	opaRate := float64(n) / opaTime.Seconds()
	serveRate := float64(n) / serveTime.Seconds()
	b.ReportMetric(serveRate, "serve-decisions/s")
	b.ReportMetric(opaRate, "opa-decisions/s")
	b.ReportMetric(serveRate/opaRate, "serve/opa-x")
	b.ReportMetric(float64(serveLat[len(serveLat)/2].Nanoseconds()), "serve-p50-ns")
	b.ReportMetric(float64(serveLat[min(len(serveLat)-1, len(serveLat)*99/100)].Nanoseconds()), "serve-p99-ns")
}

// okOPA and okServe are the statuses a decision comes back with: a stock
// OPA answers every decision 200; serve answers an allow 200, a deny 403
// and an ask 428.
func okOPA(s int) bool { return s == http.StatusOK }
func okServe(s int) bool {
	return s == http.StatusOK || s == http.StatusForbidden || s == http.StatusPreconditionRequired
}

// fire sends bodies to url from serveClients clients at once, each taking
// the next body, and returns the time until the last response was read
// and each call's time.
func fire(b *testing.B, client *http.Client, url string, bodies [][]byte, ok func(int) bool) (time.Duration, []time.Duration) {
	lat := make([]time.Duration, len(bodies))
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range serveClients {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) {
					return
				}
				t0 := time.Now()
				status, err := post(client, url, bodies[i])
				lat[i] = time.Since(t0)
				if err == nil && !ok(status) {
					err = fmt.Errorf("%s: status %d", url, status)
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return d, lat
}

// post sends body and reads the response whole.
func post(client *http.Client, url string, body []byte) (int, error) {
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

// callDocument is call as serve reads it: the server, the tool as an MCP
// Tool, the arguments.
func callDocument(c decision.Call) ([]byte, error) {
	return json.Marshal(map[string]any{"server": c.Server, "tool": c.Tool, "args": c.Args})
}

var (
	serveMu  sync.Mutex
	serveURL = map[string]string{}
)

// serve starts (once per process) `serve`'s handler for the fixture's
// config on loopback, with an engine of its own and a state dir of its
// own (so its asks' holds do not touch the other benchmarks'), the
// decision log on (discarded), and returns its base URL.
func (f *fixture) serve(b *testing.B) string {
	b.Helper()
	serveMu.Lock()
	defer serveMu.Unlock()
	if u := serveURL[f.w.Shape.Name]; u != "" {
		return u
	}
	srv := httptest.NewServer(server.New(f.serveEngine(b), server.Options{Token: "bench-token-0123456789abcdef", DecisionLog: io.Discard,
		MaxInFlight: 4 * serveClients}))
	stopMu.Lock()
	stops = append(stops, srv.Close)
	stopMu.Unlock()
	serveURL[f.w.Shape.Name] = srv.URL
	return srv.URL
}

// BenchmarkAnswer is what serve's handler asks of the engine per call,
// without HTTP: Engine.Answer on the call document, as serve calls it
// (daemon surface, asks held out of band), on distinct M calls; with the
// allocations, which a loaded machine does not move.
//
//	go test -run '^$' -bench '^BenchmarkAnswer$' -benchmem -benchtime 2000x ./internal/bench/
func BenchmarkAnswer(b *testing.B) {
	b.Run(M.Name, func(b *testing.B) {
		f := load(b, M)
		eng := f.serveEngine(b)
		calls := f.w.Fresh(b.N)
		docs := make([][]byte, len(calls))
		for i, c := range calls {
			var err error
			if docs[i], err = callDocument(c); err != nil {
				b.Fatal(err)
			}
		}
		ctx := context.Background()
		opts := mcpxpolicy.AnswerOptions{DefaultSurface: mcpxpolicy.SurfaceDaemon, OutOfBand: true, Caller: "daemon:bench"}
		TimedByClass(b, func(i int) string {
			a := eng.Answer(ctx, docs[i], opts)
			return outcomeClass(a.Decision.Decision())
		})
	})
}

// serveEngine is a second engine for the fixture's config, with a state
// dir of its own, made once per process and shown every tool once (as
// a daemon has after a few calls per tool): serve's, and
// BenchmarkAnswer's.
func (f *fixture) serveEngine(b *testing.B) *mcpxpolicy.Engine {
	b.Helper()
	serveEngMu.Lock()
	defer serveEngMu.Unlock()
	if e := serveEngines[f.w.Shape.Name]; e != nil {
		return e
	}
	opts := f.opts
	opts.StateDir = filepath.Join(f.dir, "serve-state")
	eng, err := mcpxpolicy.New(context.Background(), opts)
	if err != nil {
		b.Fatal(err)
	}
	// tools seen, as BenchmarkDecide's engine has: one call on every tool
	ctx := context.Background()
	for _, srv := range f.w.Servers {
		for _, t := range srv.Tools {
			if _, err := eng.Decide(ctx, decision.Call{Server: srv.Name, Tool: t, Args: map[string]any{"path": "/workspace/warm"}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	serveEngines[f.w.Shape.Name] = eng
	return eng
}

var (
	serveEngMu   sync.Mutex
	serveEngines = map[string]*mcpxpolicy.Engine{}
)
