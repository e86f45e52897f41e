package server

import (
	"fmt"
	"net/http"

	"github.com/mcpx/mcpx-policy/internal/buildinfo"
	"github.com/mcpx/mcpx-policy/internal/loopback"
	"github.com/mcpx/mcpx-policy/internal/metrics"
)

// Prober is what the probes ask: *mcpxpolicy.Engine.
type Prober interface {
	Revision() string
	Ready() error
}

// Health is the body of GET /healthz: the process is up and serving,
// the config revision it decides with, and the build that runs
// (`mcpx-policy version`).
type Health struct {
	Status   string         `json:"status"`
	Revision string         `json:"revision"`
	Build    buildinfo.Info `json:"build"`
}

// Readiness is the body of GET /readyz: "ready" with 200, or "not ready"
// with 503 and the reason in Error.
type Readiness struct {
	Status   string `json:"status"`
	Revision string `json:"revision"`
	// Checks holds "policy" and "ledger": "ok", or what is wrong.
	Checks map[string]string `json:"checks"`
	Error  string            `json:"error,omitempty"`
}

// build is the running build, read once.
var build = buildinfo.Read()

// healthz answers liveness: 200 while the process serves HTTP. It checks
// nothing else, so a ledger an operator must repair never gets the
// process restarted (that is /readyz's to say).
func healthz(p Prober) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, Health{Status: "ok", Revision: p.Revision(), Build: build})
	}
}

// readyz answers readiness: 200 when a policy is loaded and the
// unknown-outcome ledger reads, else 503 naming what is wrong.
func readyz(p Prober) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rd := Readiness{Status: "ready", Revision: p.Revision(), Checks: map[string]string{"policy": "ok", "ledger": "ok"}}
		if err := p.Ready(); err != nil {
			rd.Status, rd.Error, rd.Checks["ledger"] = "not ready", err.Error(), err.Error()
			writeJSON(w, http.StatusServiceUnavailable, rd)
			return
		}
		writeJSON(w, http.StatusOK, rd)
	}
}

// Probes serves GET /healthz, GET /readyz and, with m, GET /metrics for a
// listener that is not serve's own (the proxy's --listen); any other path
// is a 404. A request that reached a loopback listener under a foreign
// Host name (DNS rebinding) is refused.
func Probes(p Prober, m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	addProbes(mux, p, m)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if loopback.Rebound(r) {
			writeError(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("Host %q is not a loopback name", r.Host))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func addProbes(mux *http.ServeMux, p Prober, m *metrics.Metrics) {
	mux.HandleFunc("/healthz", only(http.MethodGet, healthz(p)))
	mux.HandleFunc("/readyz", only(http.MethodGet, readyz(p)))
	if m != nil {
		h := m.Handler()
		mux.HandleFunc("/metrics", only(http.MethodGet, h.ServeHTTP))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("no such endpoint %s (see docs/service.md)", r.URL.Path))
	})
}
