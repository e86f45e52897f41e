package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// TimeFormat is RFC 3339 in UTC with fixed-width nanoseconds, so times sort
// as strings.
const TimeFormat = "2006-01-02T15:04:05.000000000Z"

// Dispatch is one write on its way to a server. Create it with Begin,
// write the request bytes, call Sent, then end it with exactly one of
// Settle, Unknown or Abort. Its methods are safe for concurrent use; the
// first of Settle, Unknown or Abort to succeed ends it, later calls do
// nothing and return nil.
type Dispatch struct {
	Lifecycle
	l    *Ledger
	slot int64 // the marker's slot (slots.go)

	mu   sync.Mutex
	done bool
}

// Begin records an in-flight marker for a write and returns once the
// marker is durable (file and directory fsynced): only then may the caller
// write the request bytes. It stores the SHA-256 of the canonical args
// (decision.ArgsSHA256), never the args. If the process dies before the
// dispatch ends, the marker becomes an unknown-outcome entry.
//
// The marker names a slot of the slot file (ledger.slots, created by the
// first Begin), which Unknown locks until its entry is saved.
//
// Errors: server or tool empty, args that are not JSON, an *UnreadableError
// for a bad ledger file or state dir (nothing is written), or an I/O error.
// On any error the request must not be sent; a marker a half-failed commit
// may have left (say, the directory fsync failed) is removed in the
// background. Concurrent Begins share commits (group commit).
func (l *Ledger) Begin(server, tool string, args map[string]any, surface string) (*Dispatch, error) {
	return l.begin(server, tool, args, surface, nil)
}

// begin is Begin; also, when not nil, in the same commit and before the
// marker goes in, with under the file's state and the dispatch's id: an
// error from it records nothing and is Begin's.
func (l *Ledger) begin(server, tool string, args map[string]any, surface string, with func(st *fileState, id string) error) (*Dispatch, error) {
	entry, err := NewEntry(newID(), server, tool, args, surface)
	if err != nil {
		return nil, err
	}
	d := &Dispatch{l: l}
	d.Init(entry, d.end)
	if _, err := l.slotFile(); err != nil {
		return nil, err
	}
	m := Marker{LedgerEntry: d.Entry(), Owner: selfOwner()}
	err = l.submit(func(st *fileState, _ time.Time, _ int) (bool, error) {
		if with != nil {
			if err := with(st, m.ID); err != nil {
				return false, err
			}
		}
		t := &slotTester{l: l}
		defer t.close()
		slot, err := l.freeSlot(st, t)
		if err != nil {
			return false, err
		}
		m.Slot = slot
		st.InFlight = append(st.InFlight, m)
		return true, nil
	})
	if err != nil && !errors.Is(err, ErrUnreadable) {
		// The replace may have happened even though the commit failed
		// (say, the directory fsync): take the marker out in the
		// background, or it would turn into an unknown entry at exit for a
		// call that was never sent.
		l.addRetry(retryOp{id: d.ID(), slot: m.Slot})
	}
	if err != nil {
		return nil, err
	}
	d.slot = m.Slot
	return d, nil
}

// end is the file store's ending of a dispatch (Lifecycle): nil removes
// the marker, durably before it returns; an entry first locks the
// marker's slot, which makes every reader, in any process, count the
// marker as an unknown-outcome entry, and the lock goes once the entry is
// durable. If the file cannot be written (disk full, unreadable file) it
// returns the error, keeps the lock and retries in the background with
// backoff. Should the process die first, the kernel drops the lock and the
// marker is a dead process's: an entry for every reader.
func (d *Dispatch) end(unknown *Entry) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return nil
	}
	id := d.ID()
	held := unknown != nil && d.l.holdSlot(d.slot) == nil
	o := &op{apply: func(st *fileState, _ time.Time, _ int) (bool, error) {
		removed := removeMarker(st, id)
		if unknown == nil {
			return removed, nil
		}
		if containsID(st.Entries, id) || clearedID(st, id) {
			return removed, nil // already an entry, or cleared meanwhile
		}
		st.Entries = append(st.Entries, *unknown)
		return true, nil
	}}
	if held {
		o.after = func() { d.l.releaseSlot(d.slot) }
	}
	err := d.l.submitOp(o)
	if err != nil {
		d.l.addRetry(retryOp{id: id, unknown: unknown, slot: d.slot, held: held})
	}
	d.done = true
	return err
}

// Recover turns the leftover in-flight markers of dead processes (a
// crashed daemon, a killed proxy) into unknown-outcome entries, and
// removes temp files a killed writer left. Call it at start. Markers of
// live processes, including other daemons sharing the directory, are left
// alone. It returns how many markers it converted. Every change the ledger
// commits does the same conversion; Recover makes it happen now.
func (l *Ledger) Recover() (int, error) {
	n := 0
	err := l.submit(func(_ *fileState, _ time.Time, recovered int) (bool, error) {
		l.removeStaleTemps()
		n = recovered
		return false, nil
	})
	return n, err
}

func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}
