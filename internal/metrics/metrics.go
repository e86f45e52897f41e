// Package metrics is what `serve` and `proxy --listen` expose on /metrics,
// in the Prometheus text format or OpenMetrics (docs/service.md#metrics):
// decisions by outcome, code and shadow, the findings of write budgets,
// loop breakers and flow rules by id, decision latency, evaluation
// errors, config reloads and the revision in use, unknown-outcome entries
// pending per server, approvals pending, the proxy's upstream calls and
// the running build.
//
// Every Metrics has its own registry: nothing is registered in the
// client library's global default registry, so two in one process (tests,
// an embedding daemon) never share or collide. Label values come from
// closed sets (outcomes, reason codes, results) or from the operator's own
// names (servers in the ledger); nothing a remote server or client sends
// becomes a label.
package metrics

import (
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcpx/mcpx-policy/internal/buildinfo"
)

// Namespace prefixes every metric name.
const Namespace = "mcpx_policy"

// MaxServers bounds the server label of the ledger gauge: past this many
// servers with pending entries, the rest are summed under server="_other".
const MaxServers = 100

// OtherServer is the server label the entries of servers past MaxServers
// are summed under.
const OtherServer = "_other"

// NoCode is the code label of an allow, which has no deciding reason.
const NoCode = "none"

// Options say where the gauges read at scrape time come from. A nil func
// leaves its metrics out.
type Options struct {
	// Revision returns the config revision in use.
	Revision func() string
	// Pending returns the unknown-outcome entries per server. An error
	// makes mcpx_policy_ledger_readable 0 and exports no per-server gauge.
	Pending func() (map[string]int, error)
	// Approvals returns how many approval requests wait for an answer; on
	// an error the gauge is left out of that scrape.
	Approvals func() (int, error)
	// Process adds the Go runtime and process collectors (memory, CPU,
	// file descriptors, goroutines), as OPA's /metrics has them.
	Process bool
}

// Metrics holds one process's metrics and its registry. Its methods are
// safe for concurrent use and do not allocate, but Finding (called only
// for the calls a budget or flow rule refused or asked).
type Metrics struct {
	reg *prometheus.Registry

	decisions   [2][3][]atomic.Value // [shadow][outcome severity][code index]: a prometheus.Counter, unset until created
	decisionVec *prometheus.CounterVec
	codes       []string   // the code label of each code index
	mu          sync.Mutex // guards creating a series of decisions
	latency     prometheus.Histogram
	evalErrs    prometheus.Counter
	reloads     [2]prometheus.Counter // ok, failed
	lastOK      prometheus.Gauge
	lastOKAt    prometheus.Gauge

	upstream [3]prometheus.Observer // result, error, lost
	inflight prometheus.Gauge

	logErrs     prometheus.Counter
	logWritable prometheus.Gauge

	askAnswers [3][]prometheus.Counter // [outcome severity][code index]: what the client got for an ask

	findings   *prometheus.CounterVec // per budget, loop breaker and flow rule (findings.go)
	findingIDs map[string]bool        // the (kind, id) pairs counted apart; guarded by mu
}

// codeIndex maps each reason code to its column in decisions; column 0 is
// NoCode and the last one "other" (a code outside the closed set, which
// the engine never returns).
var codeIndex = func() map[decision.Code]int {
	m := map[decision.Code]int{}
	for i, c := range decision.Codes {
		m[c.Code] = i + 1
	}
	return m
}()

var outcomes = [3]decision.Outcome{decision.Allow, decision.Ask, decision.Deny}

