// Package proxy is the MCP proxy behind `mcpx-policy proxy`: it joins an
// MCP client connection to an MCP server connection (transports of the
// official MCP Go SDK) and forwards every JSON-RPC message unchanged, except
// that it
//   - drops hidden tools from tools/list (and, optionally, publishes closed
//     input schemas);
//   - keeps the server's own tool list as the catalog the policy classifies
//     calls with, and re-checks the config against it when the server
//     announces notifications/tools/list_changed;
//   - decides every tools/call before the server sees it: a deny is
//     answered by the proxy, an ask becomes an elicitation/create to the
//     client (or ConfirmationUnavailable), a warn adds the rider to the
//     result;
//   - puts every allowed write through the unknown-outcome ledger's
//     dispatch lifecycle.
//
// It works at the message level rather than re-serving typed SDK objects so
// that everything it does not gate — resources, prompts, sampling,
// elicitations of the server, progress, logging, methods newer than this
// build — passes through byte for byte.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a proxy session.
type Options struct {
	// Engine decides the calls. Required.
	Engine *mcpxpolicy.Engine
	// Server is the server's name in the config. Required.
	Server string
	// PublishClosedSchemas stamps additionalProperties: false into the
	// input schemas tools/list returns wherever a schema took no position.
	PublishClosedSchemas bool
	// CallTimeout bounds how long a write waits for the server's answer;
	// past it the write's outcome is unknown. 0 means no bound.
	CallTimeout time.Duration
	// Logger receives what the proxy does (decisions, warnings, unknown
	// outcomes); nil discards.
	Logger *slog.Logger
}

// ownIDPrefix starts the ids of requests the proxy itself makes (its own
// tools/list, elicitation/create). A peer's ids are numbers in every SDK
// known; a string id with this prefix from a peer would be misrouted.
const ownIDPrefix = "mcpx-policy/"

// ErrServerGone is returned by Run when the server's connection ended
// first.
var ErrServerGone = errors.New("the MCP server's connection closed")

// session is one client joined to one server.
type session struct {
	opts   Options
	log    *slog.Logger
	client mcp.Connection
	server mcp.Connection
	ctx    context.Context

	mu        sync.Mutex
	pending   map[jsonrpc.ID]*pending               // client requests at the server
	deciding  map[jsonrpc.ID]context.CancelFunc     // tools/call being decided
	own       map[jsonrpc.ID]chan *jsonrpc.Response // the proxy's own requests
	nextID    int
	elicit    bool  // the client declared form elicitation
	ready     bool  // the client sent notifications/initialized
	serverErr error // set once the server's connection ended

	cat catalog
}

// pending is a client request the server has not answered yet.
type pending struct {
	method   string
	call     string               // tools/call: the tool
	complete bool                 // tools/list without a cursor
	dispatch *mcpxpolicy.Dispatch // an allowed write
	ignored  []string             // warn: the rider's keys
	timer    *time.Timer
}

