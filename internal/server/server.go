// Package server is the HTTP decision service behind `mcpx-policy serve`:
// POST /v1/decide, GET /v1/writes, POST /v1/writes/clear, the approval
// routes under /v1/approvals, GET /v1/pins and POST /v1/pins/accept, the
// AuthZEN access evaluation API, and the
// probes GET /healthz, GET /readyz and GET /metrics over one
// *mcpxpolicy.Engine. It composes nothing of a decision itself: it reads
// the bytes, calls the Engine (Answer for a call document), and writes
// the answer.
package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/loopback"
	"github.com/mcpx/mcpx-policy/internal/metrics"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

// Defaults for Options' zero values.
const (
	DefaultMaxBody     = 1 << 20 // bytes of a request body
	DefaultMaxInFlight = 64      // requests being served at once
)

// Options configure a Handler.
type Options struct {
	// Token is the bearer token POST /v1/writes/clear and POST
	// /v1/approvals/{id} need. Empty disables clearing and answering asks
	// over HTTP (403).
	Token string
	// DecisionLog receives one JSON line per decision (LogEntry); nil logs
	// nothing. Writes are serialized.
	DecisionLog io.Writer
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
	// MaxBody caps a request body; 0 means DefaultMaxBody. A larger body is
	// a 413.
	MaxBody int64
	// MaxInFlight caps the requests being served at once (the probes
	// aside), so that their bodies hold at most MaxInFlight × MaxBody
	// bytes; 0 means DefaultMaxInFlight. A request past it is a 503.
	MaxInFlight int
	// Now is the clock of the decision log; nil means time.Now.
	Now func() time.Time
	// Metrics, when set, is served on GET /metrics (health.go); the
	// Engine reports into it through mcpxpolicy.Options.Observer.
	Metrics *metrics.Metrics
	// OnDecision, when set, is given every call POST /v1/decide and the
	// AuthZEN evaluations decided, its decision, redacted (serve
	// --record), whether it was dispatched (answered allowed: its caller
	// runs it) and whether it was approved (decided with a person's
	// approval, used: the allow shows it). A call whose approval could not
	// be used is not given: its ask was, when first asked.
	OnDecision func(call decision.Call, shown mcpxpolicy.Redacted, dispatched, approved bool)
	// ApprovalsPage, when set, is served at /approvals and under it (serve
	// --approvals-page, internal/approvalpage): a page of HTML forms,
	// which checks its own requests (a session, a form token, the same
	// origin) instead of the API's JSON rules.
	ApprovalsPage http.Handler
}

// Handler serves the decision API. It is safe for concurrent use.
type Handler struct {
	eng   *mcpxpolicy.Engine
	opts  Options
	token [sha256.Size]byte
	log   *decisionLog
	mux   *http.ServeMux
	slots chan struct{} // one per request being served
}

