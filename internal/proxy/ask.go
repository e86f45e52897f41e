package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
	"github.com/mcpx/mcpx-policy/mcpgate"
)

// How an ask completes through the proxy (docs/proxy.md, "Asks"): the ask
// is put on hold as an approval request of the engine's store
// (RequestApproval), the person behind the client answers — an MCP
// 2026-07-28 client by retrying the call with inputResponses after an
// input_required result, an older one by answering elicitation/create —
// the proxy approves or declines the request with that answer, and decides
// the call again with it (DecideApproved), which turns that one ask into
// an allow once. Only the client's own answer counts.

// protocolMRTR is the first MCP revision in which a server asks its client
// for input with an input_required result (multi round-trip requests)
// instead of sending it requests.
const protocolMRTR = "2026-07-28"

// metaKeys are the _meta keys of the MCP 2026-07-28 per-request client
// metadata: a server of that revision that was never initialized reads
// the protocol from them, so the proxy's own requests carry the client's.
var metaKeys = []string{"io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities"}

// noteClientMeta keeps the client's MCP 2026-07-28 request metadata from
// params' _meta (when it names that revision or a later one) for the
// proxy's own requests to the server. Params it cannot read change
// nothing; the request itself is checked where it is handled.
func (s *session) noteClientMeta(params json.RawMessage) {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if len(params) == 0 || strictjson.Unmarshal(params, &p) != nil {
		return
	}
	s.noteMeta(p.Meta)
}

// noteMeta is noteClientMeta for a request's _meta, read already. The
// metadata kept is replaced only when it differs.
func (s *session) noteMeta(m map[string]json.RawMessage) {
	var version string
	if json.Unmarshal(m[metaKeys[0]], &version) != nil || version < protocolMRTR {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	same := s.meta != nil
	for _, k := range metaKeys {
		v, ok := m[k]
		old, had := s.meta[k]
		same = same && ok == had && bytes.Equal(v, old)
	}
	if same {
		return
	}
	meta := map[string]json.RawMessage{}
	for _, k := range metaKeys {
		if v, ok := m[k]; ok {
			meta[k] = v
		}
	}
	s.meta = meta
}

// ownMeta is the _meta of the proxy's own requests to the server: the
// client's MCP 2026-07-28 metadata, when it has sent any; nil otherwise.
func (s *session) ownMeta() map[string]json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta
}

// maxHeld bounds the asks a session keeps waiting for a retry; past it the
// oldest is forgotten (its approval request expires in the store).
const maxHeld = 256

// heldAsk is an ask the proxy answered with input_required, waiting for
// the client's retry. Its requestState, the key it is held under, is
// ownIDPrefix and at least 128 bits from crypto/rand, known only to this
// session and its client; it is used once.
type heldAsk struct {
	approval string    // the approval request's id
	sha256   string    // the call's, as the person is shown it
	created  time.Time // for dropping the oldest
	// The server's own requestState and inputResponses that the retry
	// which got this ask carried: restored when the call goes on.
	serverState     json.RawMessage
	serverResponses json.RawMessage
}

// retry is what a tools/call carries for an ask: the client's metadata
// (protocol, capabilities) and, on a retry of the proxy's input_required,
// the held ask and the answer.
type retry struct {
	mrtr   bool // the client speaks MCP 2026-07-28: ask with input_required
	elicit bool // the call's client capabilities include form elicitation
	ours   bool // requestState names an ask of the proxy
	held   *heldAsk
	answer *elicitResult // inputResponses[InputRequestKey], when given and readable
}

