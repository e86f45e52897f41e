package server

import (
	"errors"
	"net/http"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// Pinned tool definitions over HTTP (docs/service.md#pinned-tool-definitions):
// GET /v1/pins lists them, as `mcpx-policy pins` does; POST
// /v1/pins/accept, which needs the token, accepts a changed definition, as
// `mcpx-policy pins accept` does. The pins live in the state dir, shared
// with the proxies and the CLI.

// PinsResponse is the body of GET /v1/pins.
type PinsResponse struct {
	Pins []decision.Pin `json:"pins"`
}

// AcceptRequest is the body of POST /v1/pins/accept: the server and tool,
// and the SHA-256 of the definition to accept (the one a
// ToolDefinitionChanged reason names; optional, and advised: without it
// whatever definition was seen last is accepted).
type AcceptRequest struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	SHA256 string `json:"sha256,omitempty"`
}

// AcceptResponse is the body of POST /v1/pins/accept: the tool's pin.
type AcceptResponse struct {
	Pin decision.Pin `json:"pin"`
}

func (h *Handler) pinRoutes() {
	h.mux.HandleFunc("/v1/pins", only(http.MethodGet, h.listPins))
	h.mux.HandleFunc("/v1/pins/accept", only(http.MethodPost, h.acceptPin))
}

func (h *Handler) listPins(w http.ResponseWriter, r *http.Request) {
	list, err := h.eng.Pins().List()
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "PinsUnreadable", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, PinsResponse{Pins: list})
}

func (h *Handler) acceptPin(w http.ResponseWriter, r *http.Request) {
	var req AcceptRequest
	if !h.operatorRequest(w, r, "AcceptDisabled", "accepting pins over HTTP is disabled: start serve with --token-file",
		"/v1/pins/accept", `{"server", "tool", "sha256"?}`, &req) {
		return
	}
	if req.Server == "" || req.Tool == "" {
		writeError(w, http.StatusBadRequest, string(decision.InvalidInput), `"server" and "tool" are required`)
		return
	}
	p, err := h.eng.Pins().Accept(req.Server, req.Tool, req.SHA256)
	switch {
	case errors.Is(err, mcpxpolicy.ErrNotFound), errors.Is(err, mcpxpolicy.ErrNothingToAccept):
		writeError(w, http.StatusNotFound, "NotFound", err.Error())
		return
	case errors.Is(err, mcpxpolicy.ErrMismatch):
		writeError(w, http.StatusConflict, "Mismatch", err.Error()+"; nothing was accepted")
		return
	case errors.Is(err, mcpxpolicy.ErrUnreadable):
		writeError(w, http.StatusServiceUnavailable, "PinsUnreadable", err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, "AcceptFailed", err.Error())
		return
	}
	h.opts.Logger.Info("pin accepted over HTTP", "server", req.Server, "tool", req.Tool, "sha256", p.Pinned.SHA256, "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, AcceptResponse{Pin: p})
}
