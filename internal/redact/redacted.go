package redact

import (
	"sync/atomic"

	"github.com/mcpx/mcpx-policy/decision"
)

// Decision is a decision made fit to show: what every output of the
// module shows of one (a rendering, an answer, the decision log, a
// recorded call). Only Of (and Again, from one) makes one, so whatever
// takes a Decision cannot be handed a decision nobody redacted, and has
// no reason to redact it again. The zero value holds the zero decision.
type Decision struct {
	d decision.Decision
	m *memo // what redacting d searched: Shown searches it no more
}

// Of redacts d with the call's unredacted arguments (Redact) and returns
// it as a Decision.
func Of(d decision.Decision, args map[string]any) Decision {
	r := newRedactorFor(d)
	return Decision{d: redactWith(r, d, args), m: r.m}
}

// Again redacts d, another decision on the same call (an ask that became
// a refusal, an approval used), as Of(d, args) does, with what redacting
// r found: a string r's redaction searched is not searched again.
func (r Decision) Again(d decision.Decision, args map[string]any) Decision {
	w := newRedactorFor(d)
	if w.m != nil && r.m != nil {
		w.m = r.m
	}
	return Decision{d: redactWith(w, d, args), m: w.m}
}

// Shown is RedactShown(args): the arguments as a prompt shows them, and
// the JSON Pointers of the values it changed. A string that redacting r
// searched (the arguments r was made with, its messages) is not searched
// again: an ask's arguments are searched once for its decision and its
// prompt. Safe for concurrent use.
func (r Decision) Shown(args map[string]any) (map[string]any, []string) {
	w := newRedactor()
	w.m = r.m
	if w.m == nil {
		w.m = &memo{}
	}
	return w.shown(args)
}

// Doc returns the redacted decision document. Its slices and maps are
// r's: copy what you change.
func (r Decision) Doc() decision.Decision { return r.d }

// Enforced is r's decision as it would be enforced
// (decision.Decision.Enforced), redacted as r is.
func (r Decision) Enforced() Decision { return Decision{d: r.d.Enforced(), m: r.m} }

// redactions counts the decisions Redact has redacted in this process.
var redactions atomic.Uint64

// Count is how many decisions Redact has redacted in this process. Tests
// read it around one answer: every surface redacts a decision once.
func Count() uint64 { return redactions.Load() }
