package proxy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

// MCP 2026-07-28 over Streamable HTTP has no sessions: every request is a
// POST of its own that carries the client's protocol version, info and
// capabilities in its _meta (and the version again in the
// MCP-Protocol-Version header), and is answered on that POST alone — as a
// JSON body, or an event stream of the notifications about it ending with
// the answer. The proxy serves such a request as a session of one request
// (docs/decisions/0026-stateless-requests-and-server-asks.md): a server of
// its own (a process, or a connection to the remote server), the same
// Run as every session — so the same checks, the same catalog, pins,
// asks and ledger — ended once the answer was written or the client went
// away.

// statelessShared is what the stateless requests one HTTP handler serves
// share: the asks waiting for their retry (the retry of an
// input_required comes as a request of its own), and how the approval
// store's caller of a request is named (a stateless request has no
// session to tell its client by: callerOf).
type statelessShared struct {
	held *heldAsks
	// caller is the caller name of a session of one request: set for
	// each request (callerOf); in the handler's, the listener's prefix.
	caller string
	// key keys the digest of a credential in a caller name.
	key []byte
}

func newStatelessShared() *statelessShared {
	return &statelessShared{held: newHeldAsks(), caller: mcpxpolicy.SurfaceMCP + ":stateless-" + rand.Text()[:13], key: []byte(rand.Text())}
}

// forRequest is what the session of one stateless request r gets: the
// shared held asks, and r's caller (callerOf).
func (sh *statelessShared) forRequest(r *http.Request) *statelessShared {
	return &statelessShared{held: sh.held, caller: sh.callerOf(r), key: sh.key}
}

// callerOf is who a stateless request is for the approval store's
// per-caller quota (docs/decisions/0031-resumable-streams-and-stateless-callers.md):
// the listener's prefix and, when the request carries Authorization, a
// keyed digest of that credential ("cred-…": the credential itself is
// never in a name, and the key, random per listener, keeps the digest
// from being checked against guesses); else the host of its address
// ("addr-…"), as serve counts its HTTP callers. Over loopback without a
// credential nothing tells two local clients apart: they are one caller.
func (sh *statelessShared) callerOf(r *http.Request) string {
	if auth := r.Header.Values("Authorization"); len(auth) > 0 {
		m := hmac.New(sha256.New, sh.key)
		for _, a := range auth {
			m.Write([]byte(a))
			m.Write([]byte{0})
		}
		return sh.caller + ":cred-" + hex.EncodeToString(m.Sum(nil)[:16])
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return sh.caller + ":addr-" + host
}

// DiscoverUpstream has the stateless requests about the server rather
// than one request — server/discover and subscriptions/listen — answered
// by the server, as every other stateless request is: right for a remote
// server on Streamable HTTP, which stateless requests share. Without it
// the proxy answers them itself, right for a server that is a command,
// which each stateless request starts, and for one on the legacy SSE
// transport, which predates them: it declines server/discover (method not
// found), so that the client initializes, and acknowledges a
// subscriptions/listen with nothing agreed (listenNothing).
func DiscoverUpstream() HTTPOption {
	return func(h *HTTPHandler) { h.discover = true }
}

// protocolVersionHeader is the HTTP header that repeats the request's
// protocol version.
const protocolVersionHeader = "Mcp-Protocol-Version"

// statelessVersions are the revisions whose requests carry no session,
// as this build knows them.
var statelessVersions = []string{protocolMRTR}

// legacyVersions are the revisions that start a session with initialize:
// a request without a session naming one of them in its header is not a
// stateless request.
var legacyVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// statelessRequest reports whether req, a POST without a session, is a
// request of the stateless protocol: its _meta names a protocol version,
// or its header names one that is not a legacy (session) revision.
func statelessRequest(r *http.Request, req *jsonrpc.Request) bool {
	if req.Method == "initialize" {
		return false
	}
	if _, ok := requestMeta(req.Params)[metaKeys[0]]; ok {
		return true
	}
	v := r.Header.Get(protocolVersionHeader)
	return v != "" && !slices.Contains(legacyVersions, v)
}

// requestMeta is params' _meta, nil when params have none or cannot be
// read (decodeFrame has checked the frame; the params are checked where
// they are handled).
func requestMeta(params json.RawMessage) map[string]json.RawMessage {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(params) == 0 || strictjson.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Meta
}

// checkStateless checks a stateless request's protocol metadata as the
// revision's HTTP transport requires, in the order it gives: the _meta
// fields a request must carry (-32602), the header matching the _meta
// version (-32020, HeaderMismatch), a version the proxy serves (-32022,
// UnsupportedProtocolVersion, with the versions it serves). Every
// refusal is a 400 whose body is the JSON-RPC error with the request's
// id. It returns nil for a request to serve.
func checkStateless(r *http.Request, req *jsonrpc.Request) *jsonrpc.Error {
	meta := requestMeta(req.Params)
	var version string
	if raw, ok := meta[metaKeys[0]]; !ok || json.Unmarshal(raw, &version) != nil || version == "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", metaKeys[0])}
	}
	if raw, ok := meta[metaKeys[2]]; !ok || !isObject(bytes.TrimSpace(raw)) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("missing or invalid _meta field %q", metaKeys[2])}
	}
	if h := r.Header.Get(protocolVersionHeader); h != version {
		return &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match the request's _meta %s %q", protocolVersionHeader, h, metaKeys[0], version)}
	}
	if !slices.Contains(statelessVersions, version) {
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: statelessVersions, Requested: version})
		return &jsonrpc.Error{Code: mcp.CodeUnsupportedProtocolVersion, Message: fmt.Sprintf("protocol version %q is not supported by this proxy", version), Data: data}
	}
	return nil
}

