package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/metrics"
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

// decisionLog writes the decision log: one line per decision, written
// before the decision is answered. A line that cannot be written (a full
// disk, a pipe whose reader went away) is an error the handler answers
// with a 503 instead of the decision (docs/service.md#when-the-decision-log-fails):
// no decision goes out unlogged. The first failure is said on the
// operational log, and so is the first line written after failures; every
// failure counts in metrics, and readiness says the log is failing until
// a line is written again. Every decision tries again.
type decisionLog struct {
	mu      sync.Mutex
	w       io.Writer
	now     func() time.Time
	id      string
	logger  *slog.Logger
	metrics *metrics.Metrics
	// failing is the last write's error, nil when it was written (or none
	// was tried); lost counts the lines not written since it began.
	failing error
	lost    int
	// torn is set when a failed write wrote part of its line: the next
	// line starts on a line of its own.
	torn bool
}

func newDecisionLog(w io.Writer, now func() time.Time, logger *slog.Logger, m *metrics.Metrics) *decisionLog {
	return &decisionLog{w: w, now: now, id: newUUID(), logger: logger, metrics: m}
}

// LogUnwritableError is the error of a decision that could not be logged:
// the decision is not answered.
type LogUnwritableError struct{ Err error }

func (e *LogUnwritableError) Error() string {
	return fmt.Sprintf("the decision log cannot be written (%v): the decision was made but is not answered, since every decision is logged before it is; the service answers again once a line can be written", e.Err)
}

func (e *LogUnwritableError) Unwrap() error { return e.Err }

// write logs one decision; a nil log does nothing. An error is a
// *LogUnwritableError: the decision must not be answered.
func (l *decisionLog) write(r *http.Request, rev string, call decision.Call, shown mcpxpolicy.Redacted, took time.Duration) error {
	if l == nil {
		return nil
	}
	return l.log(r.RemoteAddr, rev, call, shown, took)
}

// DecisionLogger writes the decision log of a process that is not serve's
// handler — the proxy's --decision-log —: one LogEntry per line, as serve
// writes them, a line cut short by a full disk cut off again. Safe for
// concurrent use.
type DecisionLogger struct{ l *decisionLog }

// NewDecisionLogger returns a DecisionLogger writing to w; logger (nil:
// none) hears when the log cannot be written and when it can again.
func NewDecisionLogger(w io.Writer, logger *slog.Logger) *DecisionLogger {
	return &DecisionLogger{l: newDecisionLog(w, time.Now, logger, nil)}
}

// Log writes the line of one decision: requestedBy says who asked (the
// proxy names its server, "proxy:fs"), revision is the config revision the
// decision was made with, took how long it took (0 when not measured: the
// metrics are then left empty). An error is a *LogUnwritableError.
func (dl *DecisionLogger) Log(requestedBy, revision string, call decision.Call, shown mcpxpolicy.Redacted, took time.Duration) error {
	return dl.l.log(requestedBy, revision, call, shown, took)
}

// log writes the line of one decision (see write).
func (l *decisionLog) log(requestedBy, rev string, call decision.Call, shown mcpxpolicy.Redacted, took time.Duration) error {
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
	var line bytes.Buffer
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	encErr := enc.Encode(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	if encErr != nil {
		return l.wrote(&LogUnwritableError{Err: encErr})
	}
	b := line.Bytes()
	if l.torn {
		b = append([]byte{'\n'}, b...)
	}
	size := l.size()
	n, err := l.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 && !l.cut(size, n) {
			l.torn = true
		}
		return l.wrote(&LogUnwritableError{Err: err})
	}
	l.torn = false
	return l.wrote(nil)
}

// logFile is a decision log that is a regular file: a line cut short by
// a full disk is cut off again, so the file holds whole lines only.
type logFile interface {
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
}

// size is the log's size before a write when it is a regular file, else
// -1.
func (l *decisionLog) size() int64 {
	if f, ok := l.w.(logFile); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return st.Size()
		}
	}
	return -1
}

// cut truncates a regular file's log back to size, the size before a
// write that wrote n bytes of its line, when those n bytes are all that
// was added since (another writer's line is never cut); false when it
// cannot (a pipe).
func (l *decisionLog) cut(size int64, n int) bool {
	f, ok := l.w.(logFile)
	if !ok || size < 0 {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Size() == size+int64(n) && f.Truncate(size) == nil
}

// wrote records one write's result (l.mu held): the first
// failure and the first success after failures are said on the
// operational log; every write is counted in metrics.
func (l *decisionLog) wrote(err error) error {
	if l.metrics != nil {
		l.metrics.DecisionLogged(err)
	}
	switch {
	case err != nil && l.failing == nil:
		l.logger.Error("decision log: a line cannot be written; decisions are answered with 503 until one can", "err", err.(*LogUnwritableError).Err)
	case err == nil && l.failing != nil:
		l.logger.Info("decision log: written again; decisions are answered again", "lost", l.lost, "was", l.failing.(*LogUnwritableError).Err)
	}
	if err != nil {
		l.lost++
	} else {
		l.lost = 0
	}
	l.failing = err
	return err
}

// check is the decision log's readiness: nil while the last line was
// written, else why it was not.
func (l *decisionLog) check() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing != nil {
		return fmt.Errorf("the last decision log line could not be written (%v); %d decision(s) refused since", l.failing.(*LogUnwritableError).Err, l.lost)
	}
	return nil
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
