package mcpxpolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

// callDocument is one call as JSON: the call file of `mcpx-policy eval`
// and the body of serve's POST /v1/decide (Engine.Answer documents it).
type callDocument struct {
	Server    string              `json:"server"`
	Tool      json.RawMessage     `json:"tool"`
	Args      map[string]any      `json:"args"`
	Surface   string              `json:"surface,omitempty"`
	Principal *decision.Principal `json:"principal,omitempty"`
	Mode      string              `json:"mode,omitempty"`
	Approval  string              `json:"approval,omitempty"`
	Session   string              `json:"session,omitempty"`
	// What a recording adds (serve and proxy --record): deciding the call
	// ignores them.
	Time     string             `json:"time,omitempty"`
	Decision *decision.Recorded `json:"decision,omitempty"`
	Redacted []string           `json:"redacted,omitempty"`
}

// AnswerOptions says how Engine.Answer reads and answers one call
// document; the zero value answers for the daemon surface and holds no
// ask.
type AnswerOptions struct {
	// Surface, when set, is the surface the call is decided and rendered
	// for whatever the document names (eval --surface).
	Surface string
	// DefaultSurface is the surface of a document that names none; ""
	// means SurfaceDaemon.
	DefaultSurface string
	// Approval decides the call with this approval request, as the
	// document's "approval" does (eval --approval); a document that names
	// another one is unreadable.
	Approval string
	// Hold puts an ask on hold as an approval request (RequestApproval)
	// and names it in the answer (Answer.Held). An ask that cannot be held
	// because a quota is reached (ErrApprovalsFull: too many requests of
	// this caller, its surface or the store are waiting) is answered as a
	// ConfirmationUnavailable deny that says so: it could never complete.
	Hold bool
	// OutOfBand completes an ask out of band instead (as DecideApproved
	// with id "" does), for
	// a caller that runs the call it is answered (serve): an approval a
	// person gave for exactly this call is used — the answer is the
	// allow, and Answer.Approval names it —, a declined one is the
	// ConfirmationDeclined deny, and otherwise the ask stays an ask put
	// on hold (Answer.Held: the request already waiting for this call, or
	// a new one), whose daemon rendering says how a person approves it
	// and that the same call sent again afterwards runs once. A document
	// that names an approval is decided with it, as without OutOfBand.
	OutOfBand bool
	// Dispatch says the caller runs an allowed call as it is answered
	// (serve): an allowed write that write budgets count is counted then
	// (docs/configuration.md#budgets), and when a budget is found spent
	// meanwhile the answer is its WriteBudgetExceeded deny instead.
	Dispatch bool
	// Caller is who sent the document, as the adapter knows it — serve
	// gives "daemon:" and its HTTP caller's address — and never as the
	// document says: the ask put on hold counts against its quota
	// (decision.Call.Caller), and it keys, with the document's "session",
	// the session whose labels data-flow rules read. "" counts it under
	// the call's surface.
	Caller string
	// Name is what the adapter calls the document in the message of an
	// unreadable one: "not a <Name>: cause"; "" gives the cause alone.
	Name string
	// ToolHint says, in parentheses after why the document's "tool" could
	// not be resolved, what to do instead (give a catalog, send the whole
	// MCP Tool object).
	ToolHint string
	// Unread, when not nil, is why the adapter could not read the
	// document at all (a file that does not open, a body past its size
	// limit, an AuthZEN request that names no tool): the answer is an
	// InvalidInput deny whose message is its text, for the server and tool
	// raw names, if any.
	Unread error
}

// Answer is the Engine's answer to one call document (Engine.Answer): the
// call it read, its decision redacted once, the rendering for the call's
// surface and, for an ask put on hold, the approval request. Its JSON form
// is what `mcpx-policy eval --format json` prints and serve's POST
// /v1/decide returns (docs/service.md): the decision document with
// "rendered", and for an ask "approval" or "approval_error".
type Answer struct {
	// Call is the call the document holds, its tool resolved; when the
	// document could not be read, the server and tool names that could
	// be.
	Call decision.Call
	// Decision is the decision, redacted: what every output shows.
	Decision Redacted
	// Rendering is Decision as Call.Surface shows it; zero (JSON null)
	// when it could not be rendered (Err says why).
	Rendering Rendering
	// Approval is the id of the approval request the call was decided
	// with ("" for none), and Refused why it could not be used (the
	// decision, a deny, says so too).
	Approval string
	Refused  error
	// Held is the approval request an ask was put on hold as
	// (AnswerOptions.Hold), and HoldErr why none could be made.
	Held    *decision.ApprovalRequest
	HoldErr error
	// Unread is why the document could not be read (decoded strictly,
	// its tool resolved, its surface known): the decision is an
	// InvalidInput deny that says so. nil when it was read.
	Unread error
	// Err is an error of the gate that came with the decision (it is a
	// deny then: an evaluation that failed or ran out of time), or of the
	// rendering.
	Err error
	// Revision is the config revision that decided.
	Revision string
	// hold is how a person answers Held when the ask was held out of band
	// (OutOfBand); nil otherwise.
	hold *render.Hold
	// Recorded is what a recorded call document adds (serve and proxy
	// --record, docs/rollout.md): the decision the call got when it was
	// recorded, and the JSON Pointers of the arguments redacted before it
	// was written. Nil and empty for any other document.
	Recorded         *decision.Recorded
	RecordedRedacted []string
}

