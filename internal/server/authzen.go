package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

// The OpenID AuthZEN Authorization API 1.0 access evaluation endpoints
// (docs/service.md#authzen): a gateway that speaks the standard asks
// "may this subject call this tool with these arguments?" and gets true
// only for an allow.
const (
	EvaluationPath  = "/access/v1/evaluation"
	EvaluationsPath = "/access/v1/evaluations"
)

// The vocabulary of the mapping.
const (
	// AuthZENAction is the only action name decided: an MCP tools/call.
	AuthZENAction = "tools/call"
	// AuthZENResourceType is the only resource type decided: an MCP tool,
	// its id "<server>/<tool>".
	AuthZENResourceType = "mcp_tool"
	// MaxEvaluations caps the evaluations of one batch.
	MaxEvaluations = 100
)

// The evaluations semantics of a batch (options.evaluations_semantic).
const (
	ExecuteAll          = "execute_all"
	DenyOnFirstDeny     = "deny_on_first_deny"
	PermitOnFirstPermit = "permit_on_first_permit"
)

// AZSubject is an AuthZEN Subject; it becomes the call's principal: id,
// and properties.groups (a list of strings) as its groups. Other
// properties are accepted and not used.
type AZSubject struct {
	Type       string         `json:"type"`
	ID         string         `json:"id"`
	Properties map[string]any `json:"properties,omitempty"`
}

// AZAction is an AuthZEN Action; its name must be AuthZENAction.
type AZAction struct {
	Name       string         `json:"name"`
	Properties map[string]any `json:"properties,omitempty"`
}

// AZResource is an AuthZEN Resource: type AuthZENResourceType, id
// "<server>/<tool>" (split at the first "/"), and optionally the tool's
// definition in properties (AZToolProperties); without properties the tool
// comes from serve's --catalog.
type AZResource struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Properties json.RawMessage `json:"properties,omitempty"`
}

// AZToolProperties are the resource properties that carry a tool's
// definition, as the server's tools/list gave it. title, description and
// outputSchema are accepted and not used; any other key is refused.
type AZToolProperties struct {
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
}

// AZContext is an AuthZEN Context; "arguments", an object, holds the
// call's arguments (absent: none). Other keys are accepted and not used.
type AZContext map[string]any

// EvaluationRequest is the body of POST /access/v1/evaluation: the 4-tuple.
type EvaluationRequest struct {
	Subject  *AZSubject  `json:"subject"`
	Action   *AZAction   `json:"action"`
	Resource *AZResource `json:"resource"`
	Context  AZContext   `json:"context,omitempty"`
}

// EvaluationsRequest is the body of POST /access/v1/evaluations: a 4-tuple
// of defaults, the evaluations, and options.
type EvaluationsRequest struct {
	Subject     *AZSubject          `json:"subject,omitempty"`
	Action      *AZAction           `json:"action,omitempty"`
	Resource    *AZResource         `json:"resource,omitempty"`
	Context     AZContext           `json:"context,omitempty"`
	Evaluations []EvaluationRequest `json:"evaluations"`
	Options     map[string]any      `json:"options,omitempty"`
}

// EvaluationResponse is one AuthZEN decision: true only for an allow.
type EvaluationResponse struct {
	Decision bool               `json:"decision"`
	Context  *AZDecisionContext `json:"context,omitempty"`
}

// AZDecisionContext says why a decision is false: the outcome (deny or
// ask), the deciding reason code, and every reason's message, redacted.
// Error is set for an evaluation of a batch that could not be read. For a
// true decision that shadow mode let through it is the allow with Shadow,
// the policy's own outcome, code and messages.
type AZDecisionContext struct {
	Outcome decision.Outcome   `json:"outcome"`
	Code    decision.Code      `json:"code"`
	Reasons []string           `json:"reasons"`
	Error   *AZError           `json:"error,omitempty"`
	Shadow  *AZDecisionContext `json:"shadow,omitempty"`
}