// serveStateless answers one stateless request: checked, then served by a
// session of its own within the session bounds.
func (h *HTTPHandler) serveStateless(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request) {
	if !req.IsCall() {
		// A notification without a session has no request to be about.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if e := checkStateless(r, req); e != nil {
		h.log.Warn("refused a stateless request", "method", req.Method, "err", e.Message)
		writeRPC(w, http.StatusBadRequest, &jsonrpc.Response{ID: req.ID, Error: e})
		return
	}
	if req.Method == "server/discover" && !h.discover {
		// Each stateless request to a command starts a process: a client
		// that probes is told to initialize, and gets a session that
		// keeps its server.
		writeRPC(w, http.StatusOK, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeMethodNotFound, Message: "mcpx-policy proxy: server/discover is not supported; initialize instead"}})
		return
	}
	if req.Method == methodListen && !h.discover {
		// No change a server process of one request sees is one the
		// client's later requests meet (stateless_listen.go).
		h.listenNothing(w, r, req)
		return
	}
	spare, why := h.reserveStateless()
	if why != "" {
		h.log.Warn("refused a stateless request", "why", why)
		unavailable(w, why)
		return
	}
	// Once this request's place is free: a server ahead for the next, if
	// none was started below.
	defer h.startAhead()
	defer h.unreserveStateless()
	ctx, cancel, server, err := h.statelessServer(spare, r)
	// A server ahead for the next request, starting now: a process takes
	// longer to be ready than a request takes to be served.
	h.startAhead()
	if err != nil {
		h.log.Error("starting the MCP server failed", "err", err)
		writeRPC(w, http.StatusBadGateway, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInternalError, Message: "mcpx-policy: starting the MCP server failed"}})
		return
	}
	defer cancel()
	client := newStatelessConn(r, w, req)
	opts := h.opts
	opts.shared = h.shared.forRequest(r)
	// Run in this handler's goroutine: the response is written while it
	// runs, and ends with it.
	err = Run(ctx, opts, client, server)
	if err != nil && !errors.Is(err, context.Canceled) {
		h.log.Info("stateless request ended", "method", req.Method, "err", err)
	}
	if !client.finish() && r.Context().Err() == nil {
		// The server's side ended before any answer.
		writeRPC(w, http.StatusBadGateway, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
			Code: jsonrpc.CodeInternalError, Message: "mcpx-policy: the MCP server ended without answering"}})
	}
}

// statelessConn is the client's side of a session of one stateless
// request. Read yields the request, then ends (io.EOF) once the answer
// was written or the client went away. Write sends the answer to the
// request — as the JSON body, or as the last event of the stream when
// notifications came first — and the notifications the client may have
// (progress, log messages) as events; anything else (a request to the
// client, which this protocol does not carry on a response, an answer to
// another id) is not the client's and is dropped with an error.
type statelessConn struct {
	req     *jsonrpc.Request
	w       http.ResponseWriter
	stream  bool // the client accepts an event stream
	reqDone <-chan struct{}

	mu       sync.Mutex
	read     bool
	streamed bool // an event went out: the answer is an event too
	closed   bool
	answered bool
	done     chan struct{} // closed when the answer was written or the conn closed
}

func newStatelessConn(r *http.Request, w http.ResponseWriter, req *jsonrpc.Request) *statelessConn {
	return &statelessConn{req: req, w: w, reqDone: r.Context().Done(), done: make(chan struct{}),
		stream: strings.Contains(r.Header.Get("Accept"), "text/event-stream")}
}

func (c *statelessConn) checksFrames() {}

// errStatelessDone ends the writes of a stateless request once answered.
var errStatelessDone = errors.New("the stateless request was answered or its client went away")

func (c *statelessConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	c.mu.Lock()
	first := !c.read
	c.read = true
	c.mu.Unlock()
	if first {
		return c.req, nil
	}
	select {
	case <-c.done:
	case <-c.reqDone:
	case <-ctx.Done():
	}
	return nil, io.EOF
}

func (c *statelessConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errStatelessDone
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		if m.ID != c.req.ID {
			return fmt.Errorf("an answer to %v is not for the stateless request %v", m.ID.Raw(), c.req.ID.Raw())
		}
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return err
		}
		if c.streamed {
			c.event(b)
		} else {
			c.w.Header().Set("Content-Type", "application/json")
			c.w.WriteHeader(http.StatusOK)
			c.w.Write(b)
		}
		c.closed, c.answered = true, true
		close(c.done)
		return nil
	case *jsonrpc.Request:
		if m.IsCall() {
			return fmt.Errorf("a %s request cannot reach a stateless client", m.Method)
		}
		if !c.stream {
			return nil // a JSON answer carries no notifications
		}
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return err
		}
		if !c.streamed {
			c.w.Header().Set("Content-Type", "text/event-stream")
			c.w.Header().Set("Cache-Control", "no-cache")
			c.w.WriteHeader(http.StatusOK)
			c.streamed = true
		}
		c.event(b)
		return nil
	}
	return fmt.Errorf("unexpected message %T", msg)
}

// event writes one event of the stream and flushes it.
func (c *statelessConn) event(b []byte) {
	fmt.Fprintf(c.w, "event: message\ndata: %s\n\n", b)
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (c *statelessConn) Close() error {
	c.finish()
	return nil
}

// finish ends the conn: later writes fail (the handler has returned, or
// is about to). It reports whether anything was written to the response.
func (c *statelessConn) finish() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		c.closed = true
		close(c.done)
	}
	return c.answered || c.streamed
}