// New returns the handler of the decision API over eng.
func New(eng *mcpxpolicy.Engine, opts Options) *Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{eng: eng, opts: opts, token: sha256.Sum256([]byte(opts.Token)), slots: make(chan struct{}, opts.MaxInFlight)}
	if opts.DecisionLog != nil {
		h.log = newDecisionLog(opts.DecisionLog, opts.Now, opts.Logger, opts.Metrics)
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("/v1/decide", only(http.MethodPost, h.decide))
	h.mux.HandleFunc("/v1/writes", only(http.MethodGet, h.writes))
	h.mux.HandleFunc("/v1/writes/clear", only(http.MethodPost, h.clear))
	h.mux.HandleFunc(EvaluationPath, only(http.MethodPost, h.evaluation))
	h.mux.HandleFunc(EvaluationsPath, only(http.MethodPost, h.evaluations))
	h.approvalRoutes()
	h.pinRoutes()
	addProbes(h.mux, eng, opts.Metrics, readiness{"decision_log", h.log.check})
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// DNS rebinding: a request that reached a loopback listener must name a
	// loopback host.
	if loopback.Rebound(r) {
		writeError(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("Host %q is not a loopback name", r.Host))
		return
	}
	if h.opts.ApprovalsPage != nil && (r.URL.Path == approvalsPage || strings.HasPrefix(r.URL.Path, approvalsPage+"/")) {
		h.opts.ApprovalsPage.ServeHTTP(w, r)
		return
	}
	// A page in a browser may not use the service: a request from another
	// origin is refused whatever its method (a form or a fetch() with
	// text/plain needs no CORS preflight), as the proxy's --listen does.
	if err := crossSite(r); err != nil {
		writeError(w, http.StatusForbidden, "Forbidden", err.Error())
		return
	}
	if r.Method == http.MethodPost {
		if err := jsonBody(r); err != nil {
			writeError(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", err.Error())
			return
		}
	}
	if !probe(r) {
		select {
		case h.slots <- struct{}{}:
			defer func() { <-h.slots }()
		default:
			// Connection: close, so the body is not waited for.
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusServiceUnavailable, "Busy", fmt.Sprintf("%d requests are being served, the most at once; try again shortly", cap(h.slots)))
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBody)
	h.mux.ServeHTTP(w, r)
}

// probe reports whether r is a probe (GET /healthz, /readyz, /metrics),
// which is always answered.
func probe(r *http.Request) bool {
	return r.Method == http.MethodGet && (r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/metrics")
}

var crossOrigin = http.NewCrossOriginProtection()

// approvalsPage is where Options.ApprovalsPage is served.
const approvalsPage = "/approvals"

// crossSite refuses a browser's request from another origin: an Origin
// header whose host is not the one the request was sent to (the service's
// own), or a Sec-Fetch-Site that says cross-site or same-site. Requests
// from programs (no Origin, no Sec-Fetch-Site) pass. GET is refused too: a
// foreign page has no business reading the ledger's entries.
func crossSite(r *http.Request) error {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || u.Host != r.Host {
			return fmt.Errorf("cross-origin request refused: Origin %q is not this service (%s)", origin, r.Host)
		}
	}
	if err := crossOrigin.Check(r); err != nil {
		return fmt.Errorf("cross-origin request refused: %v", err)
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("cross-origin request refused: Sec-Fetch-Site %q", site)
	}
	return nil
}

// jsonBody requires a POST body to be declared JSON: Content-Type
// application/json, parameters (charset) allowed. A form or text/plain
// body is what a browser sends cross-site without a preflight.
func jsonBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		got := "no Content-Type"
		if ct != "" {
			got = fmt.Sprintf("Content-Type %q", ct)
		}
		return fmt.Errorf("a POST body must be JSON: send Content-Type: application/json (got %s)", got)
	}
	return nil
}

// only restricts a route to one method; others get 405 with Allow.
func only(method string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			w.Header().Set("Allow", method)
			writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("%s takes %s only", r.URL.Path, method))
			return
		}
		next(w, r)
	}
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(r.Body)
	// The engine bounds the decision by its own DecideTimeout (serve's
	// --decide-timeout) and names that limit in a stopped decision's
	// message; a deadline set here would be named by what was left of it.
	ans := h.eng.Answer(r.Context(), body, mcpxpolicy.AnswerOptions{DefaultSurface: mcpxpolicy.SurfaceDaemon, OutOfBand: true, Dispatch: true, Caller: callerOf(r),
		Name: "call document", ToolHint: "start serve with --catalog, or send the whole MCP Tool object", Unread: err})
	if err := h.log.write(r, ans.Revision, ans.Call, ans.Decision, time.Since(start)); err != nil {
		logUnwritable(w, err)
		return
	}
	status := http.StatusOK
	switch {
	case ans.Unread != nil:
		status = http.StatusBadRequest
		var mbe *http.MaxBytesError
		if errors.As(ans.Unread, &mbe) {
			status = http.StatusRequestEntityTooLarge
		}
	default:
		h.logAnswer(ans)
		allowed := ans.Err == nil && ans.Decision.Decision().Outcome == decision.Allow
		if h.opts.OnDecision != nil && (ans.Approval == "" || allowed) {
			h.opts.OnDecision(ans.Call, ans.Decision, allowed, ans.Approval != "")
		}
	}
	// The answer carries the decision redacted, like every rendering and
	// the log: the raw one stays in the process.
	writeJSON(w, status, ans)
}

