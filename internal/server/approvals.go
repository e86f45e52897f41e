package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// Asks over HTTP (docs/service.md#asks-and-approvals): POST /v1/decide
// puts an ask on hold as an approval request and answers with it; a
// person who holds the token approves it (POST /v1/approvals/{id} with the
// sha256 they saw) or declines it; a later POST /v1/decide of the same call
// naming the approval uses it, once. The requests live in the state dir,
// so `mcpx-policy approve` answers them too.

// ApprovalsResponse is the body of GET /v1/approvals.
type ApprovalsResponse struct {
	Approvals []mcpxpolicy.ApprovalRequest `json:"approvals"`
}

// AnswerRequest is the body of POST /v1/approvals/{id}: {"sha256": S}
// approves the call whose sha256 the approver was shown; {"decline": true}
// declines.
type AnswerRequest struct {
	SHA256  string `json:"sha256,omitempty"`
	Decline bool   `json:"decline,omitempty"`
}

func (h *Handler) approvalRoutes() {
	h.mux.HandleFunc("/v1/approvals", only(http.MethodGet, h.listApprovals))
	h.mux.HandleFunc("/v1/approvals/{id}", func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			h.getApproval(w, r)
		case http.MethodPost:
			h.answerApproval(w, r)
		default:
			w.Header().Set("Allow", "GET, POST")
			writeError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", fmt.Sprintf("%s takes GET or POST", r.URL.Path))
		}
	})
}

// decideOrApproved decides call, with approval id when one is given. An
// approval that cannot be used is logged here, not returned as an error:
// the decision (a deny naming the approval) says why.
func (h *Handler) decideOrApproved(ctx context.Context, call decision.Call, id string) (decision.Decision, error) {
	if id == "" {
		return h.eng.Decide(ctx, call)
	}
	d, err := h.eng.DecideApproved(ctx, call, id)
	switch {
	case err == nil:
		if d.Outcome == decision.Allow {
			h.opts.Logger.Info("approval used", "id", id, "server", call.Server, "tool", call.Tool.Name, "sha256", d.Call.SHA256)
		}
		return d, nil
	case errors.Is(err, mcpxpolicy.ErrApprovalRefused):
		h.opts.Logger.Info("approval refused", "id", id, "server", call.Server, "tool", call.Tool.Name, "err", err)
		return d, nil
	}
	return d, err
}

// putOnHold opens an approval request for an ask; any other decision
// gets none (nil, nil). A request that cannot be made leaves the ask a 428
// without one, and its error says why in approval_error.
func (h *Handler) putOnHold(call decision.Call, d decision.Decision) (*mcpxpolicy.ApprovalRequest, error) {
	if d.Outcome != decision.Ask {
		return nil, nil
	}
	req, err := h.eng.RequestApproval(call, d)
	if err != nil {
		h.opts.Logger.Warn("no approval request for an ask", "server", call.Server, "tool", call.Tool.Name, "err", err)
		return nil, err
	}
	return &req, nil
}

func (h *Handler) listApprovals(w http.ResponseWriter, r *http.Request) {
	list, err := h.eng.Approvals().List()
	if err != nil {
		h.approvalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ApprovalsResponse{Approvals: list})
}

func (h *Handler) getApproval(w http.ResponseWriter, r *http.Request) {
	req, err := h.eng.Approvals().Get(r.PathValue("id"))
	if err != nil {
		h.approvalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, req)
}

// answerApproval approves or declines a request. Like clearing, it needs
// the token: the HTTP caller who asked for the decision may not answer
// its own ask.
func (h *Handler) answerApproval(w http.ResponseWriter, r *http.Request) {
	var ans AnswerRequest
	if !h.operatorRequest(w, r, "ApproveDisabled", "answering asks over HTTP is disabled: start serve with --token-file (or answer with mcpx-policy approve)",
		"/v1/approvals/{id}", `{"sha256": "<the call's sha256 as shown>"} or {"decline": true}`, &ans) {
		return
	}
	id := r.PathValue("id")
	var req mcpxpolicy.ApprovalRequest
	var err error
	switch {
	case ans.Decline:
		req, err = h.eng.Approvals().Decline(id)
	case ans.SHA256 != "":
		req, err = h.eng.Approvals().Approve(id, ans.SHA256)
	default:
		writeError(w, http.StatusBadRequest, string(decision.InvalidInput), `want {"sha256": "<the call's sha256 as shown>"} to approve, or {"decline": true}`)
		return
	}
	if err != nil {
		h.approvalError(w, err)
		return
	}
	h.opts.Logger.Info("approval answered over HTTP", "id", id, "state", req.State, "server", req.Server, "tool", req.Tool, "sha256", req.SHA256, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, req)
}

// approvalError answers an error of the approval store: 404 for an
// unknown request, 410 for an expired one, 409 for a sha256 that is not
// the request's or a request already declined, 503 for an unreadable
// store.
func (h *Handler) approvalError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, mcpxpolicy.ErrApprovalUnknown):
		writeError(w, http.StatusNotFound, "NotFound", err.Error())
	case errors.Is(err, mcpxpolicy.ErrApprovalExpired):
		writeError(w, http.StatusGone, "ApprovalExpired", err.Error())
	case errors.Is(err, mcpxpolicy.ErrApprovalMismatch):
		writeError(w, http.StatusConflict, "ApprovalMismatch", err.Error())
	case errors.Is(err, mcpxpolicy.ErrApprovalDeclined):
		writeError(w, http.StatusConflict, "ApprovalDeclined", err.Error())
	case errors.Is(err, mcpxpolicy.ErrApprovalsUnreadable):
		writeError(w, http.StatusServiceUnavailable, "ApprovalsUnreadable", err.Error())
	default:
		h.opts.Logger.Error("approval store", "err", err)
		writeError(w, http.StatusInternalServerError, "ApprovalFailed", err.Error())
	}
}
