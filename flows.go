package mcpxpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/engine"
)

// Data-flow rules (docs/configuration.md#labels-and-flows,
// docs/decisions/0029-data-flow-rules.md): the Engine remembers, per
// session, the labels of the calls it let through (decided allow — shadow
// mode's relaxed allow included — or ask), and gives a call that a flow
// rule judges the labels its session has touched (input.ledger.labels).
// The memory is this process's, bounded in number of sessions (overall
// and per caller) and in size (a session holds at most config.MaxLabels
// labels), and a session idle for flowSessionIdle is forgotten. Expiry is
// lazy: no goroutine, no timer.

// The bounds of the session memory.
const (
	maxFlowSessions          = 10_000
	maxFlowSessionsPerCaller = 1_000
	flowSessionIdle          = time.Hour
)

// flowSessions is the labels each session has touched. The zero value is
// ready; safe for concurrent use.
type flowSessions struct {
	mu        sync.Mutex
	m         map[string]*flowSession
	perCaller map[string]int
	// bounds (0: the constants above; tests set smaller ones)
	max, maxPerCaller int
	idle              time.Duration
	now               func() time.Time // time.Now unless a test sets it
}

type flowSession struct {
	caller string
	labels []string // sorted, at most config.MaxLabels
	seen   time.Time
}

// flowKey is the session call belongs to: its caller (the proxy's MCP
// session, serve's HTTP caller, the SDK's Call.Caller) and the session it
// names (a call document's "session", Call.Session), so one caller's
// session name can neither read nor add to another caller's. The name is
// hashed: a session's key is bounded whatever the caller sent.
func flowKey(call decision.Call) (key, caller string) {
	h := sessionHash(call.Session)
	return call.Caller + "\x00" + string(h[:]), call.Caller
}

// sessionHash is a session's name as the Engine keeps it: 32 hex
// characters of its SHA-256 (an array: the key it goes into is the one
// allocation).
func sessionHash(name string) (out [32]byte) {
	sum := sha256.Sum256([]byte(name))
	hex.Encode(out[:], sum[:16])
	return out
}

func (s *flowSessions) bounds() (int, int, time.Duration, time.Time) {
	mx, per, idle, now := s.max, s.maxPerCaller, s.idle, time.Now
	if mx == 0 {
		mx = maxFlowSessions
	}
	if per == 0 {
		per = maxFlowSessionsPerCaller
	}
	if idle == 0 {
		idle = flowSessionIdle
	}
	if s.now != nil {
		now = s.now
	}
	return mx, per, idle, now()
}

// live is key's session when it has not been idle too long (an expired
// one is dropped); s.mu is held.
func (s *flowSessions) live(key string, idle time.Duration, now time.Time) *flowSession {
	f := s.m[key]
	if f == nil {
		return nil
	}
	if now.Sub(f.seen) >= idle || now.Before(f.seen.Add(-idle)) {
		// idle too long (or a clock gone back further than the idle time:
		// forgetting then is the same as after an idle spell)
		s.drop(key, f)
		return nil
	}
	return f
}

func (s *flowSessions) drop(key string, f *flowSession) {
	delete(s.m, key)
	if s.perCaller[f.caller]--; s.perCaller[f.caller] <= 0 {
		delete(s.perCaller, f.caller)
	}
}

// touched returns the labels key's session has touched (an empty non-nil
// slice for none).
func (s *flowSessions) touched(key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, idle, now := s.bounds()
	f := s.live(key, idle, now)
	if f == nil {
		return []string{}
	}
	f.seen = now
	return append([]string{}, f.labels...) // never nil: none touched is an empty list
}

// admit makes room for key's session, so that touch cannot fail later:
// false when it is not there and there is no room (overall, or for its
// caller) even after the idle sessions are dropped.
func (s *flowSessions) admit(key, caller string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	mx, per, idle, now := s.bounds()
	if f := s.live(key, idle, now); f != nil {
		f.seen = now
		return true
	}
	if s.m == nil {
		s.m, s.perCaller = map[string]*flowSession{}, map[string]int{}
	}
	if len(s.m) >= mx || s.perCaller[caller] >= per {
		for k := range s.m { // full: drop whatever is idle, then look again
			s.live(k, idle, now)
		}
	}
	if len(s.m) >= mx || s.perCaller[caller] >= per {
		return false
	}
	s.m[key] = &flowSession{caller: caller, seen: now}
	s.perCaller[caller]++
	return true
}

// touch adds labels to key's session (admitted, unless it has expired or
// was never admitted: then it is admitted now if there is room, and
// otherwise the labels are not remembered — the decision that let the call
// through was made with the session admitted, so this happens only when it
// expired in between).
func (s *flowSessions) touch(key, caller string, labels []string) {
	if len(labels) == 0 || !s.admit(key, caller) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.m[key]
	if f == nil {
		return
	}
	for _, l := range labels {
		if i, found := slices.BinarySearch(f.labels, l); !found && len(f.labels) < config.MaxLabels {
			f.labels = slices.Insert(f.labels, i, l)
		}
	}
}

// size is how many sessions are remembered (tests).
func (s *flowSessions) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// flowView gives the policy the labels call's session has touched when a
// flow rule of c judges the call, and when the call carries labels some
// rule remembers, makes room for its session — or says why there is none
// (input.ledger.labels_error). call is the call as the policy judges it.
func (e *Engine) flowView(c *config.Compiled, led *engine.Ledger, call decision.Call) {
	sources, targeted := c.FlowLabels(call.Server, c.Labels(call.Server, call.Tool.Name, openWorld(call)))
	if !targeted && len(sources) == 0 {
		return
	}
	key, caller := flowKey(call)
	if targeted {
		led.Labels = e.sessions.touched(key)
	}
	if len(sources) > 0 && !e.sessions.admit(key, caller) {
		led.LabelsError = "too many sessions are remembered by this gateway now; idle sessions are forgotten after an hour"
	}
}

// flowTouch remembers the labels of call that flow rules of c remember,
// once d lets it through (an allow, shadow mode's relaxed one included, or
// an ask: it runs once a person approves it, and a declined ask errs
// towards refusing).
func (e *Engine) flowTouch(c *config.Compiled, call decision.Call, d decision.Decision) {
	if len(c.Flows) == 0 || (d.Outcome != decision.Allow && d.Outcome != decision.Ask) {
		return
	}
	sources, _ := c.FlowLabels(call.Server, c.Labels(call.Server, call.Tool.Name, openWorld(call)))
	if len(sources) == 0 {
		return
	}
	key, caller := flowKey(call)
	e.sessions.touch(key, caller, sources)
}

// openWorld is the policy's reading of call's openWorldHint: anything but
// false is open (the MCP default is true).
func openWorld(call decision.Call) bool {
	a := call.Tool.Annotations
	return a == nil || a.OpenWorldHint == nil || *a.OpenWorldHint
}