// LogUnavailable is the code of the 503 a decision gets when its decision
// log line cannot be written: the decision was made and is not answered.
const LogUnavailable = "DecisionLogUnavailable"

// logUnwritable answers a decision that could not be logged: 503, with
// Retry-After (the next decision tries the log again).
func logUnwritable(w http.ResponseWriter, err error) {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, LogUnavailable, err.Error())
}

// logAnswer logs what an answer says beside its decision: a failure of
// the gate, an approval used or refused, an ask that could not be put on
// hold.
func (h *Handler) logAnswer(ans mcpxpolicy.Answer) {
	call, d := ans.Call, ans.Decision.Decision()
	if ans.Err != nil {
		h.opts.Logger.Warn("decision failed (denied)", "server", call.Server, "tool", call.Tool.Name, "err", ans.Err)
	}
	switch {
	case ans.Refused != nil:
		h.opts.Logger.Info("approval refused", "id", ans.Approval, "server", call.Server, "tool", call.Tool.Name, "err", ans.Refused)
	case ans.Approval != "" && ans.Err == nil && d.Outcome == decision.Allow:
		h.opts.Logger.Info("approval used", "id", ans.Approval, "server", call.Server, "tool", call.Tool.Name, "sha256", d.Call.SHA256)
	}
	if ans.HoldErr != nil {
		h.opts.Logger.Warn("no approval request for an ask", "server", call.Server, "tool", call.Tool.Name, "err", ans.HoldErr)
	}
	if ans.Held != nil {
		h.opts.Logger.Info("ask held for a person", "id", ans.Held.ID, "server", call.Server, "tool", call.Tool.Name, "sha256", ans.Held.SHA256)
	}
}

// WritesResponse is the body of GET /v1/writes: the entries, and for each
// server that has some the token of those listed ("seen"), which POST
// /v1/writes/clear takes to clear exactly them.
type WritesResponse struct {
	Entries []decision.UnknownWrite `json:"entries"`
	Seen    map[string]string       `json:"seen"`
}

// ChangedResponse is the body of a 409 from POST /v1/writes/clear with
// "seen": the server's entries are not the ones listed, and nothing was
// cleared; the entries there are now and their token.
type ChangedResponse struct {
	Error   string                  `json:"error"`
	Code    string                  `json:"code"`
	Entries []decision.UnknownWrite `json:"entries"`
	Seen    string                  `json:"seen"`
}

// ClearResponse is the body of POST /v1/writes/clear: the entries cleared
// ([] when the server had none).
type ClearResponse struct {
	Cleared []decision.UnknownWrite `json:"cleared"`
}

func (h *Handler) writes(w http.ResponseWriter, r *http.Request) {
	st, err := h.eng.Writes().List()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, string(decision.LedgerUnreadable), err.Error())
		return
	}
	es := st.Entries
	if es == nil {
		es = []decision.UnknownWrite{}
	}
	writeJSON(w, http.StatusOK, WritesResponse{Entries: es, Seen: st.Seen})
}

