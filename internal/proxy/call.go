package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/render"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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
			d := mcpxpolicy.Denied(s.opts.Server, params.Name, mcpxpolicy.InvalidInput, "the arguments are not a JSON object")
			s.replyResult(m.ID, render.MCP(d).Result)
		}
		return
	case err != nil:
		if done() {
			s.refuse(m.ID, "tools/call params: "+err.Error())
		}
		return
	}
	args := params.Args
	s.recheckConfig()
	tool, listed, err := s.tool(ctx, params.Name)
	if err != nil {
		// Never decide without the server's own definition of the tool:
		// its annotations and inputSchema are what the policy judges by.
		if done() {
			s.log.Warn("the server's tool list is unavailable; call refused", "tool", params.Name, "err", err)
			d := mcpxpolicy.Denied(s.opts.Server, params.Name, mcpxpolicy.PolicyError,
				"the server's tool list could not be read, so the call cannot be judged and was not sent: "+err.Error())
			s.replyResult(m.ID, render.MCP(d).Result)
		}
		return
	}
	call := mcpxpolicy.Call{Surface: mcpxpolicy.SurfaceMCP, Server: s.opts.Server, Tool: tool, Args: args}
	d, err := s.opts.Engine.Decide(ctx, call)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("decision failed (denied)", "tool", params.Name, "err", err)
	}
	s.log.Info("decision", "tool", params.Name, "outcome", d.Outcome, "code", d.First().Code, "sha256", d.Call.SHA256)
	if s.opts.OnDecision != nil && listed {
		s.opts.OnDecision(call, d)
	}
	hidden := d.Outcome == mcpxpolicy.Deny && d.First().Code == mcpxpolicy.HiddenTool
	if hidden || !listed {
		// A hidden tool and a tool the server does not list get the same
		// answer: the unknown-tool error. Unlisted tools are never sent on,
		// so nothing reaches the server without the server's own
		// annotations behind its decision.
		if done() {
			e := render.UnknownTool(params.Name)
			s.replyError(m.ID, e.Code, e.Message)
		}
		return
	}
	if d.Outcome == mcpxpolicy.Ask {
		d = s.confirm(ctx, call, d)
		if ctx.Err() != nil {
			done()
			return
		}
	}
	if d.Outcome != mcpxpolicy.Allow { // after confirm an ask is an allow or a deny: forward only an allow
		if done() {
			// redacted with the call's arguments: an override's message may quote them
			s.replyResult(m.ID, render.MCP(mcpxpolicy.Redact(call, d)).Result)
		}
		return
	}
	p := &pending{method: "tools/call", call: params.Name, ignored: render.Ignored(d)}
	if d.Write {
		disp, err := s.opts.Engine.BeginWrite(call)
		if err != nil {
			if done() {
				s.log.Error("recording the write in flight failed; not sent", "tool", params.Name, "err", err)
				d := mcpxpolicy.Denied(s.opts.Server, params.Name, mcpxpolicy.LedgerUnreadable,
					"the write could not be recorded in the unknown-outcome ledger before sending, so it was not sent: "+err.Error())
				s.replyResult(m.ID, render.MCP(d).Result)
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
		if done() {
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
	s.forward(&jsonrpc.Request{ID: m.ID, Method: m.Method, Params: judged}, p)
}

// confirm puts an ask to the person behind the client with
// elicitation/create when the client declared it can: an approval makes
// the decision an allow for this exact call, once; anything else is
// ConfirmationDeclined. A client that cannot ask gets the deny MCP
// renders for an ask (ConfirmationUnavailable), never an allow.
func (s *session) confirm(ctx context.Context, call mcpxpolicy.Call, d mcpxpolicy.Decision) mcpxpolicy.Decision {
	s.mu.Lock()
	can := s.elicit
	s.mu.Unlock()
	if !can {
		return mcpxpolicy.ConfirmationUnavailableDecision(d)
	}
	prompt, err := render.Prompt(call, d)
	if err != nil {
		s.log.Error("building the confirmation prompt failed", "err", err)
		return mcpxpolicy.ConfirmationUnavailableDecision(d)
	}
	r, err := s.request(ctx, s.client, "elicitation/create", prompt.Elicitation())
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("elicitation failed", "tool", call.Tool.Name, "err", err)
		}
		return mcpxpolicy.ConfirmationUnavailableDecision(d)
	}
	var res elicitResult
	if err := strictjson.Unmarshal(r.Result, &res); err != nil || !render.Approved(res.Action, res.Content) {
		s.log.Info("confirmation declined", "tool", call.Tool.Name, "action", res.Action, "sha256", prompt.SHA256)
		return mcpxpolicy.ConfirmationDeclinedDecision(d)
	}
	s.log.Info("confirmation approved", "tool", call.Tool.Name, "sha256", prompt.SHA256)
	d.Outcome = mcpxpolicy.Allow
	return d
}

// unknownOutcomeResult is the tools/call answer for a write whose outcome
// was lost: an error result a model can act on, with the ledger entry.
func unknownOutcomeResult(server, tool, id, cause string) render.ToolResult {
	text := fmt.Sprintf("Outcome unknown: %s.%s was sent to the server but no answer came back (%s). "+
		"It may or may not have happened. Writes to %q are now refused until an operator checks and clears it "+
		"(`mcpx-policy writes clear %s --id %s`). Do not retry; tell the user.", server, tool, cause, server, server, id)
	return render.ToolResult{
		Content: []render.Content{{Type: "text", Text: text}},
		StructuredContent: map[string]any{
			"outcome": "unknown", "server": server, "tool": tool, "ledger_id": id, "cause": cause,
		},
		IsError: true,
	}
}

// addRider adds the warn rider to a successful result.
func addRider(result json.RawMessage, ignored []string) (json.RawMessage, error) {
	return render.AddRider(result, ignored)
}
