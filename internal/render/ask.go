package render

import (
	"bytes"
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

// MaxShownBytes is the largest prompt a person is asked to confirm: the
// bytes of its text (AskPrompt.Text). A call whose prompt would be larger
// is not asked but refused (ErrPromptTooLarge, UnavailableFor), since the
// prompt shows every byte the approval binds and a person cannot be
// expected to read more.
const MaxShownBytes = 16 << 10

// ErrPromptTooLarge is matched (errors.Is) by the *PromptTooLargeError
// Prompt returns for a call too large to show in full.
var ErrPromptTooLarge = errors.New("render: the call is too large to show in full for confirmation")

// PromptTooLargeError is the error of a prompt larger than MaxShownBytes:
// Bytes its text would have, Limit the most allowed.
type PromptTooLargeError struct {
	Bytes, Limit int
}

func (e *PromptTooLargeError) Error() string {
	return fmt.Sprintf("render: the call is too large to show in full for confirmation (%d bytes, at most %d)", e.Bytes, e.Limit)
}

// Is makes errors.Is(err, ErrPromptTooLarge) hold.
func (e *PromptTooLargeError) Is(target error) bool { return target == ErrPromptTooLarge }

// PromptReason is one reason the call needs confirmation.
type PromptReason struct {
	Code    decision.Code `json:"code"`
	Message string        `json:"message"`
}

// AskPrompt is the exact call a person is asked to confirm, and what an
// approval of it binds: one value, made by Prompt. Its JSON form is the
// daemon's ask body and what the approval store keeps.
type AskPrompt struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Arguments is the arguments as shown: redacted (RedactShown), never
	// cut, in RFC 8785 canonical JSON with every invisible character
	// (control and format characters, U+202E, U+200B, …) written as a \u
	// escape — the same JSON value, every character visible.
	Arguments json.RawMessage `json:"arguments"`
	// SHA256 is decision.CallSHA256 of the unredacted call: what an approval
	// binds to, the redacted values included.
	SHA256 string `json:"sha256"`
	// Redacted lists the JSON Pointers of argument values shown redacted,
	// sorted; [] when the arguments are shown in full.
	Redacted    []string       `json:"redacted"`
	Write       bool           `json:"write"`
	Destructive bool           `json:"destructive"`
	Reasons     []PromptReason `json:"reasons"`
	// Shown is the text a person is shown (Text): the reasons, the call
	// with its arguments, what was redacted and the sha256, every
	// invisible character escaped. An approval binds it.
	Shown string `json:"shown"`
	// Binding digests what an approval of this prompt binds besides
	// SHA256: Shown (so the reasons, the call as shown, the write and
	// destructive flags) and the call's principal. The approval store
	// keeps it beside the prompt.
	Binding string `json:"-"`
}

// MarshalJSON is p's JSON with every invisible character of its strings
// written as a \u escape — the same JSON value, but a terminal or a page
// showing the JSON itself shows no bidirectional or zero-width character
// raw. HTML characters are not escaped.
func (p AskPrompt) MarshalJSON() ([]byte, error) {
	type plain AskPrompt
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(plain(p)); err != nil {
		return nil, err
	}
	return []byte(visible(strings.TrimSuffix(b.String(), "\n"))), nil
}

// Prompt renders the ask r (redacted with call's arguments) for call as
// the one value every surface asks with: server, tool, the canonical
// arguments with secrets redacted and nothing cut, the sha256 of the
// unredacted canonical call, the text a person is shown and the binding
// of an approval. It returns ErrNotAsk when r is not an ask,
// ErrCallMismatch when its call sha256 is set and is not call's, a
// *PromptTooLargeError (ErrPromptTooLarge) when the text would be larger
// than MaxShownBytes, and an error when the arguments are not JSON. Pure;
// safe for concurrent use.
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
	shown, changed := r.Shown(call.Args)
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
	p := AskPrompt{
		Server:      call.Server,
		Tool:        call.Tool.Name,
		Arguments:   json.RawMessage(visible(string(canon))),
		SHA256:      sum,
		Redacted:    changed,
		Write:       d.Write,
		Destructive: d.Destructive,
		Reasons:     reasons,
	}
	p.Shown = p.text()
	if len(p.Shown) > MaxShownBytes {
		return AskPrompt{}, &PromptTooLargeError{Bytes: len(p.Shown), Limit: MaxShownBytes}
	}
	p.Binding, err = binding(p.Shown, call.Principal)
	if err != nil {
		return AskPrompt{}, err
	}
	return p, nil
}

// binding digests the text a person was shown and the principal of the
// call: what an approval binds besides the call's sha256.
func binding(shown string, principal *decision.Principal) (string, error) {
	var who any
	if principal != nil {
		groups := make([]any, len(principal.Groups))
		for i, g := range principal.Groups {
			groups[i] = g
		}
		who = map[string]any{"id": principal.ID, "groups": groups}
	}
	b, err := decision.Canonical(map[string]any{"shown": shown, "principal": who})
	if err != nil {
		return "", fmt.Errorf("render: approval binding: %w", err)
	}
	return decision.SHA256Hex(b), nil
}

// Text is the prompt as a terminal shows it (and as the elicitation
// message): Shown, the reasons, the exact call, what was redacted, the
// sha256, and what approving means. It ends with a newline.
func (p AskPrompt) Text() string { return p.Shown }

// text builds Shown: every name and message with its invisible
// characters escaped (names that are not plain are JSON strings), the
// arguments as Arguments holds them.
func (p AskPrompt) text() string {
	var b strings.Builder
	server, tool := shownName(p.Server), shownName(p.Tool)
	fmt.Fprintf(&b, "Confirm this call to %s.%s?\n", server, tool)
	for _, r := range p.Reasons {
		fmt.Fprintf(&b, "  %s: %s\n", visible(string(r.Code)), visible(r.Message))
	}
	kind := "read"
	if p.Write {
		kind = "write"
		if p.Destructive {
			kind = "destructive write"
		}
	}
	fmt.Fprintf(&b, "  server:    %s\n", server)
	fmt.Fprintf(&b, "  tool:      %s (%s)\n", tool, kind)
	fmt.Fprintf(&b, "  arguments: %s\n", p.Arguments)
	if len(p.Redacted) > 0 {
		fmt.Fprintf(&b, "  redacted:  %s\n", visible(strings.Join(p.Redacted, ", ")))
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
					"description": fmt.Sprintf("Runs %s.%s once with the arguments shown (sha256 %s).", shownName(p.Server), shownName(p.Tool), p.SHA256),
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