// AZError is the error of one evaluation of a batch.
type AZError struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// EvaluationsResponse is the body answering POST /access/v1/evaluations
// with an evaluations array: one answer per evaluation, in order (fewer
// when a short-circuit semantic stopped early).
type EvaluationsResponse struct {
	Evaluations []EvaluationResponse `json:"evaluations"`
}

// requestIDHeader is echoed back when the caller sends it.
const requestIDHeader = "X-Request-ID"

func (h *Handler) evaluation(w http.ResponseWriter, r *http.Request) {
	echoRequestID(w, r)
	body, status, err := readBody(r)
	if err != nil {
		writeError(w, status, string(decision.InvalidInput), err.Error())
		return
	}
	var req EvaluationRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, string(decision.InvalidInput), "not an access evaluation request: "+err.Error())
		return
	}
	if err := req.complete(); err != nil {
		writeError(w, http.StatusBadRequest, string(decision.InvalidInput), "not an access evaluation request: "+err.Error())
		return
	}
	resp, err := h.evaluate(r, req)
	if err != nil {
		logUnwritable(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (h *Handler) evaluations(w http.ResponseWriter, r *http.Request) {
	echoRequestID(w, r)
	body, status, err := readBody(r)
	if err != nil {
		writeError(w, status, string(decision.InvalidInput), err.Error())
		return
	}
	var req EvaluationsRequest
	if err := decodeStrict(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, string(decision.InvalidInput), "not an access evaluations request: "+err.Error())
		return
	}
	semantic := ExecuteAll
	if v, ok := req.Options["evaluations_semantic"]; ok {
		s, _ := v.(string)
		switch s {
		case ExecuteAll, DenyOnFirstDeny, PermitOnFirstPermit:
			semantic = s
		default:
			writeError(w, http.StatusBadRequest, string(decision.InvalidInput),
				fmt.Sprintf("options.evaluations_semantic %v is not one of %s, %s, %s", jsonText(v), ExecuteAll, DenyOnFirstDeny, PermitOnFirstPermit))
			return
		}
	}
	defaults := EvaluationRequest{Subject: req.Subject, Action: req.Action, Resource: req.Resource, Context: req.Context}
	if req.Evaluations == nil {
		// No evaluations array: the request is a single evaluation.
		if err := defaults.complete(); err != nil {
			writeError(w, http.StatusBadRequest, string(decision.InvalidInput), "not an access evaluation request: "+err.Error())
			return
		}
		resp, err := h.evaluate(r, defaults)
		if err != nil {
			logUnwritable(w, err)
			return
		}
		writeJSON(w, http.StatusOK, resp)
		return
	}
	if len(req.Evaluations) > MaxEvaluations {
		writeError(w, http.StatusBadRequest, string(decision.InvalidInput),
			fmt.Sprintf("%d evaluations in one request; at most %d", len(req.Evaluations), MaxEvaluations))
		return
	}
	out := EvaluationsResponse{Evaluations: make([]EvaluationResponse, 0, len(req.Evaluations))}
	for i, ev := range req.Evaluations {
		ev = ev.withDefaults(defaults)
		var resp EvaluationResponse
		if err := ev.complete(); err != nil {
			// Not logged: there is no call to log, only a request to fix.
			ans := h.eng.Answer(r.Context(), nil, mcpxpolicy.AnswerOptions{Unread: fmt.Errorf("evaluations[%d]: %v", i, err)})
			resp = answer(ans.Decision)
			resp.Context.Error = &AZError{Status: http.StatusBadRequest, Message: ans.Decision.Decision().Reasons[0].Message}
		} else {
			var err error
			if resp, err = h.evaluate(r, ev); err != nil {
				// no answer of the batch goes out unlogged
				logUnwritable(w, err)
				return
			}
		}
		out.Evaluations = append(out.Evaluations, resp)
		if (semantic == DenyOnFirstDeny && !resp.Decision) || (semantic == PermitOnFirstPermit && resp.Decision) {
			break
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// evaluate decides one complete evaluation: it maps the 4-tuple to a call
// document (azDocument) and has the Engine answer it as POST /v1/decide
// does: for the HTTP caller (its sessions, its budgets per session), and
// an evaluation answered true is taken as the call running — the PEP
// asked because it is about to act —, so a write that write budgets or
// loop breakers count is counted then, and one found spent meanwhile is
// the deny (docs/service.md#authzen). An error is a decision the decision
// log could not take (a *LogUnwritableError): it is not answered.
func (h *Handler) evaluate(r *http.Request, ev EvaluationRequest) (EvaluationResponse, error) {
	start := time.Now()
	doc, err := h.azDocument(ev)
	// Bounded by the engine's DecideTimeout (see decide).
	ans := h.eng.Answer(r.Context(), doc, mcpxpolicy.AnswerOptions{Surface: mcpxpolicy.SurfaceDaemon, Dispatch: true, Caller: callerOf(r),
		ToolHint: "start serve with --catalog, or send the tool's annotations and inputSchema in resource.properties", Unread: err})
	if ans.Err != nil && ans.Unread == nil {
		h.opts.Logger.Warn("decision failed (denied)", "server", ans.Call.Server, "tool", ans.Call.Tool.Name, "err", ans.Err)
	}
	if err := h.log.write(r, ans.Revision, ans.Call, ans.Decision, time.Since(start)); err != nil {
		return EvaluationResponse{}, err
	}
	if h.opts.OnDecision != nil && ans.Unread == nil {
		// recorded as POST /v1/decide records, so that a replay counts
		// the writes this route dispatched too
		h.opts.OnDecision(ans.Call, ans.Decision, ans.Err == nil && ans.Decision.Decision().Outcome == decision.Allow, false)
	}
	return answer(ans.Decision), nil
}

// answer renders a decision as AuthZEN does: true for an allow; false with
// the outcome, code and redacted reason messages for a deny or an ask.
func answer(shown mcpxpolicy.Redacted) EvaluationResponse {
	d := shown.Decision()
	if d.Relaxed() {
		return EvaluationResponse{Decision: true, Context: &AZDecisionContext{Outcome: decision.Allow, Reasons: []string{},
			Shadow: azContext(d.Enforced())}}
	}
	if d.Outcome == decision.Allow {
		return EvaluationResponse{Decision: true}
	}
	return EvaluationResponse{Decision: false, Context: azContext(d)}
}

// azContext is the context of a redacted deny or ask.
func azContext(d decision.Decision) *AZDecisionContext {
	c := &AZDecisionContext{Outcome: d.Outcome, Code: d.First().Code, Reasons: make([]string, 0, len(d.Reasons))}
	for _, rs := range d.Reasons {
		c.Reasons = append(c.Reasons, rs.Message)
	}
	return c
}

// complete checks that the 4-tuple has what a decision needs.
func (ev EvaluationRequest) complete() error {
	var missing []string
	if ev.Subject == nil {
		missing = append(missing, "subject")
	}
	if ev.Action == nil {
		missing = append(missing, "action")
	}
	if ev.Resource == nil {
		missing = append(missing, "resource")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s missing (subject, action and resource are required)", strings.Join(missing, ", "))
	}
	if ev.Subject.Type == "" || ev.Subject.ID == "" {
		return errors.New(`subject needs "type" and "id"`)
	}
	if ev.Action.Name == "" {
		return errors.New(`action needs "name"`)
	}
	if ev.Resource.Type == "" || ev.Resource.ID == "" {
		return errors.New(`resource needs "type" and "id"`)
	}
	return nil
}

// withDefaults fills the members an evaluation of a batch leaves out from
// the request's top level; a member the evaluation has wins whole.
func (ev EvaluationRequest) withDefaults(d EvaluationRequest) EvaluationRequest {
	if ev.Subject == nil {
		ev.Subject = d.Subject
	}
	if ev.Action == nil {
		ev.Action = d.Action
	}
	if ev.Resource == nil {
		ev.Resource = d.Resource
	}
	if ev.Context == nil {
		ev.Context = d.Context
	}
	return ev
}

// azDocument maps a complete evaluation to the call document it asks
// about (Engine.Answer reads it): the tool by name, looked up in serve's
// catalog, or its definition from resource.properties. When the evaluation
// does not map, the error says why and the document holds the names that
// could be read, for the deny.
func (h *Handler) azDocument(ev EvaluationRequest) ([]byte, error) {
	doc := map[string]any{"surface": mcpxpolicy.SurfaceDaemon}
	fail := func(err error) ([]byte, error) { return mustJSON(doc), err }
	if ev.Resource.Type != AuthZENResourceType {
		return fail(fmt.Errorf("resource type %q is not decided here (want %q, id \"<server>/<tool>\")", ev.Resource.Type, AuthZENResourceType))
	}
	server, tool, ok := strings.Cut(ev.Resource.ID, "/")
	if !ok || server == "" || tool == "" {
		return fail(fmt.Errorf("resource id %q is not \"<server>/<tool>\"", ev.Resource.ID))
	}
	doc["server"], doc["tool"] = server, tool
	if ev.Action.Name != AuthZENAction {
		return fail(fmt.Errorf("action %q is not decided here (want %q)", ev.Action.Name, AuthZENAction))
	}
	p := &decision.Principal{ID: ev.Subject.ID}
	if g, ok := ev.Subject.Properties["groups"]; ok {
		list, ok := g.([]any)
		if !ok {
			return fail(fmt.Errorf("subject.properties.groups is %s, not a list of strings", jsonText(g)))
		}
		for _, x := range list {
			s, ok := x.(string)
			if !ok {
				return fail(fmt.Errorf("subject.properties.groups holds %s, not a string", jsonText(x)))
			}
			p.Groups = append(p.Groups, s)
		}
	}
	doc["principal"] = p
	args := map[string]any{}
	if a, ok := ev.Context["arguments"]; ok {
		if args, ok = a.(map[string]any); !ok {
			return fail(fmt.Errorf("context.arguments is %s, not an object", jsonText(a)))
		}
	}
	doc["args"] = args
	if len(ev.Resource.Properties) == 0 || string(ev.Resource.Properties) == "null" {
		return mustJSON(doc), nil // the tool by name, from serve's --catalog
	}
	var props AZToolProperties
	if err := decodeStrict(ev.Resource.Properties, &props); err != nil {
		return fail(fmt.Errorf("resource.properties: %v (it holds the tool's annotations and inputSchema)", err))
	}
	def := map[string]json.RawMessage{"name": mustJSON(tool)}
	if len(props.Annotations) > 0 {
		def["annotations"] = props.Annotations
	}
	if len(props.InputSchema) > 0 {
		def["inputSchema"] = props.InputSchema
	}
	if _, err := mcpxpolicy.ParseTool(mustJSON(def)); err != nil {
		return fail(fmt.Errorf("resource.properties is not an MCP tool's definition: %v", err))
	}
	doc["tool"] = def
	return mustJSON(doc), nil
}

// readBody reads a request body whole; the status goes with the error.
func readBody(r *http.Request) ([]byte, int, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the body is larger than %d bytes", mbe.Limit)
		}
		return nil, http.StatusBadRequest, err
	}
	return body, 0, nil
}

// decodeStrict decodes one JSON value into v with the project's strict
// decoder: valid JSON only (no duplicate keys, no trailing data), exact
// member names (no case variants), no member v does not declare, numbers
// kept exact.
func decodeStrict(b []byte, v any) error { return strictjson.UnmarshalKnown(b, v) }

func echoRequestID(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(requestIDHeader); id != "" {
		w.Header().Set(requestIDHeader, id)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only strings and raw JSON already parsed
	}
	return b
}

// jsonText names a JSON value's kind for an error message, quoting a
// short string; it never echoes a longer value, which could be a secret.
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) <= 40 {
			return fmt.Sprintf("%q", x)
		}
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
