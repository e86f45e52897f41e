package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpx/mcpx-policy/internal/loopback"
)

// StartFunc starts the MCP server (a process) and connects to it
// (StartCommand).
type StartFunc func(ctx context.Context) (Conn, error)

const sessionIDHeader = "Mcp-Session-Id"

var crossOrigin = http.NewCrossOriginProtection()

// HTTPHandler serves the proxy to MCP clients over Streamable HTTP (the
// SDK's StreamableServerTransport, one per session). Each session gets its
// own server process from start, since an MCP session is stateful end to
// end; DELETE, the server's exit, or its client going away ends it: no
// request of the session in progress and no stream open for the idle
// timeout (IdleTimeout), or for StreamGrace after its standalone stream
// closed. Messages the proxy or the server send outside a call's answer
// (elicitation/create, progress) go out on the session's standalone SSE
// stream (GET). A call's answer comes on its POST's stream, which is
// primed and resumable with Last-Event-ID (http_resume.go).
type HTTPHandler struct {
	ctx   context.Context
	opts  Options
	start StartFunc
	log   *slog.Logger
	idle  time.Duration
	grace time.Duration
	// The bounds (http_bounds.go).
	maxSessions, maxUninitialized int
	initWait                      time.Duration
	bodies                        *budget
	shared                        *statelessShared // what its stateless requests share
	discover                      bool             // stateless server/discover goes to the server (DiscoverUpstream)

	mu        sync.Mutex
	sessions  map[string]*httpSession
	starting  int // sessions whose server is being started
	stateless int // stateless requests being served (each holds a server)
	// spare is a server started ahead for the next stateless request
	// (StartAhead); spareStarting: one is being started. Each holds a
	// place among MaxSessions.
	spare         *spareServer
	spareStarting bool
	ahead         bool
	closing       bool
	passAuth      bool // the client's bearer token goes on start's ctx (PassAuthorization)
	wg            sync.WaitGroup
}

type httpSession struct {
	transport *mcp.StreamableServerTransport
	conn      mcp.Connection // the client's side, as the proxy reads it
	cancel    context.CancelFunc
	done      <-chan struct{} // closed when the session ends
	replay    *replayStore    // its resumable POST streams (http_resume.go)
	// listening counts the standalone streams (GET without Last-Event-ID)
	// being served: with none, the client has nowhere to receive what is
	// sent outside a call's answer.
	listening *atomic.Int32

	mu          sync.Mutex
	active      int         // requests of the session in progress, streams open
	timer       *time.Timer // ends the session once nothing is active
	initialized bool        // the client sent notifications/initialized
	initTimer   *time.Timer // ends the session if it does not
}

// DefaultIdleTimeout is how long a session with nothing in progress and
// no stream open lives when IdleTimeout is not given.
const DefaultIdleTimeout = 30 * time.Minute

// StreamGrace is how long a session lives after its last open stream
// closed (the client went away, or is reconnecting) with nothing else in
// progress, when the idle timeout is not shorter.
const StreamGrace = 10 * time.Second

// HTTPOption configures an HTTPHandler.
type HTTPOption func(*HTTPHandler)

// IdleTimeout ends a session when, for d, none of its requests was in
// progress and no stream of it was open (default DefaultIdleTimeout). Its
// server is then stopped as when a stdio client goes away.
func IdleTimeout(d time.Duration) HTTPOption {
	return func(h *HTTPHandler) { h.idle = d }
}

// NewHTTPHandler returns the handler; sessions end when ctx does.
func NewHTTPHandler(ctx context.Context, opts Options, start StartFunc, options ...HTTPOption) *HTTPHandler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &HTTPHandler{ctx: ctx, opts: opts, start: start, log: log, sessions: map[string]*httpSession{}, idle: DefaultIdleTimeout,
		maxSessions: DefaultMaxSessions, maxUninitialized: DefaultMaxUninitialized, initWait: DefaultInitTimeout, bodies: &budget{max: DefaultBodyBudget},
		shared: newStatelessShared()}
	for _, o := range options {
		o(h)
	}
	h.grace = min(h.idle, StreamGrace)
	return h
}