// Answer reads a call document, decides it, and answers it: what an
// adapter that reads bytes (eval's call file, serve's POST /v1/decide,
// an AuthZEN evaluation) does with them, in one step.
//
// The document is {"server", "tool", "args", "surface"?, "principal"?,
// "mode"?, "approval"?} (a recorded call's "time", "decision" and
// "redacted" are read and left aside). "tool" is an MCP Tool object
// (name, annotations, inputSchema) or a tool name looked up in
// Options.Catalog. It is read strictly: exact key names (a case variant of
// a field is refused, as is any field the document does not have), no
// duplicate key anywhere (the arguments included), valid UTF-8, nothing
// after the object; numbers stay as written. A document that does not
// read, names an unknown surface or a tool that does not resolve is an
// InvalidInput deny (Answer.Unread says why) and is not decided; the
// Options.Observer is told of it as of a decision.
//
// The call is decided (Decide), with the approval the document or opts
// names (DecideApproved), and an ask is put on hold when opts.Hold says
// so. The decision is redacted once (Redact) and rendered for the call's
// surface (Render); the answer holds both. It never fails: every failure
// is a deny with a reason, and an error field says what failed. Safe for
// concurrent use.
func (e *Engine) Answer(ctx context.Context, raw []byte, opts AnswerOptions) Answer {
	start := time.Now()
	a := Answer{Revision: e.Revision()}
	if opts.Unread != nil {
		a.Call, _ = e.names(raw)
		return e.unread(a, opts, opts.Unread, start)
	}
	call, doc, err := e.decode(raw, opts)
	a.Call, a.Approval, a.Recorded, a.RecordedRedacted = call, doc.Approval, doc.Decision, doc.Redacted
	if err != nil {
		a.Approval = ""
		return e.unread(a, opts, err, start)
	}
	e.replayClock(doc)
	d, err := e.Decide(ctx, call)
	r := redact.Of(d, call.Args)
	if err == nil && a.Approval != "" {
		d, err = e.useApproval(call, d, r, a.Approval)
		if errors.Is(err, approval.ErrRefused) {
			a.Refused, err = err, nil
		}
		r = r.Again(d, call.Args)
	}
	a.Err = err
	// prompt is the ask r's prompt, built once for the size check, the
	// hold and the rendering; nil once r is another decision
	var prompt *render.AskPrompt
	if d.Outcome == decision.Ask {
		// An ask too large to show in full is refused, never asked: a
		// person approves only what they can read.
		p, err := render.Prompt(call, r)
		switch {
		case errors.Is(err, render.ErrPromptTooLarge):
			d = render.UnavailableFor(d, err)
			r = r.Again(d, call.Args)
		case err == nil:
			prompt = &p
		}
	}
	asker := call
	asker.Caller = opts.Caller
	if opts.OutOfBand && err == nil && a.Approval == "" && d.Outcome == decision.Ask {
		out, req, oerr := e.outOfBand(asker, d, r, prompt)
		switch {
		case heldOutOfBand(oerr):
			h := e.holdOf(req)
			a.Held, a.hold = &req, &h
		case errors.Is(oerr, approval.ErrFull):
			a.HoldErr = oerr
			d = fullRefusal(d, oerr)
			r, prompt = r.Again(d, call.Args), nil
		case req.ID == "":
			a.HoldErr = oerr
		default:
			// An answer a person gave out of band, used or spent.
			a.Approval, d = req.ID, out
			if errors.Is(oerr, approval.ErrRefused) {
				a.Refused = oerr
			} else {
				a.Err = oerr
			}
			r, prompt = r.Again(d, call.Args), nil
		}
	} else if opts.Hold && d.Outcome == decision.Ask {
		held, err := e.hold(asker, r, prompt)
		switch {
		case errors.Is(err, approval.ErrFull):
			a.HoldErr = err
			d = fullRefusal(d, err)
			r, prompt = r.Again(d, call.Args), nil
		case err != nil:
			a.HoldErr = err
		default:
			a.Held = &held
		}
	}
	if opts.Dispatch && a.Err == nil && d.Outcome == decision.Allow {
		counted, err := e.dispatchAllowed(call, d)
		if err != nil {
			a.Err = err
		}
		if counted.Outcome != decision.Allow {
			// a budget found spent meanwhile: its deny, redacted once
			d = counted
			r = r.Again(d, call.Args)
		}
	}
	e.replayDispatch(call, doc)
	a.Decision = Redacted{r: r}
	a.Rendering, err = renderAnswer(call, a.Decision, a.Held, a.hold, prompt)
	if err != nil && a.Err == nil {
		a.Err = err
	}
	return a
}

