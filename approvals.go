package mcpxpolicy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/decision"
	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// Asks that complete: an ask is put on hold as an approval request
// (Engine.RequestApproval), a person answers it (Approvals.Approve or
// Decline, wherever the person is: the proxy relaying an MCP client's yes,
// serve's approval route, `mcpx-policy approve`), and the call is decided
// again with the approval (Engine.DecideApproved), which turns that one ask
// into an allow, once. Requests live in approvals.json in the state dir,
// so the three steps may happen in different processes. See docs/sdk.md
// and docs/decisions/0008-approvals.md.

// DefaultApprovalTTL is how long an approval request lives, answered or
// not, when Options.ApprovalTTL is 0.
const DefaultApprovalTTL = approval.DefaultTTL

// DefaultMaxApprovals caps the live approval requests of a state dir when
// Options.MaxApprovals is 0.
const DefaultMaxApprovals = approval.DefaultMaxLive

// AskPrompt is the exact call a person is asked to confirm and what an
// approval of it binds, one value: server, tool, the canonical arguments
// with secrets redacted and nothing cut, the sha256 of the unredacted
// call, the reasons to ask, and Shown, the text every surface shows (every
// invisible character escaped). Text() is that text.
type AskPrompt = render.AskPrompt

// MaxShownBytes is the largest prompt text a person is asked to confirm;
// a call whose prompt would be larger is refused, not asked
// (ErrPromptTooLarge).
const MaxShownBytes = render.MaxShownBytes

// ApprovalState is where an approval request stands.
type ApprovalState = approval.State

// The states of an approval request. A used request is gone.
const (
	ApprovalPending  = approval.Pending
	ApprovalApproved = approval.Approved
	ApprovalDeclined = approval.Declined
)

// Errors of the approval API; match them with errors.Is.
var (
	// ErrNotAsk: RequestApproval was given a decision that is not an ask.
	ErrNotAsk = render.ErrNotAsk
	// ErrApprovalUnknown: no such request in this state dir — never made,
	// already used (a replay), or expired and gone.
	ErrApprovalUnknown = approval.ErrUnknown
	// ErrApprovalExpired: the request's time ran out.
	ErrApprovalExpired = approval.ErrExpired
	// ErrApprovalMismatch: the call is not the one the request is for: the
	// sha256 an approver gives is not the request's, or the call decided
	// with the approval has other arguments, server, tool or principal, or
	// asks for other reasons, than the call that was asked about.
	ErrApprovalMismatch = approval.ErrMismatch
	// ErrApprovalPending: nobody has answered the request yet.
	ErrApprovalPending = approval.ErrNotApproved
	// ErrApprovalDeclined: the request was declined.
	ErrApprovalDeclined = approval.ErrDeclined
	// ErrApprovalsFull: MaxApprovals requests are live already.
	ErrApprovalsFull = approval.ErrFull
	// ErrApprovalTooLarge: the prompt is too large to keep (a call with a
	// huge object among its arguments).
	ErrApprovalTooLarge = approval.ErrTooLarge
	// ErrPromptTooLarge: the call is too large to show in full (its prompt
	// would pass MaxShownBytes), so it cannot be asked: a surface refuses
	// it with ConfirmationUnavailableFor(d, err), which says so.
	ErrPromptTooLarge = render.ErrPromptTooLarge
	// ErrApprovalRefused is matched, besides the specific error, by every
	// error of DecideApproved that is about the approval itself (unknown,
	// expired, mismatched, pending or declined) rather than a failure of
	// the gate: the decision, a deny, says why.
	ErrApprovalRefused = errors.New("approval refused")
	// ErrApprovalsUnreadable: approvals.json or the state dir is corrupt,
	// of a newer version, or writable by others; nothing is approved or
	// used until an operator repairs it.
	ErrApprovalsUnreadable = approval.ErrUnreadable
)

// ApprovalsUnreadableError is the error (errors.As) of an approval store
// that exists but cannot be used: Path is approvals.json, Err names the
// file at fault and the cause, Hint says what an operator does. It matches
// ErrApprovalsUnreadable.
type ApprovalsUnreadableError = approval.UnreadableError

