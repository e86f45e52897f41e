package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/buildinfo"
	"github.com/mcpx/mcpx-policy/internal/loopback"
	"github.com/mcpx/mcpx-policy/internal/metrics"
)

// Prober is what the probes ask: *mcpxpolicy.Engine.
type Prober interface {
	Revision() string
	Ready() error
	// Warnings are the config's load-time warnings (each setting a later
	// layer loosened among them), which /readyz lists.
	Warnings() []string
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
	// Checks holds "policy", "ledger", "config" and, for serve with a
	// decision log, "decision_log": "ok", or what is wrong. "config" is
	// never what makes the process not ready: it says how many warnings
	// the config has (a setting a later layer loosened, …).
	Checks map[string]string `json:"checks"`
	// Warnings are the config's warnings, as `mcpx-policy check` prints
	// them; absent when there are none.
	Warnings []string `json:"warnings,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// readiness is one more check /readyz makes: its name in Checks, and the
// function that says what is wrong (nil when nothing).
type readiness struct {
	name  string
	check func() error
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

// readyz answers readiness: 200 when a policy is loaded, the
// unknown-outcome ledger reads and each extra check passes, else 503
// naming what is wrong. The config's warnings are listed either way.
func readyz(p Prober, extra ...readiness) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rd := Readiness{Status: "ready", Revision: p.Revision(), Checks: map[string]string{"policy": "ok", "ledger": "ok", "config": "ok"}}
		if ws := p.Warnings(); len(ws) > 0 {
			rd.Warnings = ws
			rd.Checks["config"] = fmt.Sprintf("%d warning(s), listed in warnings (a setting a later layer loosened, …)", len(ws))
		}
		var why []string
		if err := p.Ready(); err != nil {
			rd.Checks["ledger"] = err.Error()
			why = append(why, err.Error())
		}
		for _, x := range extra {
			rd.Checks[x.name] = "ok"
			if err := x.check(); err != nil {
				rd.Checks[x.name] = err.Error()
				why = append(why, x.name+": "+err.Error())
			}
		}
		if len(why) > 0 {
			rd.Status, rd.Error = "not ready", strings.Join(why, "; ")
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

func addProbes(mux *http.ServeMux, p Prober, m *metrics.Metrics, extra ...readiness) {
	mux.HandleFunc("/healthz", only(http.MethodGet, healthz(p)))
	mux.HandleFunc("/readyz", only(http.MethodGet, readyz(p, extra...)))
	if m != nil {
		h := m.Handler()
		mux.HandleFunc("/metrics", only(http.MethodGet, h.ServeHTTP))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("no such endpoint %s (see docs/service.md)", r.URL.Path))
	})
}