// enter marks a request of s in progress (a POST being answered, a GET
// stream open): the session does not time out meanwhile.
func (s *httpSession) enter() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active++
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// leave ends a request of s; when none is left in progress, the session
// ends after wait unless another arrives first.
func (s *httpSession) leave(wait time.Duration, end func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active--
	if s.active > 0 {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(wait, func() {
		s.mu.Lock()
		current := s.timer == t && s.active == 0
		s.mu.Unlock()
		if current {
			end()
		}
	})
	s.timer = t
}

// serve passes a request to the session's transport, keeping the session
// alive while it is in progress. A GET is the standalone stream, or the
// resumption of a POST's stream (Last-Event-ID): once it closes, the
// session ends after the grace period unless the client comes back; after
// any other request, after the idle timeout. A POST carrying a call gets
// a resumable stream (http_resume.go).
func (h *HTTPHandler) serve(id string, s *httpSession, w http.ResponseWriter, r *http.Request, msg jsonrpc.Message) {
	s.enter()
	wait := h.idle
	if r.Method == http.MethodGet {
		wait = h.grace
	}
	defer s.leave(wait, func() { h.gone(id, s, wait) })
	r.Header.Del(streamHeader)
	req, call := msg.(*jsonrpc.Request)
	switch {
	case r.Method == http.MethodGet && len(r.Header.Values(lastEventIDHeader)) > 0:
		h.resume(s, w, r)
	case call && req.IsCall():
		h.serveResumable(s, w, r, req.ID)
	case r.Method == http.MethodGet:
		s.listening.Add(1)
		defer s.listening.Add(-1)
		s.transport.ServeHTTP(w, r)
	default:
		s.transport.ServeHTTP(w, r)
	}
}

// gone ends a session whose client went away: its connection is closed, so
// the proxy stops the server as when a stdio client goes away (answers
// still arriving settle their writes; writes left without an answer become
// unknown outcomes).
func (h *HTTPHandler) gone(id string, s *httpSession, after time.Duration) {
	h.log.Info("session idle; its client is gone", "session", id, "idle", after)
	s.conn.Close()
}

// ServeHTTP implements http.Handler. Every POST body is checked strictly
// (decodeFrame) before the SDK's transport reads it: a refused body is a
// 400 whose body is the JSON-RPC error, -32602 with the request's id when
// it could be read.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// DNS rebinding: a request that reached a loopback listener must name a
	// loopback host; and no cross-origin browser request gets through.
	if loopback.Rebound(r) {
		http.Error(w, fmt.Sprintf("forbidden: Host %q is not a loopback name", r.Host), http.StatusForbidden)
		return
	}
	if err := crossOrigin.Check(r); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFrame)
	var msg jsonrpc.Message
	if r.Method == http.MethodPost {
		body, taken, err := h.readBody(w, r)
		defer h.bodies.give(taken)
		if errors.Is(err, errBodyBudget) {
			h.log.Warn("refused a POST: the bodies in progress hold the whole budget", "budget", h.bodies.max)
			unavailable(w, "too many bytes of request bodies in progress")
			return
		}
		if err != nil {
			http.Error(w, "reading the body failed", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if msg, err = decodeFrame(body); err != nil {
			h.refuse(w, err)
			return
		}
	}
	id := r.Header.Get(sessionIDHeader)
	if id == "" {
		if r.Method != http.MethodPost {
			http.Error(w, "Mcp-Session-Id is required", http.StatusBadRequest)
			return
		}
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case ok && statelessRequest(r, req):
			h.serveStateless(w, r, req)
		case !ok:
			http.Error(w, "a session starts with an initialize request", http.StatusBadRequest)
		case req.Method == "initialize":
			h.newSession(w, r, req)
		case req.Method == "server/discover" && req.IsCall():
			// As on stdio: decline the stateless protocol so the client
			// initializes, without starting a server for it.
			writeRPC(w, http.StatusOK, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
				Code: jsonrpc.CodeMethodNotFound, Message: "mcpx-policy proxy: server/discover is not supported; initialize instead"}})
		default:
			http.Error(w, "Mcp-Session-Id is required (a session starts with initialize)", http.StatusBadRequest)
		}
		return
	}
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == "notifications/initialized" {
		s.setInitialized()
	}
	switch r.Method {
	case http.MethodGet, http.MethodPost:
		h.serve(id, s, w, r, msg)
	case http.MethodDelete:
		h.end(id)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// refuse answers a POST body that failed the strict check.
func (h *HTTPHandler) refuse(w http.ResponseWriter, err error) {
	h.log.Warn("refused a POST body", "err", err)
	var id jsonrpc.ID
	var fe *FrameError
	if errors.As(err, &fe) {
		id, err = fe.ID, fe.Err
	}
	writeRPC(w, http.StatusBadRequest, &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code: jsonrpc.CodeInvalidParams, Message: "mcpx-policy: refused: " + err.Error()}})
}

