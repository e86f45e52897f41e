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

// requestOf is the request as the SDK shows it.
func requestOf(r approval.Record) (decision.ApprovalRequest, error) {
	out := decision.ApprovalRequest{ID: r.ID, SHA256: r.SHA256, Server: r.Server, Tool: r.Tool, Surface: r.Surface,
		State: r.State, Created: r.Created, Expires: r.Expires, Answered: r.Answered}
	// The prompt as the approver is shown it, in this SDK's JSON (no HTML
	// escaping), whatever escaping the file keeps.
	var p render.AskPrompt
	if err := json.Unmarshal(r.Prompt, &p); err != nil {
		return out, fmt.Errorf("mcpxpolicy: approval %s: prompt: %w", r.ID, err)
	}
	b, err := marshalJSON(p)
	if err != nil {
		return out, fmt.Errorf("mcpxpolicy: approval %s: prompt: %w", r.ID, err)
	}
	out.Prompt, out.Text = b, p.Text()
	return out, nil
}

// Approvals is the approval store of a state dir, for whoever answers
// asks: the proxy relaying its client's answer, serve's approval route,
// a person at a terminal. It holds the requests asks were put on hold as.
// It is safe for concurrent use, and any number of Approvals and Engines,
// in this or other processes, may share a state dir. Only the party an ask
// was put to should answer it: the proxy answers with what its client
// said, serve needs its bearer token, the CLI needs the state dir
// (docs/surfaces.md#asks-on-every-surface).
type Approvals struct{ s *approval.Store }

// OpenApprovals opens the approval store of opts.StateDir (see Options),
// with opts.ApprovalTTL and MaxApprovals, for answering and listing
// requests without a policy. It touches nothing on disk.
func OpenApprovals(opts Options) (*Approvals, error) {
	dir, err := stateDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	return openApprovals(dir, opts.ApprovalTTL, opts.MaxApprovals)
}

func openApprovals(dir string, ttl time.Duration, maxLive int) (*Approvals, error) {
	s, err := approval.Open(dir, approval.WithTTL(ttl), approval.WithMaxLive(maxLive))
	if err != nil {
		return nil, fmt.Errorf("mcpxpolicy: %w", err)
	}
	return &Approvals{s: s}, nil
}

// Where is the store's file, approvals.json in the state dir.
func (a *Approvals) Where() string { return a.s.Path() }

// List returns the live requests (pending, approved and declined, not yet
// used or expired), oldest first. An unreadable store is an error matching
// ErrUnreadable.
func (a *Approvals) List() ([]decision.ApprovalRequest, error) {
	rs, err := a.s.List()
	if err != nil {
		return nil, err
	}
	out := make([]decision.ApprovalRequest, 0, len(rs))
	for _, r := range rs {
		req, err := requestOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, req)
	}
	return out, nil
}

// Get returns live request id. Errors: ErrNotFound, ErrApprovalExpired,
// ErrUnreadable.
func (a *Approvals) Get(id string) (decision.ApprovalRequest, error) {
	r, err := a.s.Get(id)
	if err != nil {
		return decision.ApprovalRequest{}, err
	}
	return requestOf(r)
}

// Approve says yes to request id for the call whose sha256 the approver
// was shown (the request's SHA256, as the prompt showed it), and returns
// the request once the answer is durable. It approves nothing else: the
// call still has to be decided with the approval (DecideApproved).
// Approving twice is harmless. Errors: ErrNotFound, ErrApprovalExpired,
// ErrMismatch (another sha256: the request stays pending),
// ErrApprovalDeclined, ErrUnreadable, I/O errors.
func (a *Approvals) Approve(id, sha256 string) (decision.ApprovalRequest, error) {
	r, err := a.s.Approve(id, sha256)
	if err != nil {
		return decision.ApprovalRequest{}, err
	}
	return requestOf(r)
}

// Decline says no to request id (also after a yes, until the approval is
// used) and returns the request: deciding the call with it then gives a
// ConfirmationDeclined deny. Errors: ErrNotFound, ErrApprovalExpired,
// ErrUnreadable, I/O errors.
func (a *Approvals) Decline(id string) (decision.ApprovalRequest, error) {
	r, err := a.s.Decline(id)
	if err != nil {
		return decision.ApprovalRequest{}, err
	}
	return requestOf(r)
}