// decode reads a call document strictly and resolves its tool. On error
// the call holds the server and tool names when they could be read.
func (e *Engine) decode(raw []byte, opts AnswerOptions) (decision.Call, callDocument, error) {
	var doc callDocument
	if err := strictjson.UnmarshalKnown(raw, &doc); err != nil {
		return decision.Call{Surface: surfaceOf("", opts)}, callDocument{}, notA(opts, err)
	}
	call := decision.Call{Server: doc.Server, Args: doc.Args, Surface: surfaceOf(doc.Surface, opts),
		Principal: doc.Principal, Mode: doc.Mode, Session: doc.Session, Caller: opts.Caller}
	t, err := e.resolveTool(doc.Server, doc.Tool)
	call.Tool = t
	switch {
	case err != nil && opts.ToolHint != "":
		return call, doc, notA(opts, fmt.Errorf("%w (%s)", err, opts.ToolHint))
	case err != nil:
		return call, doc, notA(opts, err)
	case opts.Approval != "" && doc.Approval != "" && opts.Approval != doc.Approval:
		return call, doc, notA(opts, fmt.Errorf("its \"approval\" %q is not --approval %q", doc.Approval, opts.Approval))
	case !knownSurface(call.Surface):
		surface := call.Surface
		call.Surface = surfaceOf("", opts)
		return call, doc, fmt.Errorf("unknown surface %q (want daemon, mcp or cli)", surface)
	}
	if opts.Approval != "" {
		doc.Approval = opts.Approval
	}
	return call, doc, nil
}

// names reads what it can of a document the adapter could not make
// whole — the server, the tool's name, the principal and the arguments —
// leniently, for the deny and its log.
func (e *Engine) names(raw []byte) (decision.Call, error) {
	var doc struct {
		Server    string              `json:"server"`
		Tool      json.RawMessage     `json:"tool"`
		Args      map[string]any      `json:"args"`
		Principal *decision.Principal `json:"principal"`
	}
	if len(raw) == 0 {
		return decision.Call{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	err := dec.Decode(&doc)
	call := decision.Call{Server: doc.Server, Args: doc.Args, Principal: doc.Principal}
	var t struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(doc.Tool, &call.Tool.Name) != nil && json.Unmarshal(doc.Tool, &t) == nil {
		call.Tool.Name = t.Name
	}
	return call, err
}

// notA is err as an unreadable document's cause: "not a <Name>: err".
func notA(opts AnswerOptions, err error) error {
	if opts.Name == "" {
		return err
	}
	return fmt.Errorf("not a %s: %w", opts.Name, err)
}

// surfaceOf is the surface a document naming doc is decided for.
func surfaceOf(doc string, opts AnswerOptions) string {
	switch {
	case opts.Surface != "":
		return opts.Surface
	case doc != "":
		return doc
	case opts.DefaultSurface != "":
		return opts.DefaultSurface
	}
	return SurfaceDaemon
}

// unread answers a document that could not be read: an InvalidInput deny
// saying why, told to the Observer as a decision.
func (e *Engine) unread(a Answer, opts AnswerOptions, why error, start time.Time) Answer {
	if !knownSurface(a.Call.Surface) {
		a.Call.Surface = surfaceOf("", opts)
	}
	d := decision.Denied(decision.CallRef{Server: a.Call.Server, Tool: a.Call.Tool.Name}, decision.InvalidInput, why.Error())
	if obs := e.opts.Observer; obs != nil {
		obs.Decided(d.Outcome, decidingCode(&d), false, time.Since(start), nil)
	}
	a.Unread = why
	a.Decision = Redact(a.Call, d)
	var err error
	a.Rendering, err = Render(a.Call.Surface, a.Call, a.Decision)
	if err != nil {
		a.Err = err
	}
	return a
}

// answerJSON is Answer's JSON form; its keys are in alphabetical order.
type answerJSON struct {
	Approval      *decision.ApprovalRequest `json:"approval,omitempty"`
	ApprovalError string                    `json:"approval_error,omitempty"`
	Call          decision.CallRef          `json:"call"`
	Destructive   bool                      `json:"destructive"`
	Outcome       decision.Outcome          `json:"outcome"`
	Reasons       []decision.Reason         `json:"reasons"`
	Rendered      Rendering                 `json:"rendered"`
	Shadow        *decision.Shadow          `json:"shadow,omitempty"`
	Step          decision.Step             `json:"step"`
	Warnings      []decision.Reason         `json:"warnings"`
	Write         bool                      `json:"write"`
}

// MarshalJSON is the answer as eval and serve print it: the redacted
// decision document's fields, "rendered" (the Rendering), and for an ask
// "approval" (the request it was put on hold as) or "approval_error" (why
// none could be made).
func (a Answer) MarshalJSON() ([]byte, error) {
	d := a.Decision.Decision()
	out := answerJSON{Approval: a.Held, Call: d.Call, Destructive: d.Destructive, Outcome: d.Outcome,
		Reasons: d.Reasons, Rendered: a.Rendering, Shadow: d.Shadow, Step: d.Step, Warnings: d.Warnings, Write: d.Write}
	if a.HoldErr != nil {
		out.ApprovalError = a.HoldErr.Error()
	}
	return marshalJSON(out)
}
