package mcpxpolicy

import (
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// Replays (Options.Replay): an Engine that decides recorded calls again
// keeps its write budgets' counts in a scratch store in memory, whose
// clock each recorded call document sets to the time it was recorded, and
// counts a recorded call's write when the recording says its gateway let
// it run — so the calls of a recording, answered in order, are decided on
// the counts their gateway read, and a call past a budget is decided
// again as past it.

// replayClock sets a replay's clock to the time doc was recorded. A
// document without a readable time leaves the clock where it was (the
// replay says such calls cannot be compared on their counts).
func (e *Engine) replayClock(doc callDocument) {
	if e.scratch == nil || doc.Time == "" {
		return
	}
	if at, err := time.Parse(time.RFC3339Nano, doc.Time); err == nil {
		e.scratch.SetNow(at)
	}
}

// replayDispatch counts call's write in a replay's scratch store when
// doc's recording says its gateway let it run, as the gateway counted it:
// the budgets of the Engine's config that count it, checked again (a
// budget this config finds spent would have refused it: not counted; in
// shadow mode it is counted anyway).
func (e *Engine) replayDispatch(call decision.Call, doc callDocument) {
	if e.scratch == nil || doc.Decision == nil || doc.Decision.Dispatched == nil || !*doc.Decision.Dispatched {
		return
	}
	c := e.counting(call)
	if c == nil {
		return
	}
	if w, err := e.scratch.BeginCounted(call.Server, call.Tool.Name, call.Args, call.Surface, c); err == nil {
		w.Settle()
	}
}