// ApprovalRequest is an ask put on hold until a person answers it. Its
// JSON form is what serve's approval routes and `mcpx-policy approvals
// --format json` show.
type ApprovalRequest struct {
	// ID is 32 random hex digits; the answer and the use name it.
	ID string `json:"id"`
	// SHA256 is the sha256 of the unredacted canonical call; an approver
	// gives it back to say which call they saw.
	SHA256 string `json:"sha256"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Surface is where the ask was made: mcp, daemon or cli.
	Surface string        `json:"surface,omitempty"`
	State   ApprovalState `json:"state"`
	Created time.Time     `json:"created"`
	Expires time.Time     `json:"expires"`
	// Answered is when it was approved or declined (zero: not yet).
	Answered time.Time `json:"answered,omitzero"`
	// Prompt is what the approver is shown, redacted. RenderApproval
	// leaves it out of the daemon body, whose "ask" is the same prompt.
	Prompt AskPrompt `json:"prompt,omitzero"`
}

func requestOf(r approval.Record) (ApprovalRequest, error) {
	out := ApprovalRequest{ID: r.ID, SHA256: r.SHA256, Server: r.Server, Tool: r.Tool, Surface: r.Surface,
		State: r.State, Created: r.Created, Expires: r.Expires, Answered: r.Answered}
	if err := json.Unmarshal(r.Prompt, &out.Prompt); err != nil {
		return out, fmt.Errorf("mcpxpolicy: approval %s: prompt: %w", r.ID, err)
	}
	return out, nil
}

// Approvals is the approval store of a state dir, for whoever answers
// asks: the proxy relaying its client's answer, serve's approval route,
// a person at a terminal. It is safe for concurrent use, and any number of
// Approvals and Engines, in this or other processes, may share a state
// dir. Only the party an ask was put to should answer it: the proxy
// answers with what its client said, serve needs its bearer token, the CLI
// needs the state dir (docs/surfaces.md#asks-on-every-surface).
type Approvals struct{ s *approval.Store }

// OpenApprovals returns the approval store of stateDir ("" means
// DefaultStateDir()) for answering and listing requests without a config.
// It touches nothing on disk.
func OpenApprovals(stateDir string) (*Approvals, error) {
	return openApprovals(stateDir, 0, 0)
}

func openApprovals(dir string, ttl time.Duration, maxLive int) (*Approvals, error) {
	if dir == "" {
		d, err := ledger.DefaultStateDir()
		if err != nil {
			return nil, fmt.Errorf("mcpxpolicy: state dir: %w", err)
		}
		dir = d
	}
	s, err := approval.Open(dir, approval.WithTTL(ttl), approval.WithMaxLive(maxLive))
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return &Approvals{s: s}, nil
}

// Path is the store's file, approvals.json in the state dir.
func (a *Approvals) Path() string { return a.s.Path() }

// List returns the live requests (pending, approved and declined, not yet
// used or expired), oldest first. An unreadable store is an error matching
// ErrApprovalsUnreadable.
func (a *Approvals) List() ([]ApprovalRequest, error) {
	rs, err := a.s.List()
	if err != nil {
		return nil, err
	}
	out := make([]ApprovalRequest, 0, len(rs))
	for _, r := range rs {
		req, err := requestOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, req)
	}
	return out, nil
}

// Get returns live request id. Errors: ErrApprovalUnknown,
// ErrApprovalExpired, ErrApprovalsUnreadable.
func (a *Approvals) Get(id string) (ApprovalRequest, error) {
	r, err := a.s.Get(id)
	if err != nil {
		return ApprovalRequest{}, err
	}
	return requestOf(r)
}

// Approve says yes to request id for the call whose sha256 the approver
// was shown (the request's SHA256, as the prompt showed it), and returns
// the request once the answer is durable. It approves nothing else: the
// call still has to be decided with the approval (DecideApproved).
// Approving twice is harmless. Errors: ErrApprovalUnknown,
// ErrApprovalExpired, ErrApprovalMismatch (another sha256: the request
// stays pending), ErrApprovalDeclined, ErrApprovalsUnreadable, I/O errors.
func (a *Approvals) Approve(id, sha256 string) (ApprovalRequest, error) {
	r, err := a.s.Approve(id, sha256)
	if err != nil {
		return ApprovalRequest{}, err
	}
	return requestOf(r)
}

// Decline says no to request id (also after a yes, until the approval is
// used) and returns the request: deciding the call with it then gives a
// ConfirmationDeclined deny. Errors: ErrApprovalUnknown,
// ErrApprovalExpired, ErrApprovalsUnreadable, I/O errors.
func (a *Approvals) Decline(id string) (ApprovalRequest, error) {
	r, err := a.s.Decline(id)
	if err != nil {
		return ApprovalRequest{}, err
	}
	return requestOf(r)
}

// Approvals is the Engine's approval store (in Options.StateDir, with
// Options.ApprovalTTL and MaxApprovals).
func (e *Engine) Approvals() *Approvals { return e.approvals }

// RequestApproval puts the ask d of call on hold: it opens a pending
// approval request bound to the call and returns it once it is durable.
// Show req.Prompt (Text() for a terminal) to the person, have them answer
// through Approvals, then decide the call with DecideApproved(ctx, call,
// req.ID). Nothing is ever approved by itself: an unanswered request
// expires after Options.ApprovalTTL.
//
// The request is bound to the sha256 of the unredacted canonical call
// (server, tool, arguments) and to what else the person is shown or the
// policy judged: the reasons to ask (codes and messages), whether the call
// is a write and destructive, and the call's principal. A call that differs
// in any of them does not use the approval.
//
// Errors: ErrNotAsk (d is not an ask), ErrPromptTooLarge (the call is
// too large to show in full: it must be refused, not asked), an error when
// d was decided for another call or the arguments are not JSON,
// ErrApprovalsFull, ErrApprovalTooLarge, ErrApprovalsUnreadable, I/O
// errors. On error the ask stands; a surface that cannot put it to a
// person returns ConfirmationUnavailableFor(d, err). Safe for concurrent
// use.
func (e *Engine) RequestApproval(call Call, d Decision) (ApprovalRequest, error) {
	prompt, err := render.Prompt(call, d)
	if err != nil {
		return ApprovalRequest{}, err
	}
	b, err := json.Marshal(prompt)
	if err != nil {
		return ApprovalRequest{}, fmt.Errorf("mcpxpolicy: prompt: %w", err)
	}
	r, err := e.approvals.s.Request(approval.Record{SHA256: prompt.SHA256, Server: call.Server, Tool: call.Tool.Name,
		Surface: call.Surface, Binding: prompt.Binding, Prompt: b})
	if err != nil {
		return ApprovalRequest{}, err
	}
	return requestOf(r)
}

// DecideApproved decides call again and, if it is still the ask that
// approval request id was made for and the request is approved and
// unexpired, uses the approval — once, in every process sharing the state
// dir — and returns that ask as an allow (its reasons kept, so the log
// shows what was confirmed). In shadow mode an ask the policy made itself
// (a binding one) is answered the same way enforced, so Shadow becomes
// that allow too; an ask shadow mode relaxed from a deny keeps the deny
// under Shadow (Decision.Relaxed).
//
// It never loosens anything else: a call that is now a deny stays a deny,
// an allow stays an allow, and in both cases the approval is spent (it was
// given for an ask that no longer is). When the approval cannot be used the
// decision is a deny and the error says why (errors.Is):
//   - ErrApprovalDeclined: a ConfirmationDeclined deny;
//   - ErrApprovalPending (the request stays, for its answer),
//     ErrApprovalUnknown (a replay), ErrApprovalExpired,
//     ErrApprovalMismatch (the call changed: the approval is void),
//     ErrApprovalsUnreadable or an I/O error: a ConfirmationUnavailable
//     deny, whose details name the approval and why.
//
// Like Decide, it always returns a decision, a deny whenever it returns an
// error; errors.Is(err, ErrApprovalRefused) tells a refused approval from
// a failure of the gate. Safe for concurrent use.
func (e *Engine) DecideApproved(ctx context.Context, call Call, id string) (Decision, error) {
	d, err := e.Decide(ctx, call)
	if err != nil {
		return d, err
	}
	if d.Outcome != Ask {
		// Given for an ask that no longer is: spent. If it cannot be
		// removed now it changes nothing for this call, and it expires.
		e.approvals.s.Discard(id)
		return d, nil
	}
	prompt, err := render.Prompt(call, d)
	if errors.Is(err, ErrPromptTooLarge) {
		e.approvals.s.Discard(id)
		return ConfirmationUnavailableFor(d, err), fmt.Errorf("%w: %w", ErrApprovalRefused, err)
	}
	if err != nil {
		return ConfirmationUnavailableDecision(d), fmt.Errorf("mcpxpolicy: %w", err)
	}
	if _, err := e.approvals.s.Consume(id, prompt.SHA256, prompt.Binding); err != nil {
		for _, refusal := range []error{ErrApprovalUnknown, ErrApprovalExpired, ErrApprovalMismatch, ErrApprovalPending, ErrApprovalDeclined} {
			if errors.Is(err, refusal) {
				err = fmt.Errorf("%w: %w", ErrApprovalRefused, err)
				break
			}
		}
		return approvalRefused(d, id, err), err
	}
	d.Outcome = Allow
	d.Step = decision.StepNone
	if d.Shadow != nil && d.Shadow.Outcome == Ask {
		// Shadow mode, an ask it kept (a binding one): enforced, the
		// approval would answer it just the same.
		d.Shadow = &decision.Shadow{Outcome: Allow, Step: decision.StepNone, Reasons: d.Reasons}
	}
	return d, nil
}

// approvalRefused is the deny of an ask whose approval id could not be
// used because of err.
func approvalRefused(d Decision, id string, err error) Decision {
	if errors.Is(err, ErrApprovalDeclined) {
		out := ConfirmationDeclinedDecision(d)
		out.Reasons[0].Details["approval"] = id
		return out
	}
	why := "the approval store failed: " + err.Error()
	switch {
	case errors.Is(err, ErrApprovalPending):
		why = "nobody has approved it yet"
	case errors.Is(err, ErrApprovalUnknown):
		why = "no such approval is waiting: it was never made here, was already used, or expired"
	case errors.Is(err, ErrApprovalExpired):
		why = "it expired"
	case errors.Is(err, ErrApprovalMismatch):
		why = "it was given for another call, or for other reasons to ask; it is void now"
	}
	out := ConfirmationUnavailableDecision(d)
	r := &out.Reasons[0]
	r.Message = fmt.Sprintf("%s needs confirmation (%s) and approval %s cannot be used: %s; the call was not executed",
		callLabel(d.Call), askedCodes(r), id, why)
	r.Details["approval"] = id
	r.Details["refused"] = why
	return out
}

func callLabel(c decision.CallRef) string { return c.Server + "." + c.Tool }

func askedCodes(r *Reason) string {
	codes, _ := r.Details["asked"].([]string)
	return strings.Join(codes, ", ")
}

// RenderApproval is Render for an ask put on hold as req. On the daemon
// surface the 428 body carries the request under "approval" (without its
// prompt: the body's "ask" is that prompt), so whoever receives the 428
// knows which request to have approved; the other surfaces render as
// Render does.
func RenderApproval(surface string, call Call, d Decision, req ApprovalRequest) (Rendering, error) {
	out, err := Render(surface, call, d)
	if err != nil || out.HTTP == nil {
		return out, err
	}
	body, ok := out.HTTP.Body.(*render.DaemonBody)
	if !ok {
		return out, nil
	}
	req.Prompt = AskPrompt{}
	ans := *out.HTTP
	ans.Body = struct {
		*render.DaemonBody
		Approval ApprovalRequest `json:"approval"`
	}{body, req}
	out.HTTP = &ans
	return out, nil
}