// Run proxies between client and server until either side's connection
// ends or ctx is done, then closes both. It returns nil when the client
// ended the session, ErrServerGone (wrapped) when the server did, and
// ctx's error when ctx ended it. Writes in flight when the server's side
// ends become unknown-outcome entries.
func Run(ctx context.Context, opts Options, client, server mcp.Connection) error {
	if opts.Engine == nil || opts.Server == "" {
		return errors.New("proxy: Engine and Server are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{
		opts: opts, log: log.With("server", opts.Server), client: client, server: server, ctx: ctx,
		pending:  map[jsonrpc.ID]*pending{},
		deciding: map[jsonrpc.ID]context.CancelFunc{},
		own:      map[jsonrpc.ID]chan *jsonrpc.Response{},
	}
	serverDone := make(chan error, 1)
	go func() { serverDone <- s.serverLoop() }()
	clientDone := make(chan error, 1)
	go func() { clientDone <- s.clientLoop() }()
	var err error
	select {
	case err = <-clientDone:
		// The client is gone: close the server's input and let it finish
		// what it was doing; answers that still come settle their writes.
		server.Close()
		<-serverDone
		err = nil
	case err = <-serverDone:
		client.Close()
		<-clientDone
	case <-ctx.Done():
		err = ctx.Err()
		server.Close()
		<-serverDone
		client.Close()
		<-clientDone
	}
	return err
}

// clientLoop reads what the client sends.
func (s *session) clientLoop() error {
	for {
		msg, err := s.client.Read(s.ctx)
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			switch {
			case !m.IsCall():
				s.clientNotification(m)
			case m.Method == "server/discover":
				// The stateless protocol (2026-07-28, SEP-2575) carries client
				// capabilities per request and replaces server-to-client
				// requests such as elicitation; the proxy gates sessions of
				// the initialize protocol. Declining discovery makes clients
				// fall back to initialize.
				s.replyError(m.ID, jsonrpc.CodeMethodNotFound, "mcpx-policy proxy: server/discover is not supported; initialize instead")
			case m.Method == "tools/call":
				ctx, cancel := context.WithCancel(s.ctx)
				s.mu.Lock()
				s.deciding[m.ID] = cancel
				s.mu.Unlock()
				go s.toolsCall(ctx, m)
			default:
				p := &pending{method: m.Method}
				if m.Method == "initialize" {
					s.noteInitialize(m.Params)
				}
				if m.Method == "tools/list" {
					p.complete = !hasCursor(m.Params)
				}
				s.forward(m, p)
			}
		case *jsonrpc.Response:
			if s.deliverOwn(m) {
				continue
			}
			// An answer to a request of the server (sampling, roots,
			// elicitation, ping).
			if err := s.server.Write(s.ctx, m); err != nil {
				s.log.Warn("forwarding a client answer to the server failed", "err", err)
			}
		}
	}
}

