package mcpxpolicy

import (
	"context"
	"errors"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/engine"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// Write budgets (docs/configuration.md#budgets,
// docs/decisions/0027-write-budgets.md): the Engine finds the budgets
// that count a call (the same matching as the policy's lib.tool.facts and
// steps/budget.rego), reads their counts from the ledger's store into the
// policy's input (input.ledger.budgets), and counts a write when it is
// dispatched (Writes.Begin, or an allow answered to a caller that runs it:
// AnswerOptions.Dispatch), checking the budgets again atomically in the
// store, so that N gateways sharing a store share each budget.

// budgetLimits are the budgets of c that count call, as the store checks
// them, and the record a dispatch of call leaves (its Call hash made only
// when a loop breaker counts the call: reading the counts for a decision
// needs it no more; counting fills it). None when no budget counts it (a
// read, or a tool no budget matches).
func budgetLimits(c *config.Compiled, call decision.Call) ([]ledger.Limit, ledger.Counted) {
	if len(c.Budgets) == 0 {
		return nil, ledger.Counted{}
	}
	write, destructive := classify(c, call)
	rec := ledger.Counted{Server: call.Server, Tool: call.Tool.Name, Destructive: destructive,
		Principal: principalOf(call), Session: sessionOf(call)}
	name := call.Session // the closures capture it, never call: call stays on the stack
	var out []ledger.Limit
	for _, b := range c.Budgets {
		if !b.Matches(call.Server, call.Tool.Name, write, destructive) {
			continue
		}
		if b.Per == config.BudgetPerCall && rec.Call == "" {
			// the canonical hash only where a loop breaker counts the call
			// ("" when none can be made: InvalidInput anyway)
			rec.Call, _ = decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
		}
		out = append(out, ledger.Limit{ID: b.ID, Max: b.Max, Window: b.Window, Counts: func(r ledger.Counted) bool {
			if r.Server != rec.Server || !b.Matches(r.Server, r.Tool, true, r.Destructive) {
				return false
			}
			switch b.Per {
			case config.BudgetPerPrincipal:
				return r.Principal == rec.Principal
			case config.BudgetPerSession:
				return r.Session == rec.Session || legacySession(r.Session, name)
			case config.BudgetPerCall:
				return r.Call == rec.Call
			}
			return true
		}})
	}
	return out, rec
}

// classify is the policy's classification of call (lib.call): a write
// unless readOnlyHint is true and no writeTools pattern matches;
// destructive when a write whose destructiveHint is not false.
func classify(c *config.Compiled, call decision.Call) (write, destructive bool) {
	a := call.Tool.Annotations
	readOnly := a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint
	write = !readOnly || c.WriteByPattern(call.Server, call.Tool.Name)
	destructive = write && (a == nil || a.DestructiveHint == nil || *a.DestructiveHint)
	return write, destructive
}

// principalOf is the principal a budget per principal counts call under
// ("" for a call that names none: they share one count).
func principalOf(call decision.Call) string {
	if call.Principal == nil {
		return ""
	}
	return call.Principal.ID
}

// sessionOf is the session a budget per session counts call under: the
// session the call names (Session: a call document's "session") as its
// caller's (Caller: serve's HTTP caller, the SDK's Call.Caller) — so one
// caller naming another's session neither reads nor spends the other's
// budget, as the data-flow rules keep sessions apart (flowKey) —, else
// its Caller (the proxy's MCP session). The name is hashed, so a record's
// key is bounded whatever the caller sent: "<caller> session:<32 hex>"
// (the hash's fixed length keeps every caller and name apart).
func sessionOf(call decision.Call) string {
	if call.Session != "" {
		h := sessionHash(call.Session)
		return call.Caller + " session:" + string(h[:])
	}
	return call.Caller
}

// legacySession reports whether key is the key builds before sessions
// were kept per caller wrote for the session name ("session:" and the
// name; never for no name): such records, in a store an upgraded gateway
// shares, still count for every caller naming that session until they
// leave their window (a day at most), so an upgrade never resets a
// budget.
func legacySession(key, name string) bool {
	const prefix = "session:"
	return name != "" && len(key) == len(prefix)+len(name) && key[:len(prefix)] == prefix && key[len(prefix):] == name
}

// budgetView reads the counts of limits for call into led; a store that
// cannot be read leaves them out (the budget step denies, fail closed)
// and says why in led.Unreadable.
func (e *Engine) budgetView(led *engine.Ledger, server string, limits []ledger.Limit) {
	tallies, err := e.writes.s.Tally(server, limits)
	if err != nil {
		if led.Unreadable == "" {
			led.Unreadable = "the write-budget counts cannot be read; an operator runs 'mcpx-policy writes' to see why"
		}
		return
	}
	led.Budgets = make([]engine.BudgetCount, len(tallies))
	for i, t := range tallies {
		led.Budgets[i] = engine.BudgetCount{ID: t.ID, Count: t.Count, RetryAt: retryText(t)}
	}
}

// retryText is when a retry can pass, rounded up to the second, as the
// policy's message and details give it; "" for an empty window.
func retryText(t ledger.Tally) string {
	if t.Count == 0 || t.RetryAt.IsZero() {
		return ""
	}
	at := t.RetryAt.UTC()
	if r := at.Truncate(time.Second); !r.Equal(at) {
		at = r.Add(time.Second)
	}
	return at.Format(time.RFC3339)
}

// counting is what Writes.Begin records and checks for a write of call:
// nil when no budget counts it.
func (e *Engine) counting(call decision.Call) *ledger.Counting {
	c := e.cur.Load().compiled
	if len(c.Budgets) == 0 {
		return nil
	}
	_, call = e.pinView(c, call)
	limits, rec := budgetLimits(c, call)
	if len(limits) == 0 {
		return nil
	}
	if rec.Call == "" { // the record keeps the call's hash, whatever counts it now
		rec.Call, _ = decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	}
	return &ledger.Counting{Record: rec, Limits: limits, Retain: c.LongestBudgetWindow(), Shadow: c.Shadow(call.Server)}
}

// budgetRefusal is the deny for call once the store found a budget spent
// at dispatch: the policy's own decision on the counts now (a
// WriteBudgetExceeded or RepeatedCall deny), else one built from the
// store's tallies.
func (e *Engine) budgetRefusal(call decision.Call, spent *ledger.BudgetError) decision.Decision {
	d, err := e.decide(context.Background(), call, false)
	if err == nil && d.Outcome == decision.Deny {
		for _, r := range d.Reasons {
			if r.Code == decision.WriteBudgetExceeded || r.Code == decision.RepeatedCall {
				return d
			}
		}
	}
	code := decision.WriteBudgetExceeded
	for _, t := range spent.Tallies {
		for _, b := range e.cur.Load().compiled.Budgets {
			if t.Spent() && b.ID == t.ID && b.Per == config.BudgetPerCall {
				code = decision.RepeatedCall
			}
		}
	}
	sum, _ := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	out := decision.Denied(decision.CallRef{Server: call.Server, Tool: call.Tool.Name, SHA256: sum}, code,
		call.Server+"."+call.Tool.Name+": "+spent.Error()+"; the write was not sent")
	out.Write = true
	return out
}

// dispatchAllowed counts an allowed write answered to a caller that runs
// it (AnswerOptions.Dispatch): a write no budget counts is left alone; a
// budget found spent meanwhile (another gateway counted first) turns the
// allow into its deny.
func (e *Engine) dispatchAllowed(call decision.Call, d decision.Decision) (decision.Decision, error) {
	if d.Outcome != decision.Allow || !d.Write {
		return d, nil
	}
	c := e.counting(call)
	if c == nil {
		return d, nil
	}
	w, err := e.writes.s.BeginCounted(call.Server, call.Tool.Name, call.Args, call.Surface, c)
	var spent *ledger.BudgetError
	switch {
	case errors.As(err, &spent):
		return e.budgetRefusal(call, spent), nil
	case err != nil:
		return decision.Denied(d.Call, decision.LedgerUnreadable,
			"the write could not be counted by its write budgets, so it must not be sent: "+err.Error()), err
	}
	// the caller runs it: nothing to track but the count
	return d, w.Settle()
}