// RequestApproval puts the ask d of call on hold: it opens a pending
// approval request bound to the call and returns it once it is durable.
// Show req.Prompt (Text() for a terminal) to the person, have them answer
// through Approvals, then decide the call with DecideApproved(ctx, call,
// req.ID). Nothing is ever approved by itself: an unanswered request
// expires after Options.ApprovalTTL.
//
// The prompt shows every byte the request binds (secrets aside, which
// are bound by the call's sha256 and marked as redacted), and the request
// is bound to it: the sha256 of the unredacted canonical call (server,
// tool, arguments) and the binding the prompt carries, which digests the
// text the person is shown (the reasons to ask, the call as shown, whether
// it is a write and destructive) and the call's principal. A call that
// differs in any of them does not use the approval.
//
// Errors: ErrNotAsk (d is not an ask), mcpgate.ErrPromptTooLarge (the
// call is too large to show in full: it is refused, never asked), an
// error when d was decided for another call or the arguments are not
// JSON, ErrApprovalsFull, ErrApprovalTooLarge, ErrUnreadable, I/O errors.
// On error the ask stands; a surface that cannot put it to a person
// denies it (mcpgate.UnavailableFor(d, err), which says why). Safe for
// concurrent use.
func (e *Engine) RequestApproval(call decision.Call, d decision.Decision) (decision.ApprovalRequest, error) {
	return e.hold(call, redact.Of(d, call.Args))
}

// hold is RequestApproval of the ask r, redacted already.
func (e *Engine) hold(call decision.Call, r redact.Decision) (decision.ApprovalRequest, error) {
	prompt, err := render.Prompt(call, r)
	if err != nil {
		return decision.ApprovalRequest{}, err
	}
	b, err := json.Marshal(prompt)
	if err != nil {
		return decision.ApprovalRequest{}, fmt.Errorf("mcpxpolicy: prompt: %w", err)
	}
	rec, err := e.approvals.s.Request(approval.Record{SHA256: prompt.SHA256, Server: call.Server, Tool: call.Tool.Name,
		Surface: call.Surface, Binding: prompt.Binding, Prompt: b})
	if err != nil {
		return decision.ApprovalRequest{}, err
	}
	return requestOf(rec)
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
//     ErrNotFound (a replay), ErrApprovalExpired, ErrMismatch (the call
//     changed: the approval is void), ErrUnreadable or an I/O error: a
//     ConfirmationUnavailable deny, whose details name the approval and
//     why.
//
// Like Decide, it always returns a decision, a deny whenever it returns an
// error; errors.Is(err, ErrApprovalRefused) tells a refused approval from
// a failure of the gate. Safe for concurrent use.
func (e *Engine) DecideApproved(ctx context.Context, call decision.Call, id string) (decision.Decision, error) {
	d, err := e.Decide(ctx, call)
	if err != nil {
		return d, err
	}
	return e.useApproval(call, d, redact.Of(d, call.Args), id)
}

// useApproval uses approval id on d, call's decision made again (r is d
// redacted, for the prompt the approval was bound to).
func (e *Engine) useApproval(call decision.Call, d decision.Decision, r redact.Decision, id string) (decision.Decision, error) {
	if d.Outcome != decision.Ask {
		// Given for an ask that no longer is: spent. If it cannot be
		// removed now it changes nothing for this call, and it expires.
		e.approvals.s.Discard(id)
		return d, nil
	}
	prompt, err := render.Prompt(call, r)
	if errors.Is(err, render.ErrPromptTooLarge) {
		// Too large to show in full now, so it cannot have been shown:
		// refused, and the approval is spent.
		e.approvals.s.Discard(id)
		return render.UnavailableFor(d, err), fmt.Errorf("%w: %w", approval.ErrRefused, err)
	}
	if err != nil {
		return render.Unavailable(d), fmt.Errorf("mcpxpolicy: %w", err)
	}
	out, err := e.approvals.s.Use(id, prompt.SHA256, prompt.Binding, d)
	if err != nil {
		return approval.Refusal(render.Unavailable(d), render.Declined(d), id, err), err
	}
	return out, nil
}

// marshalJSON is json.Marshal without HTML escaping: the encoder that
// writes the whole document decides about that.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
