package proxy

import (
	"context"
	"errors"
	"log/slog"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// outcomeUnknownTool is the decision log line's outcome for a call to a
// tool the server does not list: answered with the unknown-tool error,
// neither judged nor sent.
const outcomeUnknownTool = "unknown-tool"

// toolsCall gates one tools/call: decide, then answer or forward.
func (s *session) toolsCall(ctx context.Context, m *jsonrpc.Request) {
	// done takes the call off the deciding list; false means the client
	// cancelled it meanwhile, and it must be dropped unanswered.
	done := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		cancel, ok := s.deciding[m.ID]
		delete(s.deciding, m.ID)
		if ok {
			cancel()
		}
		return ok
	}
	params, err := readToolCall(m.Params)
	switch {
	case errors.Is(err, errArgsNotObject):
		if done() {
			d := decision.Denied(decision.CallRef{Server: s.opts.Server, Tool: params.Name}, decision.InvalidInput, "the arguments are not a JSON object")
			s.replyRefusal(m.ID, decision.Call{Server: s.opts.Server, Tool: decision.Tool{Name: params.Name}}, d)
		}
		return
	case err != nil:
		if done() {
			s.refuse(m.ID, "tools/call params: "+err.Error())
		}
		return
	}
	args := params.Args
	rt, err := s.readRetry(&params)
	if err != nil {
		if done() {
			s.refuse(m.ID, "tools/call params: "+err.Error())
		}
		return
	}
	s.recheckConfig()
	// An MCP 2026-07-28 server tells only subscribed clients that its
	// tools changed: unless the operator set a maximum age, the proxy
	// judges each such call with the tool list as it is now.
	tool, listed, err := s.tool(ctx, params.Name, rt.mrtr)
	if err != nil {
		// Never decide without the server's own definition of the tool:
		// its annotations and inputSchema are what the policy judges by.
		if done() {
			s.log.Warn("the server's tool list is unavailable; call refused", "tool", params.Name, "err", err)
			d := decision.Denied(decision.CallRef{Server: s.opts.Server, Tool: params.Name}, decision.PolicyError,
				"the server's tool list could not be read, so the call cannot be judged and was not sent: "+err.Error())
			s.replyRefusal(m.ID, decision.Call{Server: s.opts.Server, Tool: decision.Tool{Name: params.Name}, Args: args}, d)
		}
		return
	}
	if !listed {
		// A tool the server does not list is answered with the unknown-tool
		// error and never sent on, so nothing reaches the server without the
		// server's own annotations behind its decision. It is not judged
		// either: a decision no one acts on would read as an allow in the
		// log, the metrics and the session's data-flow labels.
		if done() {
			s.log.Info("decision", "tool", params.Name, "outcome", outcomeUnknownTool)
			code, msg := mcpgate.UnknownTool(params.Name)
			s.replyError(m.ID, code, msg)
		}
		return
	}
	call := decision.Call{Surface: mcpxpolicy.SurfaceMCP, Caller: s.caller, Server: s.opts.Server, Tool: tool, Args: args}
	d, err := s.opts.Engine.Decide(ctx, call)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("decision failed (denied)", "tool", params.Name, "err", err)
	}
	logDecision := func() {
		if d.Relaxed() {
			// Shadow mode: the call goes ahead; the log and the result's
			// _meta say what the policy decided.
			e := d.Enforced()
			s.info("decision", slog.String("tool", params.Name), slog.String("outcome", string(d.Outcome)), slog.String("shadow", string(e.Outcome)),
				slog.String("code", string(e.First().Code)), slog.String("sha256", d.Call.SHA256))
		} else {
			s.info("decision", slog.String("tool", params.Name), slog.String("outcome", string(d.Outcome)),
				slog.String("code", string(d.First().Code)), slog.String("sha256", d.Call.SHA256))
		}
	}
	if d.Outcome == decision.Allow && rt.held == nil {
		// An allow is logged once the call is on its way (or refused
		// after all): the log line's write is off the call's path.
		defer logDecision()
	} else {
		logDecision()
	}
	// shown is d redacted, once, when something shows it: the recording,
	// a refusal, a result's shadow _meta.
	var shown *mcpxpolicy.Redacted
	show := func() mcpxpolicy.Redacted {
		if shown == nil {
			r := mcpxpolicy.Redact(call, d)
			shown = &r
		}
		return *shown
	}
	if s.opts.DecisionLog != nil {
		if err := s.opts.DecisionLog(call, show()); err != nil {
			s.log.Error("decision log", "tool", params.Name, "err", err)
			if done() {
				s.replyRefusal(m.ID, call, decision.Denied(d.Call, decision.PolicyError,
					"the decision could not be written to the decision log, so the call was not sent; it can be sent again once the log can be written"))
			}
			return
		}
	}
	// record gives OnDecision the policy's decision once what became of
	// the call is known: sent on (record(true), just before it is), or
	// not (when this returns without sending it).
	recorded := s.opts.OnDecision == nil
	var policy mcpxpolicy.Redacted
	if !recorded {
		policy = show()
	}
	record := func(dispatched bool) {
		if !recorded {
			recorded = true
			s.opts.OnDecision(call, policy, dispatched)
		}
	}
	defer record(false)
	// settled is done for an answer that does not send the call: the
	// record is written first, so records come in the order of the
	// answers their client saw.
	settled := func() bool {
		record(false)
		return done()
	}
	hidden := d.Outcome == decision.Deny && d.First().Code == decision.HiddenTool
	if hidden {
		// A hidden tool gets the answer of a tool the server does not
		// list: the unknown-tool error.
		if settled() {
			code, msg := mcpgate.UnknownTool(params.Name)
			s.replyError(m.ID, code, msg)
		}
		return
	}
	if d.Outcome == decision.Ask || rt.held != nil {
		// An ask, or the retry of one the proxy held (decided again with
		// its approval, whatever it is now).
		o := s.ask(ctx, call, d, rt, params.members)
		if ctx.Err() != nil {
			done()
			return
		}
		if o.pending != nil {
			if settled() {
				s.replyResult(m.ID, o.pending)
			}
			return
		}
		d, shown = o.d, nil
		// The decision log says what the client got for the ask, beside
		// what the policy said: the allow a person gave, or the refusal
		// (held for a person, declined). Unlogged, it is not acted on.
		if s.opts.DecisionLog != nil {
			if err := s.opts.DecisionLog(call, show()); err != nil {
				s.log.Error("decision log", "tool", params.Name, "err", err)
				if settled() {
					s.replyRefusal(m.ID, call, decision.Denied(d.Call, decision.PolicyError,
						"the decision could not be written to the decision log, so the call was not sent; it can be sent again once the log can be written"))
				}
				return
			}
		}
	}
	if d.Outcome != decision.Allow { // after ask an ask is an allow or a deny: forward only an allow
		if settled() {
			s.replyShown(m.ID, call, show())
		}
		return
	}
	p := &pending{method: "tools/call", call: params.Name, ignored: mcpgate.IgnoredArgumentKeys(d)}
	if d.Relaxed() {
		r := show()
		p.shadow = &r
	}
	if len(p.ignored) > 0 {
		p.outputSchema = s.cat.outputSchema(params.Name)
	}
	if d.Write {
		s.mu.Lock()
		busy := s.writesInFlight() >= maxWrites
		s.mu.Unlock()
		if busy {
			if settled() {
				s.log.Warn("refused a write: too many in flight", "tool", params.Name)
				s.replyError(m.ID, jsonrpc.CodeInternalError, errBusy("writes in flight", maxWrites))
			}
			return
		}
		disp, err := s.opts.Engine.Writes().Begin(call)
		var refused *decision.Refusal
		if errors.As(err, &refused) {
			// a write budget spent since the decision (another gateway
			// counted first): its deny, not sent
			if settled() {
				s.replyRefusal(m.ID, call, refused.Decision)
			}
			return
		}
		if err != nil {
			if settled() {
				s.log.Error("recording the write in flight failed; not sent", "tool", params.Name, "err", err)
				d := decision.Denied(decision.CallRef{Server: s.opts.Server, Tool: params.Name}, decision.LedgerUnreadable,
					"the write could not be recorded in the unknown-outcome ledger before sending, so it was not sent: "+err.Error())
				s.replyRefusal(m.ID, call, d)
			}
			return
		}
		p.dispatch = disp
	}
	// Forward exactly what was judged: the params re-encoded from the
	// decided name and arguments.
	judged, err := params.wire()
	if err != nil {
		if p.dispatch != nil {
			p.dispatch.Abort()
		}
		if settled() {
			s.replyError(m.ID, jsonrpc.CodeInternalError, "mcpx-policy: encoding the call failed: "+err.Error())
		}
		return
	}
	if !done() {
		if p.dispatch != nil {
			p.dispatch.Abort()
		}
		return
	}
	record(true)
	s.forward(&jsonrpc.Request{ID: m.ID, Method: m.Method, Params: judged}, p)
}

// replyRefusal answers id with the MCP refusal of d, call's deny.
func (s *session) replyRefusal(id jsonrpc.ID, call decision.Call, d decision.Decision) {
	s.replyShown(id, call, mcpxpolicy.Redact(call, d))
}

// replyShown answers id with the MCP rendering of shown, a deny redacted
// with call's arguments: a CallToolResult with isError.
func (s *session) replyShown(id jsonrpc.ID, call decision.Call, shown mcpxpolicy.Redacted) {
	r, err := mcpxpolicy.Render(mcpxpolicy.SurfaceMCP, call, shown)
	if err != nil || r.Body == nil {
		s.replyError(id, jsonrpc.CodeInternalError, "mcpx-policy: rendering the refusal failed")
		return
	}
	s.replyResult(id, r.Body)
}

// info logs msg with attrs at the info level, as s.log.Info does but
// without the caller's program counter (a record's source, which slog
// takes with runtime.Callers for every line, for handlers that add it):
// the decision line of every call was paying for it.
func (s *session) info(msg string, attrs ...slog.Attr) {
	h := s.log.Handler()
	if !h.Enabled(s.ctx, slog.LevelInfo) {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	h.Handle(s.ctx, r)
}
