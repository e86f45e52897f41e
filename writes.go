package mcpxpolicy

import (
	"encoding/json"
	"errors"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// Writes is the unknown-outcome ledger (docs/ledger.md): the file in the
// state dir, or the PostgreSQL database a config's ledger section names.
// It holds what writes are in flight and which ones lost their answer;
// while a server has such an entry its writes are denied
// (UnknownOutcomePending) until an operator clears it. Engine.Writes is
// the Engine's; OpenWrites opens it without a policy, as `mcpx-policy
// writes` does. Its methods are safe for concurrent use, with every other
// Writes, Engine and process that shares the ledger.
type Writes struct {
	s      ledger.Store
	engine bool    // the Engine's own: Engine.Close closes it
	eng    *Engine // the Engine whose budgets count its writes (nil: none)
}

// OpenWrites opens the ledger opts name: the config's ledger section when
// opts.ConfigPaths are given (the config must load), else the file in
// opts.StateDir. It touches nothing until used. Close releases it.
func OpenWrites(opts Options) (*Writes, error) {
	st, err := openState(opts)
	if err != nil {
		return nil, err
	}
	return &Writes{s: st.ledger}, nil
}

// sameLedger reports whether two ledger sections name the same store.
func sameLedger(a, b config.LedgerConfig) bool { return a.Store == b.Store && a.DSN == b.DSN }

// List reads the whole ledger. An unreadable ledger is an error that
// errors.Is matches to ErrUnreadable (and blocks every write meanwhile).
func (w *Writes) List() (WritesState, error) {
	st, err := w.s.List()
	if err != nil {
		return WritesState{}, err
	}
	out := WritesState{Entries: st.Entries, InFlight: len(st.InFlight), Seen: st.Seen, doc: st}
	return out, nil
}

// Clear clears a server's unknown-outcome entries (id "" clears all of
// them), keeping each in the ledger's cleared list with reason, and
// returns them. An id that names no entry of server is an error errors.Is
// matches to ErrNotFound.
func (w *Writes) Clear(server, id, reason string) ([]decision.UnknownWrite, error) {
	return w.s.Clear(server, id, reason)
}

// ClearSeen clears a server's unknown-outcome entries when they are
// exactly those a listing showed (its token, WritesState.Seen, or the
// --seen of a printed clear command), and otherwise nothing: an error
// errors.Is matches to ErrMismatch, and a new List shows what is there now.
// An entry another process recorded after the listing is never cleared
// with the listed ones.
func (w *Writes) ClearSeen(server, seen, reason string) ([]decision.UnknownWrite, error) {
	return w.s.ClearSeen(server, seen, reason)
}

// Begin makes an in-flight marker for call durable and returns once it
// is; only then may the caller send the request. Call it only for calls the
// decision marked as writes. On error nothing was recorded and the request
// must not be sent. If the process dies mid-call, the marker becomes an
// unknown-outcome entry at the next start (Recover).
//
// On the Engine's own (Engine.Writes), a write that write budgets count
// (docs/configuration.md#budgets) is counted here, in the same atomic
// step of the store that checks them again: when one is spent by now
// (another gateway sharing the store counted first), nothing is recorded
// and the error is a *decision.Refusal carrying the WriteBudgetExceeded
// deny to answer with.
func (w *Writes) Begin(call decision.Call) (*Dispatch, error) {
	var c *ledger.Counting
	if w.eng != nil {
		c = w.eng.counting(call)
	}
	d, err := w.s.BeginCounted(call.Server, call.Tool.Name, call.Args, call.Surface, c)
	var spent *ledger.BudgetError
	if errors.As(err, &spent) {
		return nil, &decision.Refusal{Decision: w.eng.budgetRefusal(call, spent), Err: err}
	}
	if err != nil {
		return nil, err
	}
	return &Dispatch{ID: d.ID(), d: d}, nil
}

// Recover turns the in-flight markers of processes that died into
// unknown-outcome entries and returns how many it found. Daemons call it
// once at start.
func (w *Writes) Recover() (int, error) { return w.s.Recover() }

// Counts counts the unknown-outcome entries per server (servers without
// entries absent), as the metrics report them.
func (w *Writes) Counts() (map[string]int, error) { return w.s.Counts() }

// Where names the ledger: the file's path, or the database without its
// password.
func (w *Writes) Where() string { return w.s.Where() }

// Close releases the ledger's connections. On the Engine's own
// (Engine.Writes) it does nothing: Engine.Close does it.
func (w *Writes) Close() error {
	if w.engine {
		return nil
	}
	return w.s.Close()
}

// WritesState is the whole ledger as Writes.List reads it. Its JSON form
// is the ledger's document as `mcpx-policy writes --format json` prints
// it: "entries", "in_flight" (each with its owner process) and "cleared"
// (each with when and why).
type WritesState struct {
	// Entries are the unknown-outcome writes, oldest first.
	Entries []decision.UnknownWrite
	// InFlight counts the writes of live processes awaiting their answer.
	InFlight int
	// Seen is, for each server with entries, the token of those listed
	// here: ClearSeen with it clears exactly them.
	Seen map[string]string
	doc  ledger.State
}

// MarshalJSON is the ledger's whole document.
func (s WritesState) MarshalJSON() ([]byte, error) { return json.Marshal(s.doc) }

// Dispatch is one write on its way to a server, tracked by the
// unknown-outcome ledger (docs/ledger.md). Create it with Writes.Begin
// before the request bytes go out, call Sent once they have, then end it
// with exactly one of Settle (a definite result or error came back),
// Unknown (the transport failed, the server exited, the call timed out or
// was cancelled after the bytes went out) or Abort (the bytes never went
// out). Its methods are safe for concurrent use; the first ending wins.
type Dispatch struct {
	// ID is the ledger id the write gets if its outcome turns out
	// unknown.
	ID string
	d  ledger.Write
}

// Sent records that the request bytes were written.
func (d *Dispatch) Sent() { d.d.Sent() }

// Settle ends the dispatch with a definite answer: nothing is recorded.
func (d *Dispatch) Settle() error { return d.d.Settle() }

// Unknown ends the dispatch with a lost answer: the write becomes an
// unknown-outcome entry and further writes to the server are denied, in
// every process sharing the ledger (the state dir, or the database), until
// an operator clears it. cause says what happened ("timeout", …). If the
// ledger cannot be written at that moment (disk full) it returns the
// error, and the write blocks all the same while the entry is saved in the
// background (docs/ledger.md#when-the-disk-is-full).
func (d *Dispatch) Unknown(cause string) error { return d.d.Unknown(cause) }

// Abort ends a dispatch whose bytes were never sent: nothing is recorded.
func (d *Dispatch) Abort() error { return d.d.Abort() }
