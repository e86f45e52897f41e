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
	"github.com/mcpx/mcpx-policy/decision"
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
// redacted decision (mcpxpolicy.Redacted): a secret used as an argument
// key is not logged either.
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
	Surface    string              `json:"surface,omitempty"`
	Server     string              `json:"server"`
	Tool       LogTool             `json:"tool"`
	ArgsSHA256 string              `json:"args_sha256"`
	Mode       string              `json:"mode,omitempty"`
	Principal  *decision.Principal `json:"principal,omitempty"`
}

// LogTool is the logged tool: its name and annotations.
type LogTool struct {
	Name        string                `json:"name"`
	Annotations *decision.Annotations `json:"annotations,omitempty"`
}

// LogResult is the logged decision.
type LogResult struct {
	Outcome     decision.Outcome `json:"outcome"`
	Step        decision.Step    `json:"step"`
	Reasons     []LogReason      `json:"reasons"`
	Warnings    []LogReason      `json:"warnings"`
	Write       bool             `json:"write"`
	Destructive bool             `json:"destructive"`
	Call        decision.CallRef `json:"call"`
	// Shadow is the policy's own decision for a server in shadow mode
	// (what the result would be enforced), as the decision document's
	// "shadow" member; absent for a server that enforces.
	Shadow *LogShadow `json:"shadow,omitempty"`
}

// LogShadow is the logged shadow member: the outcome, step and reasons
// the policy decided, logged like the result's.
type LogShadow struct {
	Outcome decision.Outcome `json:"outcome"`
	Step    decision.Step    `json:"step"`
	Reasons []LogReason      `json:"reasons"`
}

// LogReason is a logged reason: code, step and the violations' places.
type LogReason struct {
	Code       decision.Code  `json:"code"`
	Step       decision.Step  `json:"step"`
	Violations []LogViolation `json:"violations,omitempty"`
}

// LogViolation is a logged violation, without the offending value.
type LogViolation struct {
	Path       string           `json:"path"`
	Constraint string           `json:"constraint"`
	Rule       decision.RuleRef `json:"rule"`
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
func (l *decisionLog) write(r *http.Request, rev string, call decision.Call, shown mcpxpolicy.Redacted, took time.Duration) {
	if l == nil {
		return
	}
	sum, err := decision.ArgsSHA256(call.Args)
	if err != nil {
		sum = ""
	}
	d := shown.Decision()
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
		RequestedBy: r.RemoteAddr,
		Timestamp:   l.now().UTC().Format(time.RFC3339Nano),
		Metrics:     map[string]int64{"timer_server_handler_ns": took.Nanoseconds()},
		Bundles:     map[string]map[string]any{"mcpx": {"revision": rev}},
	}
	if d.Shadow != nil {
		e.Result.Shadow = &LogShadow{Outcome: d.Shadow.Outcome, Step: d.Shadow.Step, Reasons: logReasons(d.Shadow.Reasons)}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.enc.Encode(e)
}

func logReasons(rs []decision.Reason) []LogReason {
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
