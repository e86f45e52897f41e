package proxy

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
	"github.com/mcpx/mcpx-policy/mcpgate"
)

// Asks a client cannot answer in band (docs/approvals.md): the ask waits
// as an approval request of the state dir for a person to answer out of
// band — `mcpx-policy approve`, the approvals page, a webhook's link —
// and the same call, sent again, runs once (Engine.AskOutOfBand). A client
// that declares URL elicitation (MCP 2025-11-25) is sent to the approvals
// page itself, and its call completes when the person answers there.

// answerPoll is how often a call waiting for the answer given on the
// approvals page looks at its request.
const answerPoll = 200 * time.Millisecond

// askOutOfBand holds the ask d of call for a person: the deny the client
// gets says how they approve it and that the same call sent again then
// runs once; an approval a person gave already is used (an allow), a
// decline spent (a deny).
func (s *session) askOutOfBand(ctx context.Context, call decision.Call) decision.Decision {
	out, err := s.opts.Engine.DecideApproved(ctx, call, "")
	s.logOutOfBand(call, out, err)
	return out
}

// heldRequest is the approval request a held refusal names: its id and
// the sha256 it binds ("" when out is not one).
func heldRequest(out decision.Decision) (id, sha256 string) {
	first := out.First()
	id, _ = first.Details["approval"].(string)
	sha256, _ = first.Details["sha256"].(string)
	return id, sha256
}

// logOutOfBand logs what completing an ask out of band did.
func (s *session) logOutOfBand(call decision.Call, out decision.Decision, err error) {
	id, sha := heldRequest(out)
	switch {
	case errors.Is(err, mcpxpolicy.ErrApprovalPending):
		first := out.First()
		s.log.Info("ask held for a person out of band; refused (ConfirmationUnavailable)", "tool", call.Tool.Name,
			"approval", id, "sha256", sha, "approve", first.Details["approve"], "page", first.Details["page"])
	case err == nil && out.Outcome == decision.Allow:
		s.log.Info("approval given out of band used", "tool", call.Tool.Name, "sha256", out.Call.SHA256)
	case err == nil:
		s.log.Info("decided again: no longer an ask", "tool", call.Tool.Name, "outcome", out.Outcome)
	case id == "":
		s.log.Error("the ask could not be held for a person; refused", "tool", call.Tool.Name, "code", out.First().Code, "err", err)
	default:
		s.log.Info("the answer given out of band was not used", "tool", call.Tool.Name, "approval", id, "outcome", out.Outcome, "why", err)
	}
}

// askByURL puts the ask d of call to a client that declares URL
// elicitation: held for a person (askOutOfBand), it sends the person to
// the approvals page with a URL-mode elicitation/create and, once they
// consented to go there, waits for their answer — at most until the
// request expires — then decides the call with it (DecideApproved) and
// tells the client the elicitation is complete. A client that declines
// declines the request; one that cancels, or an answer that does not come
// in time, leaves the request waiting (the held deny: the same call sent
// again after an approval runs once).
func (s *session) askByURL(ctx context.Context, call decision.Call) decision.Decision {
	eng := s.opts.Engine
	out, err := eng.DecideApproved(ctx, call, "")
	if !errors.Is(err, mcpxpolicy.ErrApprovalPending) {
		s.logOutOfBand(call, out, err)
		return out
	}
	id, _ := heldRequest(out)
	req, err := eng.Approvals().Get(id)
	if err != nil {
		s.log.Warn("the held request cannot be read; it stays held for a person", "tool", call.Tool.Name, "err", err)
		return out
	}
	eid := ownIDPrefix + rand.Text()
	params, ok := mcpgate.URLElicitation(out, eid)
	if !ok {
		// No approvals page to send the person to.
		s.logOutOfBand(call, out, mcpxpolicy.ErrApprovalPending)
		return out
	}
	s.log.Info("asked for confirmation (URL elicitation to the approvals page)", "tool", call.Tool.Name, "approval", req.ID, "sha256", req.SHA256)
	resp, err := s.request(ctx, s.client, "elicitation/create", params)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("URL elicitation failed; the ask stays held for a person", "tool", call.Tool.Name, "approval", req.ID, "err", err)
		}
		return out
	}
	var a elicitResult
	if err := strictjson.Unmarshal(resp.Result, &a); err != nil {
		s.log.Warn("the URL elicitation's answer does not decode strictly; the ask stays held for a person", "tool", call.Tool.Name, "approval", req.ID, "err", err)
		return out
	}
	switch a.Action {
	case "accept":
	case "decline":
		s.log.Info("confirmation declined (URL elicitation)", "tool", call.Tool.Name, "approval", req.ID, "sha256", req.SHA256)
		if _, err := eng.Approvals().Decline(req.ID); err != nil && !errors.Is(err, mcpxpolicy.ErrNotFound) {
			s.log.Warn("recording the decline failed", "tool", call.Tool.Name, "approval", req.ID, "err", err)
		}
		d, _ := eng.DecideApproved(ctx, call, req.ID)
		return d
	default:
		s.log.Info("URL elicitation cancelled; the ask stays held for a person", "tool", call.Tool.Name, "approval", req.ID, "action", a.Action)
		return out
	}
	if !s.awaitAnswer(ctx, req) {
		if ctx.Err() == nil {
			s.log.Info("no answer on the approvals page before the request expired", "tool", call.Tool.Name, "approval", req.ID)
		}
		return out
	}
	if n, err := notification("notifications/elicitation/complete", map[string]any{"elicitationId": eid}); err == nil {
		if err := s.client.Write(s.ctx, n); err != nil {
			s.writeFailed("telling the client the elicitation is complete failed", n.Method, err)
		}
	}
	d, err := eng.DecideApproved(ctx, call, req.ID)
	if err != nil && ctx.Err() == nil {
		s.log.Info("the approval was not used", "tool", call.Tool.Name, "approval", req.ID, "outcome", d.Outcome, "why", err)
	} else if d.Outcome == decision.Allow {
		s.log.Info("confirmation approved (approvals page)", "tool", call.Tool.Name, "approval", req.ID, "sha256", d.Call.SHA256)
	}
	return d
}

// awaitAnswer waits until request req is answered (approved or declined),
// gone (used by another call, expired), req expires, or ctx ends; it
// reports whether an answer (or its end) came before the expiry and ctx.
func (s *session) awaitAnswer(ctx context.Context, req decision.ApprovalRequest) bool {
	deadline := time.NewTimer(time.Until(req.Expires))
	defer deadline.Stop()
	tick := time.NewTicker(answerPoll)
	defer tick.Stop()
	for {
		r, err := s.opts.Engine.Approvals().Get(req.ID)
		switch {
		case errors.Is(err, mcpxpolicy.ErrApprovalExpired):
			return false
		case err != nil && !errors.Is(err, mcpxpolicy.ErrUnreadable):
			return true // gone: deciding with it says why
		case err == nil && r.State != decision.ApprovalPending:
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}