// operatorRequest admits an operator's POST to route and reads its JSON
// body into v. Operator routes change state (clear a write, accept a pin,
// answer an ask), so each needs serve's token: without one configured the
// route answers 403 with code disabled and message why; without the right
// bearer, 401. The body is read strictly (strictjson.UnmarshalKnown): a
// case variant ({"server":"fs","SERVER":"fs2"}), a duplicate or an
// unknown key would name one thing here and another elsewhere, so it is a
// 400 InvalidInput saying the body wanted shape (413 past the size limit).
// It answers every refusal itself and then returns false.
func (h *Handler) operatorRequest(w http.ResponseWriter, r *http.Request, disabled, why, route, shape string, v any) bool {
	if h.opts.Token == "" {
		writeError(w, http.StatusForbidden, disabled, why)
		return false
	}
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpx-policy"`)
		writeError(w, http.StatusUnauthorized, "Unauthorized", "POST "+route+" needs Authorization: Bearer <token from --token-file>")
		return false
	}
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = strictjson.UnmarshalKnown(body, v)
	}
	if err != nil {
		status := http.StatusBadRequest
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, string(decision.InvalidInput), fmt.Sprintf("want %s: %v", shape, err))
		return false
	}
	return true
}

// ClearRequest is the body of POST /v1/writes/clear: the server, and the
// one entry (id) or the entries a listing showed (seen, GET /v1/writes'
// token); with neither, every entry the server has when the clear runs.
type ClearRequest struct {
	Server string `json:"server"`
	ID     string `json:"id,omitempty"`
	Seen   string `json:"seen,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func (h *Handler) clear(w http.ResponseWriter, r *http.Request) {
	var req ClearRequest
	if !h.operatorRequest(w, r, "ClearDisabled", "clearing over HTTP is disabled: start serve with --token-file",
		"/v1/writes/clear", `{"server", "id"?, "seen"?, "reason"?}`, &req) {
		return
	}
	if req.Server == "" {
		writeError(w, http.StatusBadRequest, string(decision.InvalidInput), `"server" is required`)
		return
	}
	if req.ID != "" && req.Seen != "" {
		writeError(w, http.StatusBadRequest, string(decision.InvalidInput), `give "id" or "seen", not both`)
		return
	}
	if req.Reason == "" {
		req.Reason = "cleared over HTTP"
	}
	var cleared []decision.UnknownWrite
	var err error
	if req.Seen != "" {
		cleared, err = h.eng.Writes().ClearSeen(req.Server, req.Seen, req.Reason)
	} else {
		cleared, err = h.eng.Writes().Clear(req.Server, req.ID, req.Reason)
	}
	switch {
	case errors.Is(err, mcpxpolicy.ErrMismatch):
		resp := ChangedResponse{Error: err.Error(), Code: "WritesChanged", Entries: []decision.UnknownWrite{}}
		if st, lerr := h.eng.Writes().List(); lerr == nil {
			for _, e := range st.Entries {
				if e.Server == req.Server {
					resp.Entries = append(resp.Entries, e)
				}
			}
			resp.Seen = st.Seen[req.Server]
		}
		writeJSON(w, http.StatusConflict, resp)
		return
	case errors.Is(err, mcpxpolicy.ErrNotFound):
		writeError(w, http.StatusNotFound, "NotFound", err.Error())
		return
	case errors.Is(err, mcpxpolicy.ErrUnreadable):
		writeError(w, http.StatusServiceUnavailable, string(decision.LedgerUnreadable), err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, "ClearFailed", err.Error())
		return
	}
	h.opts.Logger.Info("writes cleared over HTTP", "server", req.Server, "id", req.ID, "count", len(cleared), "reason", req.Reason, "remote", r.RemoteAddr)
	if cleared == nil {
		cleared = []decision.UnknownWrite{}
	}
	writeJSON(w, http.StatusOK, ClearResponse{Cleared: cleared})
}

// authorized compares the bearer token in constant time (over the SHA-256
// of both, so the length does not leak either).
func (h *Handler) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(got[:], h.token[:]) == 1
}

// ErrorBody is the body of every non-decision error answer.
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, ErrorBody{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		fmt.Fprintf(&buf, `{"error":"encoding the answer failed","code":"PolicyError"}`+"\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}
