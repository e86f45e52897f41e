package render

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
)

// ErrNotAsk is returned by Prompt for a decision whose outcome is not ask.
var ErrNotAsk = errors.New("render: the decision is not an ask")

// ErrCallMismatch is returned by Prompt when the decision was made for
// another call than the one given (its sha256 differs).
var ErrCallMismatch = errors.New("render: the decision's sha256 is not the call's")

// PromptReason is one reason the call needs confirmation.
type PromptReason struct {
	Code    decision.Code `json:"code"`
	Message string        `json:"message"`
}

// AskPrompt is the exact call a person is asked to confirm. Its JSON form is
// the daemon's ask body.
type AskPrompt struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments is the RFC 8785 canonical JSON of the arguments as shown:
	// redacted and cut (RedactArgs).
	Arguments json.RawMessage `json:"arguments"`
	// SHA256 is decision.CallSHA256 of the unredacted call: what an approval
	// binds to.
	SHA256 string `json:"sha256"`
	// Redacted lists the JSON Pointers of argument values shown redacted or
	// cut, sorted; [] when the arguments are shown in full.
	Redacted    []string       `json:"redacted"`
	Write       bool           `json:"write"`
	Destructive bool           `json:"destructive"`
	Reasons     []PromptReason `json:"reasons"`
}

// Prompt renders the ask r (redacted with call's arguments) for call:
// server, tool, the canonical arguments with secrets redacted and long
// values cut, and the sha256 of the unredacted canonical call. It returns
// ErrNotAsk when r is not an ask, ErrCallMismatch when its call sha256 is
// set and is not call's, and an error when the arguments are not JSON.
// Pure; safe for concurrent use.
func Prompt(call decision.Call, r redact.Decision) (AskPrompt, error) {
	d := r.Doc()
	if d.Outcome != decision.Ask {
		return AskPrompt{}, ErrNotAsk
	}
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		return AskPrompt{}, fmt.Errorf("render: prompt: %w", err)
	}
	if d.Call.SHA256 != "" && d.Call.SHA256 != sum {
		return AskPrompt{}, ErrCallMismatch
	}
	shown, changed := redact.RedactArgs(call.Args)
	canon, err := decision.Canonical(shown)
	if err != nil {
		return AskPrompt{}, fmt.Errorf("render: prompt: %w", err)
	}
	if changed == nil {
		changed = []string{}
	}
	reasons := []PromptReason{}
	for _, r := range askReasons(d) {
		reasons = append(reasons, PromptReason{Code: r.Code, Message: r.Message})
	}
	return AskPrompt{
		Server:      call.Server,
		Tool:        call.Tool.Name,
		Arguments:   canon,
		SHA256:      sum,
		Redacted:    changed,
		Write:       d.Write,
		Destructive: d.Destructive,
		Reasons:     reasons,
	}, nil
}

// Text is the prompt as a terminal shows it (and as the elicitation
// message): the reasons, the exact call, what was redacted, the sha256, and
// what approving means. It ends with a newline.
func (p AskPrompt) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Confirm this call to %s.%s?\n", p.Server, p.Tool)
	for _, r := range p.Reasons {
		fmt.Fprintf(&b, "  %s: %s\n", r.Code, r.Message)
	}
	kind := "read"
	if p.Write {
		kind = "write"
		if p.Destructive {
			kind = "destructive write"
		}
	}
	fmt.Fprintf(&b, "  server:    %s\n", p.Server)
	fmt.Fprintf(&b, "  tool:      %s (%s)\n", p.Tool, kind)
	fmt.Fprintf(&b, "  arguments: %s\n", p.Arguments)
	if len(p.Redacted) > 0 {
		fmt.Fprintf(&b, "  redacted or cut: %s\n", strings.Join(p.Redacted, ", "))
	}
	fmt.Fprintf(&b, "  sha256:    %s\n", p.SHA256)
	b.WriteString("Approving runs exactly this call, once; the approval expires, and is void if the call changes.\n")
	return b.String()
}

// ElicitParams are the params of an MCP `elicitation/create` request, under
// the SDK's wire names (mcp.ElicitParams): a form with one boolean.
type ElicitParams struct {
	Mode            string         `json:"mode"`
	Message         string         `json:"message"`
	RequestedSchema map[string]any `json:"requestedSchema"`
}

// ElicitApprove is the one property of the elicitation form.
const ElicitApprove = "approve"

// Elicitation is the `elicitation/create` form the proxy sends: message
// Text(), requestedSchema an object with one required boolean "approve"
// (default false).
func (p AskPrompt) Elicitation() ElicitParams {
	return ElicitParams{
		Mode:    "form",
		Message: p.Text(),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				ElicitApprove: map[string]any{
					"type":        "boolean",
					"title":       "Approve this exact call",
					"description": fmt.Sprintf("Runs %s.%s once with the arguments shown (sha256 %s).", p.Server, p.Tool, p.SHA256),
					"default":     false,
				},
			},
			"required": []string{ElicitApprove},
		},
	}
}

// Approved reports whether an elicitation result approves the call: action
// "accept" with content {"approve": true}. Anything else — "decline",
// "cancel", a missing or non-boolean approve — is not an approval; render it
// with Declined.
func Approved(action string, content map[string]any) bool {
	v, ok := content[ElicitApprove].(bool)
	return action == "accept" && ok && v
}

// InputRequestKey is the id of the proxy's confirmation among the
// inputRequests of an input_required result, and of its answer among the
// retry's inputResponses.
const InputRequestKey = "mcpx-policy/confirm"

// InputRequest is one input request of an input_required result: an
// `elicitation/create` form, as the client would have been sent it.
type InputRequest struct {
	Method string       `json:"method"`
	Params ElicitParams `json:"params"`
}

// InputRequiredResult is the tools/call result by which an MCP 2026-07-28
// server asks its client for input (multi round-trip requests): the
// client fulfils the inputRequests and retries the call with
// inputResponses (the same ids) and requestState (as given). It has no
// content: the call has not run.
type InputRequiredResult struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]InputRequest `json:"inputRequests"`
	RequestState  string                  `json:"requestState"`
}

// InputRequired is the input_required result that puts the prompt to the
// person behind an MCP 2026-07-28 client: one input request,
// InputRequestKey, the Elicitation() form; state is the requestState the
// client echoes in its retry.
func (p AskPrompt) InputRequired(state string) InputRequiredResult {
	return InputRequiredResult{
		ResultType:    "input_required",
		InputRequests: map[string]InputRequest{InputRequestKey: {Method: "elicitation/create", Params: p.Elicitation()}},
		RequestState:  state,
	}
}
