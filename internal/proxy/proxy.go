// Package proxy is the MCP proxy behind `mcpx-policy proxy`: it joins an
// MCP client connection to an MCP server connection (transports of the
// official MCP Go SDK) and forwards every JSON-RPC message unchanged, except
// that it
//   - drops hidden tools from tools/list, and tools whose definition changed
//     since it was pinned (and, optionally, publishes closed input schemas
//     and the argument rules);
//   - keeps the server's own tool list as the catalog the policy classifies
//     calls with, and re-checks the config against it when the server
//     announces notifications/tools/list_changed;
//   - decides every tools/call before the server sees it: a deny is
//     answered by the proxy, an ask becomes an elicitation/create to the
//     client (or ConfirmationUnavailable), a warn adds the rider to the
//     result;
//   - puts every allowed write through the unknown-outcome ledger's
//     dispatch lifecycle, and keeps one the server runs as an MCP task in
//     flight until the task ends (tasks.go);
//   - holds what each peer can make it hold within bounds (bounds.go,
//     http_bounds.go).
//
// Every frame from either side is checked strictly before anything reads
// it (Conn, decodeFrame), a tools/call is forwarded with exactly the params
// it was judged on, and the proxy's own requests carry unguessable ids
// whose answers count only from the peer they went to (docs/proxy.md,
// "Strict decoding").
//
// It works at the message level rather than re-serving typed SDK objects so
// that everything it does not gate — resources, prompts, sampling,
// elicitations of the server, progress, logging, methods newer than this
// build — passes through with its params and results byte for byte.
package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	// PublishRules adds the argument rules that apply to a tool to the
	// inputSchema tools/list returns (publishRules); a rule that cannot be
	// placed exactly is left out and logged.
	PublishRules bool
	// CallTimeout bounds how long a write waits for the server's answer;
	// past it the write's outcome is unknown. 0 means no bound.
	CallTimeout time.Duration
	// TaskTimeout bounds how long a write the server runs as a task may
	// take to reach its terminal status (the task's own ttl, when
	// shorter, bounds it too); past it the write's outcome is unknown. 0
	// means DefaultTaskTimeout.
	TaskTimeout time.Duration
	// Commands spells the mcpx-policy commands the proxy's answers and log
	// lines name (clearing an unknown outcome) with the state dir and
	// config the process was given, so that they run as printed.
	Commands mcpxpolicy.Commands
	// Logger receives what the proxy does (decisions, warnings, unknown
	// outcomes); nil discards.
	Logger *slog.Logger
	// OnDecision, when set, is given every tools/call of a tool the
	// server lists (a hidden one too), the policy's decision, redacted (an
	// ask's, however a person answered it), and whether the call was
	// dispatched — sent on to the server —, once that is known: just
	// before it is sent, or when it is refused or dropped (proxy
	// --record).
	OnDecision func(call decision.Call, shown mcpxpolicy.Redacted, dispatched bool)
	// OnAskAnswered, when set, is told what the client got for each ask
	// once it ended: an allow (a person approved it), a deny and its
	// code (ConfirmationDeclined, or ConfirmationUnavailable when the ask
	// could not be put to a person in band: held out of band for one, or
	// not held at all). The metrics count it (ask_answers_total).
	OnAskAnswered func(outcome decision.Outcome, code decision.Code)
	// DecisionLog, when set, is given the same calls and decisions as
	// OnDecision, first (proxy --decision-log). An error refuses the call,
	// unsent: a decision that must be logged is not acted on unlogged.
	DecisionLog func(decision.Call, mcpxpolicy.Redacted) error
	// ToolsMaxAge bounds how old the server's tool list a call is judged
	// with may be: a list whose listing began longer ago is fetched again
	// first. Whatever it is, a call is judged with a list fetched after the
	// last notifications/tools/list_changed the proxy read before the call
	// came. 0 (the default): a 2026-07-28 client's call is judged with a
	// list fetched for it (a 2026-07-28 server announces changes only to
	// subscribed clients), an older client's with the list kept until the
	// server announces a change (docs/proxy.md, "The catalog").
	ToolsMaxAge time.Duration

	// now and after are the clock (tests set them; nil: the time
	// package's).
	now   func() time.Time
	after func(time.Duration) <-chan time.Time

	// shared is what the stateless requests of one HTTP handler share
	// (stateless.go); nil for every other session.
	shared *statelessShared
}