func writeRPC(w http.ResponseWriter, status int, m *jsonrpc.Response) {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		http.Error(w, "encoding the answer failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

func (h *HTTPHandler) newSession(w http.ResponseWriter, r *http.Request, msg *jsonrpc.Request) {
	if why := h.reserve(); why != "" {
		h.log.Warn("refused a new session", "why", why)
		unavailable(w, why)
		return
	}
	started := false
	defer func() {
		if !started {
			h.unreserve()
		}
	}()
	id := rand.Text()
	replay := newReplayStore()
	t := &mcp.StreamableServerTransport{SessionID: id, EventStore: replay}
	ctx, cancel := context.WithCancel(h.ctx)
	client, err := t.Connect(ctx)
	if err != nil {
		cancel()
		http.Error(w, "connecting the session failed", http.StatusInternalServerError)
		return
	}
	server, err := h.start(h.startContext(ctx, r))
	if err != nil {
		cancel()
		client.Close()
		h.log.Error("starting the MCP server failed", "err", err)
		http.Error(w, "starting the MCP server failed", http.StatusBadGateway)
		return
	}
	s := &httpSession{transport: t, conn: client, cancel: cancel, done: ctx.Done(), replay: replay, listening: new(atomic.Int32)}
	// A session must be initialized within InitTimeout of its
	// initialize's answer (and of its start, should that answer never
	// come).
	s.initTimer = time.AfterFunc(h.initWait, func() { h.uninitialized(id, s) })
	h.mu.Lock()
	h.starting--
	h.sessions[id] = s
	h.mu.Unlock()
	started = true
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		err := Run(ctx, h.opts, resumeConn{checkedConn{client}, replay, s.listening}, server)
		h.log.Info("session ended", "session", id, "err", err)
		h.end(id)
	}()
	h.serve(id, s, w, r, msg)
	// The client has had its initialize answer: it has InitTimeout from
	// now to send notifications/initialized.
	s.mu.Lock()
	if !s.initialized {
		s.initTimer.Reset(h.initWait)
	}
	s.mu.Unlock()
}

// PassAuthorization puts the bearer token of the request that opens a
// session (its initialize) or of a stateless request on the context its
// server is started with, for a remote upstream that passes it on
// (RemoteOptions.PassClientAuthorization). The proxy does not check the
// token: the server does. No server is started ahead (StartAhead) with
// it, since a server is then its client's.
func PassAuthorization() HTTPOption {
	return func(h *HTTPHandler) { h.passAuth = true }
}

// startContext is the context a server for the client of r is started
// with.
func (h *HTTPHandler) startContext(ctx context.Context, r *http.Request) context.Context {
	if !h.passAuth {
		return ctx
	}
	return withClientToken(ctx, bearerToken(r.Header))
}

func (h *HTTPHandler) end(id string) {
	h.mu.Lock()
	s := h.sessions[id]
	delete(h.sessions, id)
	h.mu.Unlock()
	if s != nil {
		s.cancel()
	}
}

// Close ends every session and waits for their servers to be closed.
func (h *HTTPHandler) Close() {
	h.mu.Lock()
	h.closing = true
	ids := make([]string, 0, len(h.sessions))
	for id := range h.sessions {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.end(id)
	}
	h.wg.Wait()
	h.mu.Lock()
	spare := h.dropSpareLocked()
	h.mu.Unlock()
	if spare != nil {
		spare.stop()
	}
}