// New returns the metrics of one process with their own registry.
func New(opts Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	dec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "decisions_total",
		Help: "Decisions made, by the policy's outcome (allow, ask, deny), deciding reason code (none for an allow) and shadow (true: the server is in shadow mode and the call went ahead despite this outcome).",
	}, []string{"outcome", "code", "shadow"})
	codes := make([]string, 0, len(decision.Codes)+2)
	codes = append(codes, NoCode)
	for _, c := range decision.Codes {
		codes = append(codes, string(c.Code))
	}
	codes = append(codes, "other")
	m.decisionVec = dec
	m.codes = codes
	for s, shadow := range []string{"false", "true"} {
		for i, o := range outcomes {
			if s == 1 && o == decision.Allow {
				continue // shadow mode only lets through what the policy refused
			}
			m.decisions[s][i] = make([]atomic.Value, len(codes))
			if s == 1 {
				continue // created when counted: Decided
			}
			for j, c := range codes {
				if possible(o, decision.Code(c)) {
					m.decisions[s][i][j].Store(dec.WithLabelValues(string(o), c, shadow))
				}
			}
		}
	}
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "decision_duration_seconds",
		Help:    "Time to decide one call, ledger read included.",
		Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	})
	m.evalErrs = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "decision_errors_total",
		Help: "Decisions whose evaluation failed (a PolicyError deny: an evaluation error, a timeout, a cancelled request).",
	})
	rel := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "config_reloads_total",
		Help: "Config reloads, by result: ok (the new policy is in use) or failed (the old one stays).",
	}, []string{"result"})
	m.reloads = [2]prometheus.Counter{rel.WithLabelValues("ok"), rel.WithLabelValues("failed")}
	m.lastOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "config_last_reload_successful",
		Help: "1 when the last config reload succeeded (or none was tried since start), 0 when it failed.",
	})
	m.lastOK.Set(1)
	m.lastOKAt = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "config_last_reload_success_timestamp_seconds",
		Help: "Unix time of the last successful config load (the start counts).",
	})
	m.lastOKAt.SetToCurrentTime()
	up := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "upstream_call_duration_seconds",
		Help:    "Time from a tools/call sent to the MCP server to its answer, by result: result, error (a JSON-RPC error) or lost (no answer came: the server exited or the session ended).",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"result"})
	for i, r := range []string{"result", "error", "lost"} {
		m.upstream[i] = up.WithLabelValues(r)
	}
	m.inflight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "upstream_calls_in_flight",
		Help: "tools/call requests sent to the MCP server and not answered yet.",
	})
	m.logErrs = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "decision_log_errors_total",
		Help: "Decision log lines that could not be written (a full disk, a closed pipe); each such decision was refused, not answered.",
	})
	m.logWritable = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "decision_log_writable",
		Help: "1 when the last decision log line was written (or none was tried, or there is no decision log), 0 when it failed: decisions are refused until a line is written again.",
	})
	m.logWritable.Set(1)
	asks := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "ask_answers_total",
		Help: "Asks of the proxy by what its client got once each ended: allow (a person approved it), or deny with ConfirmationDeclined, or with ConfirmationUnavailable (the client could not be asked: the ask was held for a person out of band, or could not be held).",
	}, []string{"outcome", "code"})
	for i, o := range outcomes {
		if o == decision.Ask {
			continue // an ask that ended is an allow or a deny
		}
		m.askAnswers[i] = make([]prometheus.Counter, len(codes))
		for j, c := range codes {
			m.askAnswers[i][j] = asks.WithLabelValues(string(o), c)
		}
	}
	bi := buildinfo.Read()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help:        "The running build, as labels: the module version, the version-control revision it was built from and the Go toolchain (mcpx-policy version); the value is always 1.",
		ConstLabels: prometheus.Labels{"version": bi.Version, "revision": bi.Revision, "goversion": bi.Go},
	})
	build.Set(1)
	m.findings = newFindings()
	m.reg.MustRegister(dec, m.latency, m.evalErrs, rel, m.lastOK, m.lastOKAt, up, m.inflight, m.logErrs, m.logWritable, build, asks, m.findings)
	if opts.Revision != nil {
		m.reg.MustRegister(revisionCollector{desc: prometheus.NewDesc(Namespace+"_config_revision_info",
			"The config revision in use (a hex SHA-256 of the compiled policy), as a label; the value is always 1.",
			[]string{"revision"}, nil), revision: opts.Revision})
	}
	if opts.Pending != nil {
		m.reg.MustRegister(ledgerCollector{
			pending: prometheus.NewDesc(Namespace+"_ledger_pending_entries",
				"Unknown-outcome entries per server: while one is pending, writes to that server are denied.",
				[]string{"server"}, nil),
			readable: prometheus.NewDesc(Namespace+"_ledger_readable",
				"1 when the unknown-outcome ledger reads, 0 when it does not (every write is then denied with LedgerUnreadable).",
				nil, nil),
			read: opts.Pending,
		})
	}
	if opts.Approvals != nil {
		m.reg.MustRegister(approvalsCollector{desc: prometheus.NewDesc(Namespace+"_approvals_pending",
			"Approval requests waiting for a person's answer.", nil, nil), read: opts.Approvals})
	}
	if opts.Process {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Registry is the registry of m's metrics, for tests and for a daemon that
// adds its own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves m's registry in the Prometheus exposition format (text,
// or OpenMetrics 1.0 when the scraper asks for it: Accept:
// application/openmetrics-text). The Go collector's gauge
// go_memstats_alloc_bytes is left out: in OpenMetrics its name is the
// family of the counter go_memstats_alloc_bytes_total, and a parser
// rejects the two (a known clash of the client library); the same value
// is go_memstats_heap_alloc_bytes.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(without{m.reg, clashing}, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// clashing is the family Handler leaves out.
const clashing = "go_memstats_alloc_bytes"

// without is a Gatherer that leaves one family out.
type without struct {
	g    prometheus.Gatherer
	name string
}

func (w without) Gather() ([]*dto.MetricFamily, error) {
	fams, err := w.g.Gather()
	out := fams[:0]
	for _, f := range fams {
		if f.GetName() != w.name {
			out = append(out, f)
		}
	}
	return out, err
}

// Decided counts one decision: the policy's outcome, its deciding code
// ("" for an allow), whether shadow mode let the call go ahead despite
// that outcome, how long it took and whether its evaluation failed.
func (m *Metrics) Decided(outcome decision.Outcome, code decision.Code, shadow bool, elapsed time.Duration, err error) {
	col := 0
	if code != "" {
		var ok bool
		if col, ok = codeIndex[code]; !ok {
			col = len(codeIndex) + 1
		}
	}
	s := 0
	if shadow && outcome != decision.Allow {
		s = 1
	}
	m.series(s, outcome, col).Inc()
	m.latency.Observe(elapsed.Seconds())
	if err != nil {
		m.evalErrs.Inc()
	}
}

// AskAnswered counts one ask by what the client got when it ended: an
// allow ("" code), or a deny and its deciding code. The policy's ask
// itself is counted by Decided.
func (m *Metrics) AskAnswered(outcome decision.Outcome, code decision.Code) {
	row := m.askAnswers[outcome.Severity()]
	if row == nil {
		return
	}
	col := 0
	if outcome != decision.Allow && code != "" {
		var ok bool
		if col, ok = codeIndex[code]; !ok {
			col = len(codeIndex) + 1
		}
	}
	row[col].Inc()
}

// series is the decisions counter of shadow index s, outcome and code
// column col, created on first use when New did not (shadow mode's
// series, a code outside the closed set).
func (m *Metrics) series(s int, outcome decision.Outcome, col int) prometheus.Counter {
	slot := &m.decisions[s][outcome.Severity()][col]
	if c, ok := slot.Load().(prometheus.Counter); ok {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := slot.Load().(prometheus.Counter); ok {
		return c
	}
	c := m.decisionVec.WithLabelValues(string(outcome), m.codes[col], []string{"false", "true"}[s])
	slot.Store(c)
	return c
}

// possible reports whether the engine can decide outcome with code as its
// deciding reason: an allow has none; an ask comes from the codes that ask
// (and from a changed tool definition under pinTools: ask); a deny from
// the codes that deny, but for the two a surface adds after an ask
// (ConfirmationUnavailable, ConfirmationDeclined), which are never the
// engine's. New creates the series of these pairs (not in shadow mode) so
// that they read 0 before the first such decision, and no other: a series
// such as outcome="allow", code="ArgumentRuleViolation" can never count.
func possible(outcome decision.Outcome, code decision.Code) bool {
	if code == NoCode {
		return outcome == decision.Allow
	}
	if !code.Known() || code == decision.ConfirmationUnavailable || code == decision.ConfirmationDeclined {
		return false
	}
	switch outcome {
	case decision.Ask:
		return code.Info().Outcome == decision.Ask || code == decision.ToolDefinitionChanged
	case decision.Deny:
		return code.Info().Outcome == decision.Deny
	}
	return false
}

// Reloaded counts one config reload; err nil means the new policy is in
// use.
func (m *Metrics) Reloaded(err error) {
	if err != nil {
		m.reloads[1].Inc()
		m.lastOK.Set(0)
		return
	}
	m.reloads[0].Inc()
	m.lastOK.Set(1)
	m.lastOKAt.SetToCurrentTime()
}

// DecisionLogged counts one decision log line: err nil when it was
// written.
func (m *Metrics) DecisionLogged(err error) {
	if err != nil {
		m.logErrs.Inc()
		m.logWritable.Set(0)
		return
	}
	m.logWritable.Set(1)
}

// Upstream results, for UpstreamDone.
const (
	UpstreamResult = iota // the server answered with a result
	UpstreamError         // the server answered with a JSON-RPC error
	UpstreamLost          // no answer came
)

// UpstreamStarted counts a tools/call sent to the MCP server.
func (m *Metrics) UpstreamStarted() { m.inflight.Inc() }

// UpstreamDone ends a call UpstreamStarted counted: result is
// UpstreamResult, UpstreamError or UpstreamLost.
func (m *Metrics) UpstreamDone(result int, elapsed time.Duration) {
	m.inflight.Dec()
	m.upstream[result].Observe(elapsed.Seconds())
}

type revisionCollector struct {
	desc     *prometheus.Desc
	revision func() string
}

func (c revisionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c revisionCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, c.revision())
}

type ledgerCollector struct {
	pending, readable *prometheus.Desc
	read              func() (map[string]int, error)
}

func (c ledgerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.readable
}

// Collect reads the ledger once per scrape. Servers are sorted; past
// MaxServers the rest are summed under OtherServer.
func (c ledgerCollector) Collect(ch chan<- prometheus.Metric) {
	counts, err := c.read()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.readable, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.readable, prometheus.GaugeValue, 1)
	servers := make([]string, 0, len(counts))
	for s, n := range counts {
		if n > 0 {
			servers = append(servers, s)
		}
	}
	sort.Strings(servers)
	other := 0
	for i, s := range servers {
		if i >= MaxServers-1 && len(servers) > MaxServers {
			other += counts[s]
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(counts[s]), s)
	}
	if other > 0 {
		ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(other), OtherServer)
	}
}

type approvalsCollector struct {
	desc *prometheus.Desc
	read func() (int, error)
}

func (c approvalsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c approvalsCollector) Collect(ch chan<- prometheus.Metric) {
	if n, err := c.read(); err == nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
	}
}
