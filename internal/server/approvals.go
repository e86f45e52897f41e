package server

import (
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
	Approvals []decision.ApprovalRequest `json:"approvals"`
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
	var req decision.ApprovalRequest
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
	case errors.Is(err, mcpxpolicy.ErrNotFound):
		writeError(w, http.StatusNotFound, "NotFound", err.Error())
	case errors.Is(err, mcpxpolicy.ErrApprovalExpired):
		writeError(w, http.StatusGone, "ApprovalExpired", err.Error())
	case errors.Is(err, mcpxpolicy.ErrMismatch):
		writeError(w, http.StatusConflict, "ApprovalMismatch", err.Error())
	case errors.Is(err, mcpxpolicy.ErrApprovalDeclined):
		writeError(w, http.StatusConflict, "ApprovalDeclined", err.Error())
	case errors.Is(err, mcpxpolicy.ErrUnreadable):
		writeError(w, http.StatusServiceUnavailable, "ApprovalsUnreadable", err.Error())
	default:
		h.opts.Logger.Error("approval store", "err", err)
		writeError(w, http.StatusInternalServerError, "ApprovalFailed", err.Error())
	}
}
