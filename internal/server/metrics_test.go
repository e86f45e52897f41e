package server_test

import (
	"context"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/buildinfo"
)

// scrape GETs /metrics and parses the text exposition.
func (f *fixture) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(f.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics is not the Prometheus text format: %v", err)
	}
	return fams
}

// value returns the value of the series of family name whose labels are
// exactly labels ("k=v" pairs); ok is false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	fam := fams[name]
	if fam == nil {
		return 0, false
	}
	for _, m := range fam.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		match := true
		for i, l := range m.Label {
			if labels[i] != l.GetName()+"="+l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsAfterAScriptedRun drives the service through decisions of
// every kind, an unknown outcome, an evaluation that fails, and two
// reloads (one good, one bad), then scrapes /metrics and checks each
// metric's count.
func TestMetricsAfterAScriptedRun(t *testing.T) {
	f := newFixture(t, token)
	calls := []string{
		`{"server":"fs","tool":` + writeFile + `,"args":{"path":"/workspace/a","content":"x"}}`, // allow
		`{"server":"fs","tool":` + writeFile + `,"args":{"path":"/workspace/b","content":"x"}}`, // allow
		`{"server":"fs","tool":` + writeFile + `,"args":{"path":"/etc/passwd","content":"x"}}`,  // ArgumentRuleViolation
		`{"server":"fs","tool":{"name":"move_file"},"args":{}}`,                                 // HiddenTool
		`{"server":"git","tool":{"name":"push"},"args":{}}`,                                     // WriteNeedsConfirmation
		`{"server":`, // InvalidInput, decided by the handler
	}
	for _, c := range calls {
		f.do(t, "POST", "/v1/decide", "", c)
	}
	// A write whose outcome is lost blocks the next write to fs.
	var tool decision.Tool
	tool, err := mcpxpolicy.ParseTool([]byte(writeFile))
	if err != nil {
		t.Fatal(err)
	}
	call := decision.Call{Server: "fs", Tool: tool, Args: map[string]any{"path": "/workspace/c"}, Surface: "mcp"}
	d, err := f.eng.Writes().Begin(call)
	if err != nil {
		t.Fatal(err)
	}
	d.Sent()
	if err := d.Unknown("timeout"); err != nil {
		t.Fatal(err)
	}
	f.do(t, "POST", "/v1/decide", "", calls[0]) // UnknownOutcomePending
	// An evaluation that cannot finish: a PolicyError with an error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.eng.Decide(ctx, call); err == nil {
		t.Fatal("Decide with a cancelled context returned no error")
	}
	// One reload that works, one that fails (the old policy stays).
	if err := f.eng.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.conf, []byte("version: 1\npolicy: {write: sometimes}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.eng.Reload(context.Background()); err == nil {
		t.Fatal("reload of a bad config succeeded")
	}

	fams := f.scrape(t)
	want := []struct {
		name   string
		labels []string
		value  float64
	}{
		{"mcpx_policy_decisions_total", []string{"code=none", "outcome=allow", "shadow=false"}, 2},
		{"mcpx_policy_decisions_total", []string{"code=ArgumentRuleViolation", "outcome=deny", "shadow=false"}, 1},
		{"mcpx_policy_decisions_total", []string{"code=HiddenTool", "outcome=deny", "shadow=false"}, 1},
		{"mcpx_policy_decisions_total", []string{"code=WriteNeedsConfirmation", "outcome=ask", "shadow=false"}, 1},
		{"mcpx_policy_decisions_total", []string{"code=InvalidInput", "outcome=deny", "shadow=false"}, 1},
		{"mcpx_policy_decisions_total", []string{"code=UnknownOutcomePending", "outcome=deny", "shadow=false"}, 1},
		{"mcpx_policy_decisions_total", []string{"code=PolicyError", "outcome=deny", "shadow=false"}, 1},
		{"mcpx_policy_decisions_total", []string{"code=WriteDenied", "outcome=deny", "shadow=false"}, 0},
		{"mcpx_policy_decision_duration_seconds", nil, 8},
		{"mcpx_policy_decision_errors_total", nil, 1},
		{"mcpx_policy_config_reloads_total", []string{"result=ok"}, 1},
		{"mcpx_policy_config_reloads_total", []string{"result=failed"}, 1},
		{"mcpx_policy_config_last_reload_successful", nil, 0},
		{"mcpx_policy_config_revision_info", []string{"revision=" + f.eng.Revision()}, 1},
		{"mcpx_policy_ledger_pending_entries", []string{"server=fs"}, 1},
		{"mcpx_policy_ledger_readable", nil, 1},
		{"mcpx_policy_approvals_pending", nil, 1}, // the ask's approval request
		{"mcpx_policy_upstream_calls_in_flight", nil, 0},
	}
	for _, w := range want {
		got, ok := value(fams, w.name, w.labels...)
		if !ok || got != w.value {
			t.Errorf("%s{%s} = %v (present %v); want %v", w.name, strings.Join(w.labels, ","), got, ok, w.value)
		}
	}
	// The decision latency buckets are cumulative up to the count.
	h := fams["mcpx_policy_decision_duration_seconds"].Metric[0].Histogram
	if n := len(h.Bucket); n == 0 || h.Bucket[n-1].GetCumulativeCount() > h.GetSampleCount() {
		t.Errorf("decision latency histogram %v", h)
	}
}

// TestProbes: /healthz is 200 while the process serves, with the config
// revision and the running build; /readyz is 200 with a readable ledger
// and 503, naming the ledger, when it does not read.
func TestProbes(t *testing.T) {
	f := newFixture(t, token)
	if status, body := f.do(t, "GET", "/healthz", "", ""); status != 200 || body["status"] != "ok" || body["revision"] != f.eng.Revision() {
		t.Errorf("GET /healthz = %d %v", status, body)
	} else if b, _ := body["build"].(map[string]any); b["version"] != buildinfo.Read().Version || b["revision"] != buildinfo.Read().Revision || b["go"] != runtime.Version() {
		t.Errorf("GET /healthz: build %v, want %+v", body["build"], buildinfo.Read())
	}
	if status, body := f.do(t, "GET", "/readyz", "", ""); status != 200 || body["status"] != "ready" {
		t.Errorf("GET /readyz = %d %v", status, body)
	}
	// A corrupt ledger: not ready, still alive.
	state := f.dir + "/state"
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(state+"/ledger.json", []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	status, body := f.do(t, "GET", "/readyz", "", "")
	checks, _ := body["checks"].(map[string]any)
	if status != 503 || body["status"] != "not ready" || checks["policy"] != "ok" || !strings.Contains(checks["ledger"].(string), "ledger.json") {
		t.Errorf("GET /readyz with a corrupt ledger = %d %v; want 503 naming the ledger", status, body)
	}
	if status, _ := f.do(t, "GET", "/healthz", "", ""); status != 200 {
		t.Errorf("GET /healthz with a corrupt ledger = %d; want 200 (alive)", status)
	}
	if v, ok := value(f.scrape(t), "mcpx_policy_ledger_readable"); !ok || v != 0 {
		t.Errorf("mcpx_policy_ledger_readable = %v, %v; want 0", v, ok)
	}
	if status, _ := f.do(t, "POST", "/readyz", "", "{}"); status != 405 {
		t.Errorf("POST /readyz = %d; want 405", status)
	}
}