// ErrServerGone is returned by Run when the server's connection ended
// first.
var ErrServerGone = errors.New("the MCP server's connection closed")

// session is one client joined to one server.
type session struct {
	opts   Options
	log    *slog.Logger
	client Conn
	server Conn
	ctx    context.Context
	// caller is who this session's asks are held for, as the approval
	// store counts them (decision.Call.Caller): "mcp:" and a random name,
	// so that one client's flood of asks takes its own quota, not another
	// session's.
	caller string

	mu        sync.Mutex
	pending   map[jsonrpc.ID]*pending           // client requests at the server
	deciding  map[jsonrpc.ID]context.CancelFunc // tools/call being decided
	own       map[jsonrpc.ID]*ownRequest        // the proxy's own requests
	tasks     map[string]*sessionTask           // tasks this session's requests created, by task id
	meta      map[string]json.RawMessage        // the client's MCP 2026-07-28 request metadata, for the proxy's own requests
	elicit    bool                              // the client declared form elicitation
	elicitURL bool                              // the client declared URL elicitation
	ready     bool                              // the client sent notifications/initialized
	// relisting: a tools/list after list_changed is under way;
	// relistAgain: another notification came meanwhile (relist).
	relisting, relistAgain bool
	serverErr              error // set once the server's connection ended
	toldNoStream           bool  // writeFailed logged a notification with no stream to carry it

	cat catalog

	// held are the asks answered with input_required, waiting for their
	// retry (Options.shared, else the session's own).
	held *heldAsks

	// idle hands a tools/call to a decider waiting for one;
	// idleDeciders counts those (decider).
	idle         chan func()
	idleDeciders atomic.Int32

	// calls are the tools/call being decided, and ledgerOps the ledger
	// writes running off the readers' goroutines; Run waits for both
	// before it returns.
	calls     sync.WaitGroup
	ledgerOps sync.WaitGroup
}

// pending is a client request the server has not answered yet.
type pending struct {
	method   string
	call     string // tools/call: the tool
	complete bool   // tools/list without a cursor
	listSeq  uint64 // and its listing (catalog.begin)
	listAt   time.Time
	dispatch *mcpxpolicy.Dispatch // an allowed write
	ignored  []string             // warn: the rider's keys
	// shadow is the decision of a call shadow mode let through: its
	// result carries the enforced decision in _meta (mcpgate.AddShadow).
	shadow *mcpxpolicy.Redacted
	// outputSchema is the tool's, as listed when the call was decided: the
	// rider goes into structuredContent only where it admits it.
	outputSchema json.RawMessage
	timer        *time.Timer
	task         string // tasks/get, tasks/result, tasks/cancel, tasks/update: the task, one of this session's
}

