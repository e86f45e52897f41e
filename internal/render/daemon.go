package render

import (
	"net/http"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
)

// DaemonBody is the JSON body of a daemon/HTTP refusal. Error, Code, Server,
// Tool and Violations are always present (Violations is [] when there are
// none); a HiddenTool body has nothing else, so a hidden tool leaks no
// schema and no rule.
type DaemonBody struct {
	Error      string               `json:"error"`
	Code       decision.Code        `json:"code"`
	Server     string               `json:"server"`
	Tool       string               `json:"tool"`
	Violations []decision.Violation `json:"violations"`
	Outcome    decision.Outcome     `json:"outcome,omitempty"`
	Step       decision.Step        `json:"step,omitempty"`
	Details    map[string]any       `json:"details,omitempty"`
	Reasons    []decision.Reason    `json:"reasons,omitempty"`
	Warnings   []decision.Reason    `json:"warnings,omitempty"`
	SHA256     string               `json:"sha256,omitempty"`
	Doc        string               `json:"doc,omitempty"`
	// Ask is the prompt a broker would show, on an ask this daemon could
	// not put to a person (DaemonAsk).
	Ask *AskPrompt `json:"ask,omitempty"`
}

// HTTPAnswer is a daemon rendering as `eval --format json` shows it in
// "rendered": {"status": <HTTP status>, "body": {…}}.
type HTTPAnswer struct {
	Status int `json:"status"`
	Body   any `json:"body"`
}

// Daemon renders d for an HTTP daemon: the status from the one table
// (Status) and the body. An allow is 200 with the (redacted) decision
// document as body. A refusal is a *DaemonBody. A HiddenTool refusal has
// mcpx's shape: 400, `tool "x" on "y" is hidden by its hiddenTools
// configuration`, naming this config's key. An ask is rendered as
// Unavailable(d) — 428, ConfirmationUnavailable — since a daemon answering
// an HTTP request has no person to ask; a daemon with a broker renders the
// prompt with DaemonAsk or Prompt instead.
func Daemon(r redact.Decision) (status int, body any) {
	d := r.Doc()
	if d.Outcome == decision.Allow {
		if d.Reasons == nil {
			d.Reasons = []decision.Reason{}
		}
		if d.Warnings == nil {
			d.Warnings = []decision.Reason{}
		}
		return http.StatusOK, d
	}
	d = Unavailable(d)
	first := d.First()
	if first.Code == decision.HiddenTool {
		return Status(decision.HiddenTool), &DaemonBody{
			Error:      hiddenMessage(d.Call.Server, d.Call.Tool),
			Code:       decision.HiddenTool,
			Server:     d.Call.Server,
			Tool:       d.Call.Tool,
			Violations: []decision.Violation{},
		}
	}
	code := first.Code
	if code == "" {
		code = decision.PolicyError
	}
	msg := first.Message
	if msg == "" {
		msg = code.Info().Title
	}
	var violations []decision.Violation
	for _, r := range d.Reasons {
		violations = append(violations, r.Violations...)
	}
	if violations == nil {
		violations = []decision.Violation{}
	}
	return StatusOf(d), &DaemonBody{
		Error:      msg,
		Code:       code,
		Server:     d.Call.Server,
		Tool:       d.Call.Tool,
		Violations: violations,
		Outcome:    decision.Deny,
		Step:       d.Step,
		Details:    first.Details,
		Reasons:    d.Reasons,
		Warnings:   d.Warnings,
		SHA256:     d.Call.SHA256,
		Doc:        code.Info().Doc,
	}
}

// DaemonAsk renders an ask for a daemon: the Daemon rendering of
// Unavailable(d) (428) with the prompt of the exact call in "ask", so a
// client can show it to a person or take it to an approver. It returns an
// error when Prompt does; a decision that is not an ask renders as Daemon.
func DaemonAsk(call decision.Call, r redact.Decision) (int, any, error) {
	return daemonAsk(r, func() (AskPrompt, error) { return Prompt(call, r) })
}

// daemonAsk is DaemonAsk with the prompt built by prompt.
func daemonAsk(r redact.Decision, prompt func() (AskPrompt, error)) (int, any, error) {
	if r.Doc().Outcome != decision.Ask {
		s, b := Daemon(r)
		return s, b, nil
	}
	p, err := prompt()
	if err != nil {
		return 0, nil, err
	}
	status, body := Daemon(r)
	if db, ok := body.(*DaemonBody); ok {
		db.Ask = &p
	}
	return status, body, nil
}
