package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
)

// DecisionPath is the decision's path in the log, as a stock OPA serving the
// bundle logs it.
const DecisionPath = "mcpx/decision"

// LogEntry is one decision log line, in the shape of OPA's decision log
// events (decision_id, path, input, result, erased, timestamp, metrics,
// bundles). The arguments are never logged: input carries args_sha256
// instead of args, and result keeps codes, steps and violation paths but no
// message, value or details (those echo argument values); "erased" names
// what was removed, as OPA's masking does. The paths are those of the
// redacted decision (mcpxpolicy.Redact): a secret used as an argument key
// is not logged either.
type LogEntry struct {
	Labels      map[string]string         `json:"labels"`
	DecisionID  string                    `json:"decision_id"`
	Path        string                    `json:"path"`
	Input       LogInput                  `json:"input"`
	Result      LogResult                 `json:"result"`
	Erased      []string                  `json:"erased"`
	RequestedBy string                    `json:"requested_by,omitempty"`
	Timestamp   string                    `json:"timestamp"`
	Metrics     map[string]int64          `json:"metrics"`
	Bundles     map[string]map[string]any `json:"bundles,omitempty"`
}

// LogInput is the logged input: the call without its arguments.
type LogInput struct {
	Surface    string                `json:"surface,omitempty"`
	Server     string                `json:"server"`
	Tool       LogTool               `json:"tool"`
	ArgsSHA256 string                `json:"args_sha256"`
	Mode       string                `json:"mode,omitempty"`
	Principal  *mcpxpolicy.Principal `json:"principal,omitempty"`
}

// LogTool is the logged tool: its name and annotations.
type LogTool struct {
	Name        string                  `json:"name"`
	Annotations *mcpxpolicy.Annotations `json:"annotations,omitempty"`
}

// LogResult is the logged decision.
type LogResult struct {
	Outcome     mcpxpolicy.Outcome `json:"outcome"`
	Step        mcpxpolicy.Step    `json:"step"`
	Reasons     []LogReason        `json:"reasons"`
	Warnings    []LogReason        `json:"warnings"`
	Write       bool               `json:"write"`
	Destructive bool               `json:"destructive"`
	Call        mcpxpolicy.CallRef `json:"call"`
	// Shadow is the policy's own decision for a server in shadow mode
	// (what the result would be enforced), as the decision document's
	// "shadow" member; absent for a server that enforces.
	Shadow *LogShadow `json:"shadow,omitempty"`
}

// LogShadow is the logged shadow member: the outcome, step and reasons
// the policy decided, logged like the result's.
type LogShadow struct {
	Outcome mcpxpolicy.Outcome `json:"outcome"`
	Step    mcpxpolicy.Step    `json:"step"`
	Reasons []LogReason        `json:"reasons"`
}

// LogReason is a logged reason: code, step and the violations' places.
type LogReason struct {
	Code       mcpxpolicy.Code `json:"code"`
	Step       mcpxpolicy.Step `json:"step"`
	Violations []LogViolation  `json:"violations,omitempty"`
}

// LogViolation is a logged violation, without the offending value.
type LogViolation struct {
	Path       string             `json:"path"`
	Constraint string             `json:"constraint"`
	Rule       mcpxpolicy.RuleRef `json:"rule"`
}

var erased = []string{"/input/args", "/result/reasons/*/message", "/result/reasons/*/details", "/result/reasons/*/violations/*/value",
	"/result/shadow/reasons/*/message", "/result/shadow/reasons/*/details", "/result/shadow/reasons/*/violations/*/value"}

type decisionLog struct {
	mu  sync.Mutex
	enc *json.Encoder
	now func() time.Time
	id  string
}

func newDecisionLog(w io.Writer, now func() time.Time) *decisionLog {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &decisionLog{enc: enc, now: now, id: newUUID()}
}

// write logs one decision; a nil log does nothing.
func (l *decisionLog) write(r *http.Request, rev string, call mcpxpolicy.Call, d mcpxpolicy.Decision, took time.Duration) {
	if l == nil {
		return
	}
	l.log(r.RemoteAddr, rev, call, d, took)
}

// DecisionLogger writes the decision log of a process that is not serve's
// handler — the proxy's --decision-log —: one LogEntry per line, as serve
// writes them. Safe for concurrent use.
type DecisionLogger struct{ l *decisionLog }

// NewDecisionLogger returns a DecisionLogger writing to w.
func NewDecisionLogger(w io.Writer) *DecisionLogger {
	return &DecisionLogger{l: newDecisionLog(w, time.Now)}
}

// Log writes the line of one decision: requestedBy says who asked (the
// proxy names its server, "proxy:fs"), revision is the config revision the
// decision was made with, took how long it took (0 when not measured: the
// metrics are then left empty).
func (dl *DecisionLogger) Log(requestedBy, revision string, call mcpxpolicy.Call, d mcpxpolicy.Decision, took time.Duration) {
	dl.l.log(requestedBy, revision, call, d, took)
}

func (l *decisionLog) log(requestedBy, rev string, call mcpxpolicy.Call, d mcpxpolicy.Decision, took time.Duration) {
	sum, err := mcpxpolicy.ArgsSHA256(call.Args)
	if err != nil {
		sum = ""
	}
	d = mcpxpolicy.Redact(call, d)
	e := LogEntry{
		Labels:     map[string]string{"id": l.id, "app": "mcpx-policy"},
		DecisionID: newUUID(),
		Path:       DecisionPath,
		Input: LogInput{
			Surface: call.Surface, Server: call.Server, Mode: call.Mode, Principal: call.Principal,
			Tool:       LogTool{Name: call.Tool.Name, Annotations: call.Tool.Annotations},
			ArgsSHA256: sum,
		},
		Result: LogResult{
			Outcome: d.Outcome, Step: d.Step, Write: d.Write, Destructive: d.Destructive, Call: d.Call,
			Reasons: logReasons(d.Reasons), Warnings: logReasons(d.Warnings),
		},
		Erased:      erased,
		RequestedBy: requestedBy,
		Timestamp:   l.now().UTC().Format(time.RFC3339Nano),
		Metrics:     map[string]int64{},
		Bundles:     map[string]map[string]any{"mcpx": {"revision": rev}},
	}
	if took > 0 {
		e.Metrics["timer_server_handler_ns"] = took.Nanoseconds()
	}
	if d.Shadow != nil {
		e.Result.Shadow = &LogShadow{Outcome: d.Shadow.Outcome, Step: d.Shadow.Step, Reasons: logReasons(d.Shadow.Reasons)}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.enc.Encode(e)
}

func logReasons(rs []mcpxpolicy.Reason) []LogReason {
	out := make([]LogReason, 0, len(rs))
	for _, r := range rs {
		lr := LogReason{Code: r.Code, Step: r.Step}
		for _, v := range r.Violations {
			lr.Violations = append(lr.Violations, LogViolation{Path: v.Path, Constraint: v.Constraint, Rule: v.Rule})
		}
		out = append(out, lr)
	}
	return out
}

// newUUID is a random (version 4) UUID, as OPA's decision ids are.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