// Run proxies between client and server until either side's connection
// ends or ctx is done, then closes both. It returns nil when the client
// ended the session, ErrServerGone (wrapped) when the server did, and
// ctx's error when ctx ended it. Writes in flight when the server's side
// ends become unknown-outcome entries. A frame either connection refuses
// (a *FrameError) is answered or dropped as docs/proxy.md, "Strict
// decoding", says, and the session goes on.
func Run(ctx context.Context, opts Options, client, server Conn) error {
	if opts.Engine == nil || opts.Server == "" {
		return errors.New("proxy: Engine and Server are required")
	}
	if client == nil || server == nil {
		return errors.New("proxy: both connections are required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{
		opts: opts, log: log.With("server", opts.Server), client: client, server: server, ctx: ctx,
		caller:   mcpxpolicy.SurfaceMCP + ":" + rand.Text()[:13],
		pending:  map[jsonrpc.ID]*pending{},
		deciding: map[jsonrpc.ID]context.CancelFunc{},
		own:      map[jsonrpc.ID]*ownRequest{},
		tasks:    map[string]*sessionTask{},
		idle:     make(chan func()),
	}
	s.held = newHeldAsks()
	if opts.shared != nil {
		// A stateless request: its asks' retries come as requests of
		// their own, and its asks count against one caller's quota.
		s.held, s.caller = opts.shared.held, opts.shared.caller
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
		// Reap what is left of the server's side: a process that closed
		// its output, a remote session's exchanges.
		server.Close()
	case <-ctx.Done():
		err = ctx.Err()
		server.Close()
		<-serverDone
		client.Close()
		<-clientDone
	}
	// Calls still being decided stop; a write among them that was not
	// sent yet is aborted, as the server is gone.
	cancel()
	s.calls.Wait()
	s.ledgerOps.Wait()
	return err
}

// clientLoop reads what the client sends.
func (s *session) clientLoop() error {
	for {
		msg, err := s.client.Read(s.ctx)
		var fe *FrameError
		if errors.As(err, &fe) {
			s.refusedFromClient(fe)
			continue
		}
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			switch {
			case !m.IsCall():
				s.clientNotification(m)
			case ownID(m.ID):
				s.refuse(m.ID, "request ids starting with "+ownIDPrefix+" are reserved for the proxy's own requests")
			case s.inFlight(m.ID):
				s.refuse(m.ID, fmt.Sprintf("request id %v is already in use by a request in flight", m.ID.Raw()))
			case m.Method == "tools/call" && s.deciders() >= maxDeciding:
				s.log.Warn("refused a tools/call: too many being decided", "id", m.ID.Raw())
				s.replyError(m.ID, jsonrpc.CodeInternalError, errBusy("calls being decided", maxDeciding))
			case m.Method == "tools/call":
				ctx, cancel := context.WithCancel(s.ctx)
				s.mu.Lock()
				s.deciding[m.ID] = cancel
				s.mu.Unlock()
				job := func() { s.toolsCall(ctx, m) }
				select {
				case s.idle <- job:
					// a decider that is done with its call takes it
				default:
					s.calls.Add(1)
					go func() {
						defer s.calls.Done()
						s.decider(job)
					}()
				}
			default:
				p := &pending{method: m.Method}
				switch m.Method {
				case "server/discover":
					// MCP 2026-07-28 carries the client's protocol and
					// capabilities in each request's _meta; discovery goes
					// to the server, which answers it or not (the client
					// then initializes).
					s.noteClientMeta(m.Params)
				case "initialize":
					if err := s.noteInitialize(m.Params); err != nil {
						s.refuse(m.ID, "initialize params: "+err.Error())
						continue
					}
					// A client that initializes speaks the version it
					// negotiates: the 2026-07-28 metadata of a discovery
					// it gave up on must not ride on the proxy's own
					// requests (a stateful HTTP server refuses them).
					s.mu.Lock()
					s.meta = nil
					s.mu.Unlock()
				case "tools/list":
					s.noteClientMeta(m.Params)
					cursor, err := hasCursor(m.Params)
					if err != nil {
						s.refuse(m.ID, "tools/list params: "+err.Error())
						continue
					}
					p.complete = !cursor
					if p.complete {
						p.listSeq, p.listAt = s.cat.begin(s.now())
					}
				default:
					if isTasksMethod(m.Method) && !s.taskRequest(m, p) {
						continue
					}
				}
				s.forward(m, p)
			}
		case *jsonrpc.Response:
			if s.ownReply(m, s.client) {
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

// maxIdleDeciders bounds the deciders of a session that wait for another
// call once done with theirs.
const maxIdleDeciders = 2

// decider runs job, a tools/call, then waits for another while fewer than
// maxIdleDeciders wait. A decision's evaluation grows its goroutine's
// stack to tens of KiB, a few copies each time from a new goroutine's
// few; a decider that stays keeps the stack it grew (until the garbage
// collector shrinks it).
func (s *session) decider(job func()) {
	for {
		job()
		if s.idleDeciders.Add(1) > maxIdleDeciders {
			s.idleDeciders.Add(-1)
			return
		}
		select {
		case job = <-s.idle:
			s.idleDeciders.Add(-1)
		case <-s.ctx.Done():
			s.idleDeciders.Add(-1)
			return
		}
	}
}

// deciders counts the tools/call being decided (only the client's reader
// adds to them).
func (s *session) deciders() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.deciding)
}

// inFlight reports whether a client request with this id is being decided
// or waits for the server: a second one would be confused with it.
func (s *session) inFlight(id jsonrpc.ID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, deciding := s.deciding[id]
	_, pending := s.pending[id]
	return deciding || pending
}

// refuse answers a client request the proxy will not pass on with
// invalid params (-32602).
func (s *session) refuse(id jsonrpc.ID, why string) {
	s.log.Warn("refused a client request", "id", id.Raw(), "why", why)
	s.replyError(id, jsonrpc.CodeInvalidParams, "mcpx-policy: refused: "+why)
}

// refusedFromClient handles a frame of the client that failed the strict
// check: a request is answered with -32602, an answer to an elicitation of
// the proxy counts as declined, anything else is dropped. Nothing of it
// reaches the server.
func (s *session) refusedFromClient(fe *FrameError) {
	switch {
	case fe.Request && fe.ID.IsValid():
		s.refuse(fe.ID, fe.Err.Error())
	case fe.ID.IsValid() && s.ownFailed(fe.ID, s.client):
		s.log.Warn("refused the client's answer to a request of the proxy", "id", fe.ID.Raw(), "err", fe.Err)
	default:
		s.log.Warn("dropped a frame of the client", "err", fe.Err)
	}
}

// serverLoop reads what the server sends; when its connection ends, every
// request still at the server is answered (writes as unknown outcomes).
func (s *session) serverLoop() error {
	for {
		msg, err := s.server.Read(s.ctx)
		var fe *FrameError
		if errors.As(err, &fe) {
			s.refusedFromServer(fe)
			continue
		}
		if err != nil {
			s.serverGone(err)
			return fmt.Errorf("%w: %v", ErrServerGone, err)
		}
		switch m := msg.(type) {
		case *jsonrpc.Request:
			if m.IsCall() && ownID(m.ID) {
				s.log.Warn("refused a server request with a reserved id", "id", m.ID.Raw(), "method", m.Method)
				s.writeServer(&jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: "mcpx-policy: refused: request ids starting with " + ownIDPrefix + " are reserved for the proxy's own requests"}})
				continue
			}
			if isTaskNotification(m.Method) && !s.taskNotification(m) {
				continue
			}
			if m.Method == "notifications/tools/list_changed" {
				s.cat.announce()
				s.mu.Lock()
				ready := s.ready
				s.mu.Unlock()
				s.log.Debug("the server's tool list changed", "initialized", ready)
				if ready {
					// Before the session is initialized the list is fetched
					// when the first call needs it.
					s.relist()
				}
			}
			if err := s.client.Write(s.ctx, m); err != nil {
				s.writeFailed("forwarding to the client failed", m.Method, err)
			}
		case *jsonrpc.Response:
			if s.ownReply(m, s.server) {
				continue
			}
			s.settle(m)
		}
	}
}

