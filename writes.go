package mcpxpolicy

import (
	"errors"

	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// Dispatch is one write on its way to a server, tracked by the
// unknown-outcome ledger (docs/ledger.md). Create it with BeginWrite before the
// request bytes go out, call Sent once they have, then end it with exactly
// one of Settle (a definite result or error came back), Unknown (the
// transport failed, the server exited, the call timed out or was cancelled
// after the bytes went out) or Abort (the bytes never went out). Its
// methods are safe for concurrent use; the first ending wins.
type Dispatch struct{ d ledger.Write }

// ID is the ledger id the write gets if its outcome turns out unknown.
func (d *Dispatch) ID() string { return d.d.ID() }

// Sent records that the request bytes were written.
func (d *Dispatch) Sent() { d.d.Sent() }

// Settle ends the dispatch with a definite answer: nothing is recorded.
func (d *Dispatch) Settle() error { return d.d.Settle() }

// Unknown ends the dispatch with a lost answer: the write becomes an
// unknown-outcome entry and further writes to the server are denied, in
// every process sharing the ledger (the state dir, or the database), until
// an operator clears it. cause
// says what happened ("timeout", …). If the ledger cannot be written at
// that moment (disk full) it returns the error, and the write blocks all
// the same while the entry is saved in the background
// (docs/ledger.md#when-the-disk-is-full).
func (d *Dispatch) Unknown(cause string) error { return d.d.Unknown(cause) }

// Abort ends a dispatch whose bytes were never sent: nothing is recorded.
func (d *Dispatch) Abort() error { return d.d.Abort() }

// BeginWrite makes an in-flight marker for call durable and returns once it
// is; only then may the caller send the request. Call it only for calls the
// decision marked as writes. On error nothing was recorded and the request
// must not be sent. If the process dies mid-call, the marker becomes an
// unknown-outcome entry at the next start (RecoverWrites).
func (e *Engine) BeginWrite(call Call) (*Dispatch, error) {
	d, err := e.ledger.BeginWrite(call.Server, call.Tool.Name, call.Args, call.Surface)
	if err != nil {
		return nil, err
	}
	return &Dispatch{d: d}, nil
}

// RecoverWrites turns the in-flight markers of processes that died into
// unknown-outcome entries and returns how many it found. Daemons call it
// once at start.
func (e *Engine) RecoverWrites() (int, error) { return e.ledger.Recover() }

// UnknownWrite is one unknown-outcome write: its ledger id, server, tool,
// the SHA-256 of its canonical arguments (never the arguments), when and on
// which surface it was sent, and Cause, why its outcome is unknown. It is
// the one name the SDK gives an unknown-outcome entry.
type UnknownWrite = ledger.Entry

// UnknownWrites lists every server's unknown-outcome entries, oldest first.
// An unreadable ledger is an error (and blocks every write meanwhile).
func (e *Engine) UnknownWrites() ([]UnknownWrite, error) {
	st, err := e.ledger.List()
	if err != nil {
		return nil, err
	}
	return st.Entries, nil
}

// ClearWrites clears a server's unknown-outcome entries (id "" clears all
// of them) and keeps each in the ledger's cleared list with reason. It
// returns the entries it cleared.
func (e *Engine) ClearWrites(server, id, reason string) ([]UnknownWrite, error) {
	return e.ledger.Clear(server, id, reason)
}

// ClearSeenWrites is ClearWrites of the entries a listing showed as seen
// (WritesSeen), and of no other: see Writes.ClearSeen.
func (e *Engine) ClearSeenWrites(server, seen, reason string) ([]UnknownWrite, error) {
	return e.ledger.ClearSeen(server, seen, reason)
}

// Ready reports whether the Engine can decide writes: a policy is loaded
// and the unknown-outcome ledger reads. The error says what is wrong; a
// ledger that does not read makes every write deny meanwhile
// (LedgerUnreadable). Safe for concurrent use.
func (e *Engine) Ready() error {
	if e.cur.Load() == nil {
		return errors.New("mcpxpolicy: no policy loaded")
	}
	return e.ledger.Check()
}

// PendingWrites counts the unknown-outcome entries per server, as the
// metrics report them. Safe for concurrent use.
func (e *Engine) PendingWrites() (map[string]int, error) { return e.ledger.Counts() }
