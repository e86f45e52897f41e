package metrics_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/buildinfo"
	"github.com/mcpx/mcpx-policy/internal/metrics"
)

// openMetricsParser is the OpenMetrics parser of the Prometheus Python
// client (Debian: python3-prometheus-client): it reads the exposition on
// stdin and prints "name type" for each family, or fails.
const openMetricsParser = `import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for f in text_string_to_metric_families(sys.stdin.read()):
    print(f.name, f.type)
`

// python is a python3 that has the Prometheus client's OpenMetrics parser:
// $MCPX_POLICY_TEST_PYTHON, else python3 on the PATH, else Debian's
// /usr/bin/python3. The test fails, with the command that installs it,
// when there is none (.ci/prereqs.sh checks the same before make test).
func python(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("MCPX_POLICY_TEST_PYTHON"), "python3", "/usr/bin/python3"} {
		if p == "" {
			continue
		}
		if exec.Command(p, "-c", "import prometheus_client.openmetrics.parser").Run() == nil {
			return p
		}
	}
	t.Fatal("no python3 with the Prometheus client's OpenMetrics parser: apt-get install python3-prometheus-client (or set MCPX_POLICY_TEST_PYTHON to a python3 that has it)")
	return ""
}

// busy is a Metrics with every option and some of everything counted: an
// allow, asks and denies, a shadow-mode relaxation, a code outside the
// closed set, reloads, upstream calls.
func busy() *metrics.Metrics {
	m := metrics.New(metrics.Options{
		Revision:  func() string { return "abc123" },
		Pending:   func() (map[string]int, error) { return map[string]int{"fs": 2}, nil },
		Approvals: func() (int, error) { return 1, nil },
		Process:   true,
	})
	m.Decided(decision.Allow, "", false, time.Millisecond, nil)
	m.Decided(decision.Ask, decision.WriteNeedsConfirmation, false, time.Millisecond, nil)
	m.Decided(decision.Deny, decision.ArgumentRuleViolation, true, time.Millisecond, nil)
	m.Decided(decision.Deny, decision.PolicyError, false, time.Millisecond, errors.New("timeout"))
	m.Decided(decision.Deny, "SomethingNew", false, time.Millisecond, nil)
	m.Reloaded(nil)
	m.Reloaded(errors.New("bad config"))
	m.UpstreamStarted()
	m.UpstreamDone(metrics.UpstreamResult, 10*time.Millisecond)
	return m
}

// scrape GETs /metrics from m's handler with accept as the Accept header
// and returns the body and its Content-Type.
func scrape(t *testing.T, m *metrics.Metrics, accept string) (string, string) {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	return string(body), resp.Header.Get("Content-Type")
}

// TestOpenMetricsParses: a scraper that asks for OpenMetrics (as
// Prometheus does) gets it, and the Prometheus Python client's OpenMetrics
// parser reads every family of it — which it refused while the Go
// collector's go_memstats_alloc_bytes gauge clashed with the family of
// go_memstats_alloc_bytes_total.
func TestOpenMetricsParses(t *testing.T) {
	py := python(t)
	body, ctype := scrape(t, busy(), "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	if !strings.HasPrefix(ctype, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q, want OpenMetrics", ctype)
	}
	cmd := exec.Command(py, "-c", openMetricsParser)
	cmd.Stdin = strings.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the OpenMetrics parser refuses /metrics: %v\n%s", err, stderr.String())
	}
	fams := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		name, typ, _ := strings.Cut(line, " ")
		fams[name] = typ
	}
	for name, typ := range map[string]string{
		"mcpx_policy_decisions":                 "counter",
		"mcpx_policy_decision_duration_seconds": "histogram",
		"mcpx_policy_config_revision_info":      "gauge",
		"mcpx_policy_build_info":                "gauge",
		"mcpx_policy_ledger_pending_entries":    "gauge",
		"go_memstats_alloc_bytes":               "counter", // go_memstats_alloc_bytes_total's family
		"go_memstats_heap_alloc_bytes":          "gauge",
		"process_cpu_seconds":                   "counter",
	} {
		if fams[name] != typ {
			t.Errorf("family %s: type %q, want %q (parsed: %v)", name, fams[name], typ, fams)
		}
	}
	// the text format, for scrapers that do not ask, parses too
	text, _ := scrape(t, busy(), "")
	tp := expfmt.NewTextParser(model.UTF8Validation)
	if _, err := tp.TextToMetricFamilies(strings.NewReader(text)); err != nil {
		t.Errorf("the text format does not parse: %v", err)
	}
}

// TestBuildInfo: mcpx_policy_build_info carries the running build's
// version, revision and Go toolchain.
func TestBuildInfo(t *testing.T) {
	text, _ := scrape(t, busy(), "")
	bi := buildinfo.Read()
	want := `mcpx_policy_build_info{goversion="` + bi.Go + `",revision="` + bi.Revision + `",version="` + bi.Version + `"} 1`
	if !strings.Contains(text, want+"\n") {
		t.Errorf("no %s in\n%s", want, grep(text, "build_info"))
	}
}

// TestOnlyPossibleSeries: before any decision, the decisions counter has
// a series for each pair of outcome and deciding code the engine can
// produce — an allow with no code, an ask with a code that asks, a deny
// with a code that denies — and for no other: none for an allow with a
// code, a code that only denies under ask, or the codes a surface adds
// after an ask.
func TestOnlyPossibleSeries(t *testing.T) {
	text, _ := scrape(t, metrics.New(metrics.Options{}), "")
	tp := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := tp.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, m := range fams["mcpx_policy_decisions_total"].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		have[l["outcome"]+"/"+l["code"]+"/"+l["shadow"]] = true
	}
	want := map[string]bool{"allow/none/false": true}
	for _, c := range decision.Codes {
		switch {
		case c.Code == decision.ConfirmationUnavailable || c.Code == decision.ConfirmationDeclined || c.Outcome == "":
		case c.Outcome == decision.Ask:
			want["ask/"+string(c.Code)+"/false"] = true
		case c.Code == decision.ToolDefinitionChanged: // pinTools: deny or ask
			want["ask/"+string(c.Code)+"/false"] = true
			want["deny/"+string(c.Code)+"/false"] = true
		default:
			want["deny/"+string(c.Code)+"/false"] = true
		}
	}
	for k := range have {
		if !want[k] {
			t.Errorf("series outcome/code/shadow %s is created but can never count", k)
		}
	}
	for k := range want {
		if !have[k] {
			t.Errorf("series outcome/code/shadow %s is not created", k)
		}
	}
	for _, impossible := range []string{"allow/ArgumentRuleViolation/false", "ask/ArgumentRuleViolation/false", "deny/WriteNeedsConfirmation/false", "deny/ConfirmationUnavailable/false"} {
		if have[impossible] {
			t.Errorf("impossible series %s", impossible)
		}
	}
	// a series made by counting appears when counted
	m := busy()
	text, _ = scrape(t, m, "")
	for _, s := range []string{
		`mcpx_policy_decisions_total{code="ArgumentRuleViolation",outcome="deny",shadow="true"} 1`,
		`mcpx_policy_decisions_total{code="other",outcome="deny",shadow="false"} 1`,
	} {
		if !strings.Contains(text, s+"\n") {
			t.Errorf("no %s in\n%s", s, grep(text, "decisions_total"))
		}
	}
}

func grep(text, what string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, what) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
