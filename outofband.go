package mcpxpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/mcpx/mcpx-policy/internal/render"
)

// Asks out of band: a surface that cannot put an ask to a person itself
// (an MCP client without elicitation, an HTTP caller, a webhook's reader)
// still completes it. The ask waits as an approval request in the state
// dir; a person answers it where they are (`mcpx-policy approve`, the
// approvals page, a webhook's link); and the same call, sent again, finds
// the answer and is decided with it — once. See docs/approvals.md.

// Completing an ask out of band (DecideApproved with id ""): the engine
// looks for a live approval request made for exactly this ask — the
// call's sha256 and everything else an approval is bound to
// (RequestApproval), the config revision included — and
//   - when a person approved one, uses it (once, as DecideApproved with
//     its id does) and returns the allow and a nil error;
//   - when a person declined one, spends it and returns the
//     ConfirmationDeclined deny, with ErrApprovalDeclined;
//   - else puts the ask on hold — the request already waiting for this
//     call, or a new one (Options.OnApprovalRequest is told of a new one)
//     — and returns the ConfirmationUnavailable deny the surface answers
//     with: it names the request (details "approval", "sha256",
//     "expires") and says how a person approves it (the runnable
//     `mcpx-policy approve` command for this state dir, details
//     "approve", and with Options.ApprovalsPage the page's link, details
//     "page") and that the same call sent again afterwards runs once. The
//     error matches ErrApprovalPending.
//
// Every error about the approval itself matches ErrApprovalRefused too.
// When no request can be had (ErrApprovalsFull, ErrApprovalTooLarge,
// ErrUnreadable, I/O errors) it returns the plain ConfirmationUnavailable
// deny and the error: the ask never becomes an allow by itself. Requests
// found and opened by one Engine are serialized, so that a flood of the
// same call opens one.

// outOfBand completes the ask d of call out of band, r being d redacted;
// req is the request it found or opened (zero when none could be had); p
// is r's prompt when the caller built it, else nil.
func (e *Engine) outOfBand(call decision.Call, d decision.Decision, r redact.Decision, p *render.AskPrompt) (decision.Decision, decision.ApprovalRequest, error) {
	prompt, err := promptOf(call, r, p)
	if err != nil {
		return render.Unavailable(d), decision.ApprovalRequest{}, fmt.Errorf("mcpxpolicy: %w", err)
	}
	bind, err := approvalBinding(prompt, e.Revision())
	if err != nil {
		return render.Unavailable(d), decision.ApprovalRequest{}, err
	}
	e.oob.Lock()
	rec, found, err := e.approvals.waiting(prompt.SHA256, bind)
	if err != nil {
		e.oob.Unlock()
		return render.Unavailable(d), decision.ApprovalRequest{}, err
	}
	if found && rec.State != approval.Pending {
		// Answered: used (an allow) or spent (a decline), once.
		out, err := approval.Use(e.approvals.s, rec.ID, prompt.SHA256, bind, d)
		e.oob.Unlock()
		req, rerr := requestOf(rec)
		if rerr != nil {
			req = decision.ApprovalRequest{ID: rec.ID, SHA256: rec.SHA256, Server: rec.Server, Tool: rec.Tool, State: rec.State}
		}
		if err != nil {
			return approval.Refusal(render.Unavailable(d), render.Declined(d), rec.ID, err), req, err
		}
		return out, req, nil
	}
	opened := false
	if !found {
		// Request returns the pending request another process opened for
		// the same call and binding meanwhile: only one made now is new
		start := time.Now().Truncate(time.Second)
		rec, err = e.approvals.s.Request(approval.Record{SHA256: prompt.SHA256, Server: call.Server, Tool: call.Tool.Name,
			Surface: call.Surface, Caller: callerOf(call), Principal: principalID(call), Binding: bind, Prompt: mustPromptJSON(prompt)})
		if err != nil {
			e.oob.Unlock()
			return render.Unavailable(d), decision.ApprovalRequest{}, err
		}
		opened = !rec.Created.Before(start)
	}
	e.oob.Unlock()
	req, err := requestOf(rec)
	if err != nil {
		return render.Unavailable(d), decision.ApprovalRequest{}, err
	}
	held := render.Held(d, e.holdOf(req))
	if opened && e.opts.OnApprovalRequest != nil {
		e.opts.OnApprovalRequest(req, held)
	}
	return held, req, fmt.Errorf("%w: %w: approval %s waits for a person", approval.ErrRefused, ErrApprovalPending, req.ID)
}

// holdOf is how a person answers the held request req.
func (e *Engine) holdOf(req decision.ApprovalRequest) render.Hold {
	h := render.Hold{ID: req.ID, SHA256: req.SHA256, Expires: req.Expires, Approve: e.cmds.approve(req.ID, req.SHA256)}
	if e.opts.ApprovalsPage != "" {
		h.Page = e.opts.ApprovalsPage + "/" + url.PathEscape(req.ID)
	}
	return h
}

// waiting finds the live request made for the call of sha256 whose
// binding is bind: an approved one first, then a declined one, then a
// pending one, oldest first within each; found is false when there is
// none.
func (a *Approvals) waiting(sha256, bind string) (approval.Record, bool, error) {
	rs, err := a.s.List()
	if err != nil {
		return approval.Record{}, false, err
	}
	rank := map[approval.State]int{approval.Approved: 0, approval.Declined: 1, approval.Pending: 2}
	best, found := approval.Record{}, false
	for _, r := range rs {
		if r.SHA256 != sha256 || r.Binding != bind {
			continue
		}
		if !found || rank[r.State] < rank[best.State] {
			best, found = r, true
		}
	}
	return best, found, nil
}

// mustPromptJSON is the prompt as the store keeps it (as RequestApproval
// keeps it).
func mustPromptJSON(p render.AskPrompt) []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // a prompt is strings, booleans and raw JSON
	}
	return b
}

// heldOutOfBand reports whether err is outOfBand's for an ask it put
// on hold (rather than answered or failed to hold).
func heldOutOfBand(err error) bool { return errors.Is(err, ErrApprovalPending) }