// readRetry reads the members of a tools/call that concern asks and takes
// them out of what goes to the server: a requestState the proxy minted
// (the held ask is taken: used once) and the proxy's own input response.
// A requestState of the server's own, and its inputResponses, stay: the
// call is the retry of the server's input_required. Members that do not
// decode strictly are an error (the call is refused).
func (s *session) readRetry(c *toolCall) (retry, error) {
	var r retry
	if raw, ok := c.members["_meta"]; ok && string(raw) != "null" {
		var all map[string]json.RawMessage
		if strictjson.Unmarshal(raw, &all) == nil {
			s.noteMeta(all)
		}
		var meta struct {
			Version *string `json:"io.modelcontextprotocol/protocolVersion"`
			Caps    *struct {
				Elicitation map[string]json.RawMessage `json:"elicitation"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		}
		if err := strictjson.Unmarshal(raw, &meta); err != nil {
			return r, fmt.Errorf("_meta: %w", err)
		}
		r.mrtr = meta.Version != nil && *meta.Version >= protocolMRTR
		if meta.Caps != nil {
			r.elicit = formElicitation(meta.Caps.Elicitation)
		}
	}
	if raw, ok := c.members["inputResponses"]; ok {
		// Each input response is the result of the request it answers
		// (elicitation, sampling, roots): an object. Anything else is a
		// malformed retry, refused before it reaches either side's state.
		var responses map[string]json.RawMessage
		if err := strictjson.Unmarshal(raw, &responses); err != nil {
			return r, fmt.Errorf("inputResponses: %w", err)
		}
		if responses == nil {
			return r, errors.New("inputResponses: not an object")
		}
		for k, v := range responses {
			if !isObject(bytes.TrimSpace(v)) {
				return r, fmt.Errorf("inputResponses[%q]: not an object", k)
			}
		}
		if mine, ok := responses[mcpgate.ConfirmInputKey]; ok {
			var a elicitResult
			if strictjson.Unmarshal(mine, &a) == nil {
				r.answer = &a
			}
			delete(responses, mcpgate.ConfirmInputKey)
			if len(responses) == 0 {
				delete(c.members, "inputResponses")
			} else {
				rest, err := encode(responses)
				if err != nil {
					return r, err
				}
				c.members["inputResponses"] = rest
			}
		}
	}
	if raw, ok := c.members["requestState"]; ok {
		var state string
		if err := strictjson.Unmarshal(raw, &state); err != nil {
			return r, fmt.Errorf("requestState: %w", err)
		}
		if strings.HasPrefix(state, ownIDPrefix) {
			r.ours = true
			delete(c.members, "requestState")
			r.held = s.held.take(state)
			if r.held != nil {
				// The retry of the server's own round that this ask
				// interrupted goes on with that round's state.
				delete(c.members, "inputResponses")
				if r.held.serverState != nil {
					c.members["requestState"] = r.held.serverState
				}
				if r.held.serverResponses != nil {
					c.members["inputResponses"] = r.held.serverResponses
				}
			}
		}
	}
	return r, nil
}

// formElicitation reads an elicitation capability: present, and form mode
// (given, or implied by an empty object) rather than URL mode only.
func formElicitation(e map[string]json.RawMessage) bool {
	_, form := e["form"]
	_, url := e["url"]
	return e != nil && (form || !url)
}

// urlElicitation reads an elicitation capability: URL mode declared (MCP
// 2025-11-25).
func urlElicitation(e map[string]json.RawMessage) bool {
	_, url := e["url"]
	return url
}

// askOutcome is where an ask stands after the proxy put it to the client.
type askOutcome struct {
	d       decision.Decision
	pending any // an input_required result to answer with: the call waits for its retry
}

// ask completes the ask d of call with the client: an answered retry is
// decided with its approval; a 2026-07-28 client that can show a form gets
// an input_required result; an older one with form elicitation an
// elicitation/create; one with URL elicitation only is sent to the
// approvals page (askByURL); any other gets the ask held out of band
// (askOutOfBand). What it returns is an allow or a deny, or a pending
// input_required result; what the client got for an ask that ended is
// told to OnAskAnswered.
func (s *session) ask(ctx context.Context, call decision.Call, d decision.Decision, r retry, members map[string]json.RawMessage) askOutcome {
	o := s.askClient(ctx, call, d, r, members)
	if o.pending == nil && ctx.Err() == nil && s.opts.OnAskAnswered != nil {
		s.opts.OnAskAnswered(o.d.Outcome, o.d.First().Code)
	}
	return o
}

func (s *session) askClient(ctx context.Context, call decision.Call, d decision.Decision, r retry, members map[string]json.RawMessage) askOutcome {
	eng := s.opts.Engine
	if r.held != nil {
		return askOutcome{d: s.useHeld(ctx, call, r)}
	}
	if r.ours {
		// A requestState of the proxy's that is not held: used already
		// (a replay), forgotten, or never made in this session.
		s.log.Warn("refused a retry whose requestState is not a pending ask of this session", "tool", call.Tool.Name, "sha256", d.Call.SHA256)
		out := mcpgate.Unavailable(d)
		why := "the retry's requestState is not an ask pending in this session: it was answered already, or never made here"
		out.Reasons[0].Message = fmt.Sprintf("%s.%s needs confirmation and %s; the call was not executed", call.Server, call.Tool.Name, why)
		out.Reasons[0].Details["refused"] = why
		return askOutcome{d: out}
	}
	s.mu.Lock()
	elicit, elicitURL := s.elicit, s.elicitURL
	s.mu.Unlock()
	switch {
	case r.mrtr && r.elicit:
	case !r.mrtr && elicit:
	case !r.mrtr && elicitURL:
		return askOutcome{d: s.askByURL(ctx, call)}
	default:
		return askOutcome{d: s.askOutOfBand(ctx, call)}
	}
	req, err := eng.RequestApproval(call, d)
	if err != nil {
		s.log.Error("the ask could not be put on hold; refused", "tool", call.Tool.Name, "err", err)
		return askOutcome{d: mcpgate.UnavailableFor(d, err)}
	}
	if r.mrtr {
		state := ownIDPrefix + rand.Text()
		h := &heldAsk{approval: req.ID, sha256: req.SHA256, created: time.Now(),
			serverState: members["requestState"], serverResponses: members["inputResponses"]}
		s.hold(state, h)
		s.log.Info("asked for confirmation (input_required)", "tool", call.Tool.Name, "approval", req.ID, "sha256", req.SHA256)
		return askOutcome{pending: mcpgate.InputRequired(req, state)}
	}
	s.log.Info("asked for confirmation (elicitation)", "tool", call.Tool.Name, "approval", req.ID, "sha256", req.SHA256)
	resp, err := s.request(ctx, s.client, "elicitation/create", mcpgate.Elicitation(req))
	if errors.Is(err, errRefusedAnswer) {
		// An answer that does not decode strictly approves nothing.
		return askOutcome{d: s.answered(ctx, call, req.ID, req.SHA256, nil)}
	}
	if err != nil {
		if ctx.Err() == nil {
			// Unanswered, the request expires in the store by itself.
			s.log.Warn("elicitation failed", "tool", call.Tool.Name, "err", err)
		}
		return askOutcome{d: mcpgate.Unavailable(d)}
	}
	var a elicitResult
	var answer *elicitResult
	if strictjson.Unmarshal(resp.Result, &a) == nil {
		answer = &a
	}
	return askOutcome{d: s.answered(ctx, call, req.ID, req.SHA256, answer)}
}

// useHeld decides the retry of a held ask with the client's answer.
func (s *session) useHeld(ctx context.Context, call decision.Call, r retry) decision.Decision {
	return s.answered(ctx, call, r.held.approval, r.held.sha256, r.answer)
}

// answered approves approval request id (for the call of sha256, as the
// person was shown it) when the client's answer approves it, declines it
// otherwise, and decides call with it: an allow only for exactly that
// call, once.
func (s *session) answered(ctx context.Context, call decision.Call, id, sha256 string, a *elicitResult) decision.Decision {
	eng := s.opts.Engine
	if a != nil && mcpgate.ElicitationApproved(a.Action, a.Content) {
		if _, err := eng.Approvals().Approve(id, sha256); err != nil {
			s.log.Warn("recording the approval failed", "tool", call.Tool.Name, "approval", id, "err", err)
		}
	} else {
		action := ""
		if a != nil {
			action = a.Action
		}
		s.log.Info("confirmation declined", "tool", call.Tool.Name, "approval", id, "action", action, "sha256", sha256)
		if _, err := eng.Approvals().Decline(id); err != nil && !errors.Is(err, mcpxpolicy.ErrNotFound) {
			s.log.Warn("recording the decline failed", "tool", call.Tool.Name, "approval", id, "err", err)
		}
	}
	d, err := eng.DecideApproved(ctx, call, id)
	if err != nil && ctx.Err() == nil {
		s.log.Info("the approval was not used", "tool", call.Tool.Name, "approval", id, "outcome", d.Outcome, "why", err)
	} else if d.Outcome == decision.Allow {
		s.log.Info("confirmation approved", "tool", call.Tool.Name, "approval", id, "sha256", d.Call.SHA256)
	}
	return d
}

// hold keeps an ask waiting for its retry under state.
func (s *session) hold(state string, h *heldAsk) { s.held.put(state, h) }

// heldAsks are the asks waiting for their retry, by requestState: a
// session's own, or, for the stateless requests of one HTTP handler (each
// a session of one request, whose retry comes as a request of its own),
// the handler's. At most maxHeld; past it the oldest is forgotten. Safe
// for concurrent use.
type heldAsks struct {
	mu sync.Mutex
	m  map[string]*heldAsk
}

func newHeldAsks() *heldAsks { return &heldAsks{m: map[string]*heldAsk{}} }

func (a *heldAsks) put(state string, h *heldAsk) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.m) >= maxHeld {
		var oldest string
		for k, v := range a.m {
			if oldest == "" || v.created.Before(a.m[oldest].created) {
				oldest = k
			}
		}
		delete(a.m, oldest)
	}
	a.m[state] = h
}

// take returns the ask held under state and forgets it (used once); nil
// when none is.
func (a *heldAsks) take(state string) *heldAsk {
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.m[state]
	delete(a.m, state)
	return h
}