// serverLoop reads what the server sends; when its connection ends, every
// request still at the server is answered (writes as unknown outcomes).
func (s *session) serverLoop() error {
	for {
		msg, err := s.server.Read(s.ctx)
		if err != nil {
			s.serverGone(err)
			return fmt.Errorf("%w: %v", ErrServerGone, err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.Method == "notifications/tools/list_changed" {
				s.cat.invalidate()
				s.mu.Lock()
				ready := s.ready
				s.mu.Unlock()
				s.log.Debug("the server's tool list changed", "initialized", ready)
				if ready {
					// Before the session is initialized the list is fetched
					// when the first call needs it.
					go s.recheck()
				}
			}
			if err := s.client.Write(s.ctx, m); err != nil {
				s.log.Warn("forwarding to the client failed", "method", m.Method, "err", err)
			}
		case *jsonrpc.Response:
			if s.deliverOwn(m) {
				continue
			}
			s.mu.Lock()
			p := s.pending[m.ID]
			delete(s.pending, m.ID)
			s.mu.Unlock()
			if p == nil {
				// Answered already: the call timed out or was cancelled.
				s.log.Debug("dropping an answer to a request no longer pending", "id", m.ID.Raw())
				continue
			}
			if p.dispatch != nil {
				// Settling is durable (an fsync): do not hold up other answers.
				go s.answer(p, m)
			} else {
				s.answer(p, m)
			}
		}
	}
}

// answer ends a pending request with the server's answer.
func (s *session) answer(p *pending, m *jsonrpc.Response) {
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.dispatch != nil {
		// The answer is definite: settle after passing it on. Should the
		// proxy die in between, the marker left behind reads as an unknown
		// outcome — conservative, and one fsync off every write's latency.
		defer func() {
			if err := p.dispatch.Settle(); err != nil {
				s.log.Error("settling a write in the ledger failed (it is retried)", "tool", p.call, "err", err)
			}
		}()
	}
	if m.Error == nil {
		switch {
		case p.method == "tools/list":
			m = s.filterToolsList(m, p.complete)
		case p.method == "tools/call" && len(p.ignored) > 0:
			if r, err := addRider(m.Result, p.ignored); err == nil {
				m = &jsonrpc.Response{ID: m.ID, Result: r}
			} else {
				s.log.Warn("rider not added", "tool", p.call, "err", err)
			}
		}
	}
	s.reply(m)
}

// forward sends a client request to the server, tracked as pending. A
// write's dispatch is marked sent before the bytes go out.
func (s *session) forward(m *jsonrpc.Request, p *pending) {
	s.mu.Lock()
	if err := s.serverErr; err != nil {
		s.mu.Unlock()
		if p.dispatch != nil {
			p.dispatch.Abort()
		}
		s.replyError(m.ID, jsonrpc.CodeInternalError, "the MCP server is gone: "+err.Error())
		return
	}
	if p.dispatch != nil && s.opts.CallTimeout > 0 {
		p.timer = time.AfterFunc(s.opts.CallTimeout, func() { s.timeout(m.ID) })
	}
	s.pending[m.ID] = p
	s.mu.Unlock()
	if p.dispatch != nil {
		p.dispatch.Sent()
	}
	if err := s.server.Write(s.ctx, m); err != nil {
		s.mu.Lock()
		_, still := s.pending[m.ID]
		delete(s.pending, m.ID)
		s.mu.Unlock()
		if !still {
			return
		}
		if p.dispatch != nil {
			s.unknown(m.ID, p, "writing the request to the server failed: "+err.Error())
			return
		}
		s.replyError(m.ID, jsonrpc.CodeInternalError, "forwarding to the MCP server failed: "+err.Error())
	}
}

// clientNotification forwards a client notification; a cancellation of a
// call still being decided stops it there, and one of a write already
// sent makes the write's outcome unknown.
func (s *session) clientNotification(m *jsonrpc.Request) {
	if m.Method == "notifications/initialized" {
		s.mu.Lock()
		s.ready = true
		s.mu.Unlock()
	}
	if m.Method == "notifications/cancelled" {
		var p struct {
			RequestID any `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil && id.IsValid() {
				s.mu.Lock()
				cancel, deciding := s.deciding[id]
				delete(s.deciding, id)
				pend := s.pending[id]
				if pend != nil && pend.dispatch != nil {
					delete(s.pending, id)
				} else {
					pend = nil
				}
				s.mu.Unlock()
				if deciding {
					// The server never saw it: nothing to forward.
					cancel()
					return
				}
				if pend != nil {
					if pend.timer != nil {
						pend.timer.Stop()
					}
					s.recordUnknown(pend, "cancelled by the client after the request was sent")
				}
			}
		}
	}
	if err := s.server.Write(s.ctx, m); err != nil {
		s.log.Warn("forwarding a notification to the server failed", "method", m.Method, "err", err)
	}
}

// timeout ends a write that got no answer within CallTimeout.
func (s *session) timeout(id jsonrpc.ID) {
	s.mu.Lock()
	p := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if p == nil {
		return
	}
	cause := fmt.Sprintf("no answer within %s", s.opts.CallTimeout)
	s.unknown(id, p, cause)
	// Tell the server to stop, as a client that gives up would.
	n, err := notification("notifications/cancelled", map[string]any{"requestId": id.Raw(), "reason": "mcpx-policy: " + cause})
	if err == nil {
		s.server.Write(s.ctx, n)
	}
}

// unknown records a write's lost outcome and answers the client with it.
func (s *session) unknown(id jsonrpc.ID, p *pending, cause string) {
	entry := s.recordUnknown(p, cause)
	s.replyResult(id, unknownOutcomeResult(s.opts.Server, p.call, entry, cause))
}

func (s *session) recordUnknown(p *pending, cause string) string {
	if err := p.dispatch.Unknown(cause); err != nil {
		s.log.Error("recording an unknown outcome failed (it is retried; writes stay blocked)", "tool", p.call, "err", err)
	}
	s.log.Warn("write outcome unknown; further writes to this server are refused until cleared",
		"tool", p.call, "id", p.dispatch.ID(), "cause", cause, "clear", "mcpx-policy writes clear "+s.opts.Server+" --id "+p.dispatch.ID())
	return p.dispatch.ID()
}

// serverGone answers everything still at the server once its connection
// has ended.
func (s *session) serverGone(err error) {
	s.mu.Lock()
	s.serverErr = err
	pend := s.pending
	s.pending = map[jsonrpc.ID]*pending{}
	own := s.own
	s.own = map[jsonrpc.ID]chan *jsonrpc.Response{}
	s.mu.Unlock()
	for _, ch := range own {
		close(ch)
	}
	cause := "the server's connection closed while the call was in flight (the process exited or the pipe broke): " + err.Error()
	for id, p := range pend {
		if p.timer != nil {
			p.timer.Stop()
		}
		if p.dispatch != nil {
			s.unknown(id, p, cause)
			continue
		}
		s.replyError(id, jsonrpc.CodeInternalError, "the MCP server's connection closed before it answered: "+err.Error())
	}
}

// request sends a request of the proxy's own to conn and waits for the
// answer.
func (s *session) request(ctx context.Context, conn mcp.Connection, method string, params any) (*jsonrpc.Response, error) {
	s.mu.Lock()
	if conn == s.server && s.serverErr != nil {
		s.mu.Unlock()
		return nil, ErrServerGone
	}
	s.nextID++
	id, _ := jsonrpc.MakeID(ownIDPrefix + strconv.Itoa(s.nextID))
	ch := make(chan *jsonrpc.Response, 1)
	s.own[id] = ch
	s.mu.Unlock()
	drop := func() {
		s.mu.Lock()
		delete(s.own, id)
		s.mu.Unlock()
	}
	raw, err := json.Marshal(params)
	if err != nil {
		drop()
		return nil, err
	}
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		drop()
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, ErrServerGone
		}
		if r.Error != nil {
			return nil, r.Error
		}
		return r, nil
	case <-ctx.Done():
		drop()
		if conn == s.client {
			n, err := notification("notifications/cancelled", map[string]any{"requestId": id.Raw()})
			if err == nil {
				conn.Write(s.ctx, n)
			}
		}
		return nil, ctx.Err()
	}
}

// deliverOwn hands an answer to one of the proxy's own requests to its
// waiter.
func (s *session) deliverOwn(m *jsonrpc.Response) bool {
	if id, ok := m.ID.Raw().(string); !ok || len(id) < len(ownIDPrefix) || id[:len(ownIDPrefix)] != ownIDPrefix {
		return false
	}
	s.mu.Lock()
	ch := s.own[m.ID]
	delete(s.own, m.ID)
	s.mu.Unlock()
	if ch != nil {
		ch <- m
	}
	return true
}

func (s *session) reply(m *jsonrpc.Response) {
	if err := s.client.Write(s.ctx, m); err != nil {
		s.log.Warn("answering the client failed", "id", m.ID.Raw(), "err", err)
	}
}

func (s *session) replyResult(id jsonrpc.ID, result any) {
	raw, err := json.Marshal(result)
	if err != nil {
		s.replyError(id, jsonrpc.CodeInternalError, "mcpx-policy: encoding the answer failed")
		return
	}
	s.reply(&jsonrpc.Response{ID: id, Result: raw})
}

func (s *session) replyError(id jsonrpc.ID, code int64, msg string) {
	s.reply(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
}

func notification(method string, params any) (*jsonrpc.Request, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return &jsonrpc.Request{Method: method, Params: raw}, nil
}

// noteInitialize records whether the client can answer elicitation/create
// with a form: capabilities.elicitation present, empty (form by default)
// or with "form".
func (s *session) noteInitialize(params json.RawMessage) {
	var p struct {
		Capabilities struct {
			Elicitation map[string]json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	e := p.Capabilities.Elicitation
	_, form := e["form"]
	_, url := e["url"]
	s.mu.Lock()
	s.elicit = e != nil && (form || !url)
	s.mu.Unlock()
}

func hasCursor(params json.RawMessage) bool {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	return json.Unmarshal(params, &p) == nil && p.Cursor != nil && *p.Cursor != ""
}
