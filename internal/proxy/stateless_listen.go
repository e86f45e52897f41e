package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

// A stateless subscriptions/listen (MCP 2026-07-28) in front of a command
// (docs/decisions/0033-listen-in-front-of-a-command.md). A listen stream
// carries the notifications of changes — to the tool, prompt and resource
// lists, to subscribed resources — that the client would see in its later
// requests. Each stateless request to a command is served by a server
// process of its own, so a change the process serving a listen saw is a
// change to a server no later request reaches, and a change a later
// request makes is in a process no listen sees: nothing the proxy could
// forward would be true of the server the client talks to. So the proxy
// answers the listen itself, without a server: it acknowledges the
// subscription with nothing agreed (the client re-lists when it needs to,
// as it must for any type a server does not agree to), and ends it at once
// with its result — as the MCP Go SDK's own server does when it agrees to
// no notification. No process is started and nothing from a server reaches
// the client on it. The same holds in front of a server on the legacy SSE
// transport, which predates the method (and whose changes the proxy does
// not turn into a listen's notifications). With a remote server on
// Streamable HTTP (DiscoverUpstream) the listen goes to the server, which
// stateless requests share.

const (
	methodListen       = "subscriptions/listen"
	notificationListen = "notifications/subscriptions/acknowledged"
	metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// listenNothing answers a stateless subscriptions/listen (checked by
// checkStateless) with the acknowledgement that agrees to no notification
// and then the listen's result, both naming the subscription by the
// request's id: an event stream of the two when the client accepts one,
// else the result alone as JSON. Params without a "notifications" object
// are refused (-32602), as a server refuses them.
func (h *HTTPHandler) listenNothing(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request) {
	var p struct {
		Notifications json.RawMessage `json:"notifications"`
	}
	if strictjson.Unmarshal(req.Params, &p) != nil || !isObject(bytes.TrimSpace(p.Notifications)) {
		writeRPC(w, http.StatusOK, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInvalidParams, Message: `subscriptions/listen: "notifications" must be an object`}})
		return
	}
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		writeRPC(w, http.StatusOK, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInternalError, Message: "mcpx-policy: encoding the subscription id failed"}})
		return
	}
	meta := json.RawMessage(`{"` + metaSubscriptionID + `":` + string(id) + `}`)
	ack, _ := json.Marshal(struct {
		Meta          json.RawMessage `json:"_meta"`
		Notifications struct{}        `json:"notifications"`
	}{Meta: meta})
	result, _ := json.Marshal(struct {
		ResultType string          `json:"resultType"`
		Meta       json.RawMessage `json:"_meta"`
	}{"complete", meta})
	client := newStatelessConn(r, w, req)
	ctx := r.Context()
	client.Write(ctx, &jsonrpc.Request{Method: notificationListen, Params: ack})
	client.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: result})
	client.finish()
	h.log.Info("stateless subscriptions/listen answered: nothing agreed (each stateless request to a command has a server of its own)")
}
