package mcpxpolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
// into an allow, once. Requests live in the state dir (approvals.log), or
// in the PostgreSQL database of the config's ledger section, so the three
// steps may happen in different processes — or gateways. See docs/sdk.md,
// docs/surfaces.md#asks-on-every-surface, docs/decisions/0008-approvals.md and
// docs/decisions/0022-approvals-log-and-fairness.md.

// DefaultApprovalTTL is how long an approval request lives, answered or
// not, when Options.ApprovalTTL is 0.
const DefaultApprovalTTL = approval.DefaultTTL

// requestOf is the request as the SDK shows it.
func requestOf(r approval.Record) (decision.ApprovalRequest, error) {
	out := decision.ApprovalRequest{ID: r.ID, SHA256: r.SHA256, Server: r.Server, Tool: r.Tool, Surface: r.Surface,
		Caller: r.Caller, Principal: r.Principal, State: r.State, Created: r.Created, Expires: r.Expires, Answered: r.Answered}
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

// Approvals is the approval store, for whoever answers asks: the proxy
// relaying its client's answer, serve's approval route, a person at a
// terminal. It holds the requests asks were put on hold as: in the state
// dir (approvals.log), or in the PostgreSQL database of the config's
// ledger section, which a fleet of gateways shares
// (docs/ledger.md#approvals-and-pins-a-fleet-shares). It is safe for
// concurrent use, and any number of Approvals and Engines, in this or
// other processes, may share a store. Only the party an ask was put to
// should answer it: the proxy answers with what its client said, serve
// needs its bearer token, the CLI needs the state dir or the database
// (docs/surfaces.md#asks-on-every-surface).
type Approvals struct {
	s      approval.Backend
	engine bool         // the Engine's own: Engine.Close closes the database
	close  func() error // the database's pool, when OpenApprovals opened one
}

// OpenApprovals opens the approval store opts name — the config's ledger
// section when opts.ConfigPaths are given (the config must load) and it
// names PostgreSQL, else the state dir opts.StateDir (see Options) — with
// opts.ApprovalTTL, MaxApprovals and MaxApprovalsPerCaller, for answering
// and listing requests without a policy. It touches nothing until used.
// Close releases it.
func OpenApprovals(opts Options) (*Approvals, error) {
	st, err := openState(opts)
	if err != nil {
		return nil, err
	}
	a, err := st.approvals(opts)
	if err != nil {
		return nil, err
	}
	a.close = st.close
	return a, nil
}

// approvalOptions are the options of the approval store opts configure.
func approvalOptions(opts Options) []approval.Option {
	return []approval.Option{approval.WithTTL(opts.ApprovalTTL), approval.WithMaxLive(opts.MaxApprovals),
		approval.WithMaxPerCaller(opts.MaxApprovalsPerCaller)}
}

// Where names the store: approvals.log in the state dir, or the database
// (without its password) and its table.
func (a *Approvals) Where() string { return a.s.Where() }

// Close releases the database connections OpenApprovals opened; on the
// Engine's own (Engine.Approvals), and on a state dir's store, it does
// nothing.
func (a *Approvals) Close() error {
	if a.engine || a.close == nil {
		return nil
	}
	return a.close()
}

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
// approval request bound to the call and returns it once it is durable —
// or, when the same ask is pending already (the same call, reasons,
// principal and config revision), returns that request and opens nothing.
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
// it is a write and destructive) and the call's principal — and to the
// config revision that asked (Revision). A call that differs in any of
// them, or is decided by another config, does not use the approval. It
// counts against call.Caller's quota (Options.MaxApprovalsPerCaller, per
// principal), its surface's (half of Options.MaxApprovals) and the
// store's.
//
// Errors: ErrNotAsk (d is not an ask), mcpgate.ErrPromptTooLarge (the
// call is too large to show in full: it is refused, never asked), an
// error when d was decided for another call or the arguments are not
// JSON, ErrApprovalsFull (a quota is reached: the text says whose),
// ErrApprovalTooLarge, ErrUnreadable, I/O errors. On error the ask
// stands; a surface that cannot put it to a person denies it
// (mcpgate.UnavailableFor(d, err), which says why). Safe for concurrent
// use.
func (e *Engine) RequestApproval(call decision.Call, d decision.Decision) (decision.ApprovalRequest, error) {
	return e.hold(call, redact.Of(d, call.Args), nil)
}

// hold is RequestApproval of the ask r, redacted already; p is its
// prompt when the caller built it (render.Prompt(call, r)), else nil.
func (e *Engine) hold(call decision.Call, r redact.Decision, p *render.AskPrompt) (decision.ApprovalRequest, error) {
	prompt, err := promptOf(call, r, p)
	if err != nil {
		return decision.ApprovalRequest{}, err
	}
	bind, err := approvalBinding(prompt, e.Revision())
	if err != nil {
		return decision.ApprovalRequest{}, err
	}
	b, err := json.Marshal(prompt)
	if err != nil {
		return decision.ApprovalRequest{}, fmt.Errorf("mcpxpolicy: prompt: %w", err)
	}
	rec, err := e.approvals.s.Request(approval.Record{SHA256: prompt.SHA256, Server: call.Server, Tool: call.Tool.Name,
		Surface: call.Surface, Caller: callerOf(call), Principal: principalID(call), Binding: bind, Prompt: b})
	if err != nil {
		return decision.ApprovalRequest{}, err
	}
	return requestOf(rec)
}

// callerOf is who asked call, as its quota counts it: call.Caller, else
// its surface (docs/surfaces.md#fairness-one-caller-cannot-starve-another).
func callerOf(call decision.Call) string {
	switch {
	case call.Caller != "":
		return call.Caller
	case call.Surface != "":
		return call.Surface
	}
	return "sdk"
}

func principalID(call decision.Call) string {
	if call.Principal == nil {
		return ""
	}
	return call.Principal.ID
}

// approvalBinding is what an approval is bound to besides the call's
// sha256: the prompt's binding (the text the person was shown and the
// call's principal) and the revision of the config that asked.
func approvalBinding(p render.AskPrompt, revision string) (string, error) {
	b, err := decision.Canonical(map[string]any{"prompt": p.Binding, "revision": revision})
	if err != nil {
		return "", fmt.Errorf("mcpxpolicy: approval binding: %w", err)
	}
	return decision.SHA256Hex(b), nil
}

// DecideApproved decides call again and, if it is still the ask that
// approval request id was made for and the request is approved and
// unexpired, uses the approval — once, in every process sharing the store
// — and returns that ask as an allow (its reasons kept, so the log
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
// With id "" it completes the ask out of band, for a surface that cannot
// put it to a person (an MCP client without elicitation, a webhook's
// reader): it uses the approval a person gave for exactly this call, or
// puts the ask on hold for one (outofband.go, docs/approvals.md).
//
// Like Decide, it always returns a decision, a deny whenever it returns an
// error; errors.Is(err, ErrApprovalRefused) tells a refused approval from
// a failure of the gate. Safe for concurrent use.
func (e *Engine) DecideApproved(ctx context.Context, call decision.Call, id string) (decision.Decision, error) {
	d, err := e.Decide(ctx, call)
	if err != nil {
		return d, err
	}
	if id == "" {
		if d.Outcome != decision.Ask {
			return d, nil
		}
		out, _, err := e.outOfBand(call, d, redact.Of(d, call.Args), nil)
		return out, err
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
	bind, err := approvalBinding(prompt, e.Revision())
	if err != nil {
		return render.Unavailable(d), err
	}
	out, err := approval.Use(e.approvals.s, id, prompt.SHA256, bind, d)
	if err != nil {
		return approval.Refusal(render.Unavailable(d), render.Declined(d), id, err), err
	}
	return out, nil
}

// fullRefusal is the ask d that could not be put on hold because a quota
// of the approval store is reached (err, ErrApprovalsFull): a
// ConfirmationUnavailable deny that says whose quota and what to do, with
// the error in its details ("refused").
func fullRefusal(d decision.Decision, err error) decision.Decision {
	out := render.Unavailable(d)
	r := &out.Reasons[0]
	codes, _ := r.Details["asked"].([]string)
	r.Message = fmt.Sprintf("%s.%s needs confirmation (%s) and no approval request could be made: %v; the call was not executed",
		d.Call.Server, d.Call.Tool, strings.Join(codes, ", "), err)
	r.Details["refused"] = err.Error()
	return out
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

// promptOf is p, the prompt of the ask r its caller built already, or
// when nil render.Prompt(call, r).
func promptOf(call decision.Call, r redact.Decision, p *render.AskPrompt) (render.AskPrompt, error) {
	if p != nil {
		return *p, nil
	}
	return render.Prompt(call, r)
}