// settle ends the pending client request m answers.
func (s *session) settle(m *jsonrpc.Response) {
	s.mu.Lock()
	p := s.pending[m.ID]
	delete(s.pending, m.ID)
	s.mu.Unlock()
	if p == nil {
		// Answered already: the call timed out or was cancelled.
		s.log.Debug("dropping an answer to a request no longer pending", "id", m.ID.Raw())
		return
	}
	// A task handle is taken here, on the server's reader, so that the
	// task is known before any later frame speaks of it.
	if p.method == "tools/call" && m.Error == nil && s.taskCreated(p, m) {
		return
	}
	if p.dispatch != nil {
		// Settling is durable (an fsync): do not hold up other answers.
		s.ledgerOps.Add(1)
		go func() {
			defer s.ledgerOps.Done()
			s.answer(p, m)
		}()
	} else {
		s.answer(p, m)
	}
}

// refusedFromServer handles a frame of the server that failed the strict
// check: a request is answered with -32602; an answer to the proxy's own
// tools/list fails it; an answer to a client request becomes an error for
// the client (a write's outcome is then unknown); anything else is
// dropped. Nothing of it reaches the client.
func (s *session) refusedFromServer(fe *FrameError) {
	s.log.Warn("refused a frame of the server", "id", fe.ID.Raw(), "err", fe.Err)
	if !fe.ID.IsValid() {
		return
	}
	if fe.Request {
		s.writeServer(&jsonrpc.Response{ID: fe.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcpx-policy: refused: " + fe.Err.Error()}})
		return
	}
	if s.ownFailed(fe.ID, s.server) || ownID(fe.ID) {
		return
	}
	s.mu.Lock()
	p := s.pending[fe.ID]
	delete(s.pending, fe.ID)
	s.mu.Unlock()
	if p == nil {
		return
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	if p.dispatch != nil {
		s.unknown(fe.ID, p, "the server's answer was refused: "+fe.Err.Error())
		return
	}
	s.replyError(fe.ID, jsonrpc.CodeInternalError, "mcpx-policy: the MCP server's answer was refused: "+fe.Err.Error())
}

func (s *session) writeServer(m jsonrpc.Message) {
	if err := s.server.Write(s.ctx, m); err != nil {
		s.log.Warn("writing to the server failed", "err", err)
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
	if p.task != "" || p.method == "tasks/list" {
		m = s.taskAnswer(p, m)
	}
	if m.Error == nil {
		switch {
		case p.method == "tools/list":
			filtered, err := s.filterToolsList(m, p)
			if err != nil {
				// Never pass on a list that could not be filtered.
				s.log.Warn("refused the server's tools/list answer", "err", err)
				m = &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: "mcpx-policy: the MCP server's tools/list answer was refused: " + err.Error()}}
			} else {
				m = filtered
			}
		case p.method == "tools/call" && len(p.ignored) > 0:
			if r, err := mcpgate.AddRider(m.Result, p.ignored, p.outputSchema); err == nil {
				m = &jsonrpc.Response{ID: m.ID, Result: r}
			} else {
				s.log.Warn("rider not added", "tool", p.call, "err", err)
			}
		}
		if p.shadow != nil {
			m = &jsonrpc.Response{ID: m.ID, Result: s.withShadow(m.Result, p)}
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
	if len(s.pending) >= maxPending {
		s.mu.Unlock()
		if p.dispatch != nil {
			p.dispatch.Abort()
		}
		s.log.Warn("refused a request: too many wait for the server", "method", m.Method, "id", m.ID.Raw())
		s.replyError(m.ID, jsonrpc.CodeInternalError, errBusy("requests waiting for the server", maxPending))
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
// sent makes the write's outcome unknown. Only methods under
// "notifications/" pass: JSON-RPC lets a server run a request sent without
// an id (a tools/call among them), and the proxy gates calls by their id.
func (s *session) clientNotification(m *jsonrpc.Request) {
	if !strings.HasPrefix(m.Method, "notifications/") {
		s.log.Warn("dropped a client request without an id", "method", m.Method)
		return
	}
	if m.Method == "notifications/initialized" {
		s.mu.Lock()
		s.ready = true
		s.mu.Unlock()
	}
	if m.Method == "notifications/cancelled" {
		id, err := cancelledID(m.Params)
		if err != nil {
			s.log.Warn("dropped a cancellation the proxy cannot read", "err", err)
			return
		}
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
	result := mcpgate.UnknownOutcome(s.opts.Server, p.call, entry, cause, s.opts.Commands)
	if p.shadow != nil {
		if raw, err := json.Marshal(result); err == nil {
			s.reply(&jsonrpc.Response{ID: id, Result: s.withShadow(raw, p)})
			return
		}
	}
	s.replyResult(id, result)
}

// withShadow adds to the result of a call shadow mode let through the
// decision it would have had (mcpgate.AddShadow); a result it cannot add
// to (not a JSON object) goes as it is, and the log says so.
func (s *session) withShadow(result json.RawMessage, p *pending) json.RawMessage {
	r, err := mcpgate.AddShadow(result, *p.shadow)
	if err != nil {
		s.log.Warn("shadow decision not added to the result", "tool", p.call, "err", err)
		return result
	}
	return r
}

func (s *session) recordUnknown(p *pending, cause string) string {
	return s.lost(p.dispatch, p.call, cause)
}

// lost records a write's lost outcome and returns its ledger id.
func (s *session) lost(d *mcpxpolicy.Dispatch, tool, cause string) string {
	if err := d.Unknown(cause); err != nil {
		s.log.Error("recording an unknown outcome failed (it is retried; writes stay blocked)", "tool", tool, "err", err)
	}
	s.log.Warn("write outcome unknown; further writes to this server are refused until cleared",
		"tool", tool, "id", d.ID, "cause", cause, "clear", s.opts.Commands.WritesClear(s.opts.Server, d.ID, ""))
	return d.ID
}

// serverGone answers everything still at the server once its connection
// has ended.
func (s *session) serverGone(err error) {
	s.mu.Lock()
	s.serverErr = err
	pend := s.pending
	s.pending = map[jsonrpc.ID]*pending{}
	own := s.own
	s.own = map[jsonrpc.ID]*ownRequest{}
	s.mu.Unlock()
	for _, o := range own {
		close(o.ch)
	}
	cause := "the server's connection closed while the call was in flight (the process exited, the pipe broke or the remote session ended): " + err.Error()
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
	s.tasksGone(err)
}

// now is the session's clock.
func (s *session) now() time.Time {
	if s.opts.now != nil {
		return s.opts.now()
	}
	return time.Now()
}

// after is the session's timer.
func (s *session) after(d time.Duration) <-chan time.Time {
	if s.opts.after != nil {
		return s.opts.after(d)
	}
	return time.After(d)
}

// writeFailed logs a message to the client that could not be sent: a
// warning, but for a notification the client had no stream open to
// receive (errNoStream), which is normal for a client that never opens
// its standalone stream and is logged once a session, at debug level.
func (s *session) writeFailed(msg, method string, err error) {
	if !errors.Is(err, errNoStream) {
		s.log.Warn(msg, "method", method, "err", err)
		return
	}
	s.mu.Lock()
	told := s.toldNoStream
	s.toldNoStream = true
	s.mu.Unlock()
	if !told {
		s.log.Debug("the client has no standalone stream open: notifications are not sent until it opens one", "method", method)
	}
}

func (s *session) reply(m *jsonrpc.Response) {
	if err := s.client.Write(s.ctx, m); err != nil {
		s.log.Warn("answering the client failed", "id", m.ID.Raw(), "err", err)
	}
}

// replyResult answers id with a result of the proxy's own (a refusal, an
// unknown outcome, an input_required ask). To a client that speaks MCP
// 2026-07-28, where every result says its kind, a result without a
// resultType is "complete".
func (s *session) replyResult(id jsonrpc.ID, result any) {
	raw, err := json.Marshal(result)
	if err == nil && s.ownMeta() != nil {
		raw, err = completeResult(raw)
	}
	if err != nil {
		s.replyError(id, jsonrpc.CodeInternalError, "mcpx-policy: encoding the answer failed")
		return
	}
	s.reply(&jsonrpc.Response{ID: id, Result: raw})
}

// completeResult adds "resultType": "complete" to a result object that
// has no resultType.
func completeResult(raw json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	if _, ok := m["resultType"]; ok {
		return raw, nil
	}
	m["resultType"] = json.RawMessage(`"complete"`)
	return json.Marshal(m)
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
