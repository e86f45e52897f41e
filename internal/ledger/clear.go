package ledger

import (
	"errors"
	"fmt"
	"time"
)

// Clear removes unknown-outcome entries of server — the one with id, or
// all of them when id is "" — and keeps each in the cleared list with the
// time and reason. Markers of dead processes are converted first, so they
// can be cleared too, and so are the markers of live processes that
// declared the outcome unknown and could not save it yet (a locked slot);
// writes in flight are never touched. It returns
// the entries it cleared, once the change is durable; clearing all of a
// server that has none returns an empty slice and writes nothing.
//
// Errors: server empty; ErrNotFound (wrapped) when id names no entry of
// server; an *UnreadableError for a bad file (nothing is written); I/O
// errors. Safe for concurrent use, also against other processes.
func (l *Ledger) Clear(server, id, reason string) ([]Entry, error) {
	if server == "" {
		return nil, errors.New("ledger: clear: server is required")
	}
	var out []Entry
	err := l.submit(func(st *fileState, now time.Time, _ int) (bool, error) {
		out = nil
		match := func(srv, eid string) bool { return srv == server && (id == "" || eid == id) }
		kept := make([]Entry, 0, len(st.Entries))
		for _, e := range st.Entries {
			if match(e.Server, e.ID) {
				out = append(out, e)
			} else {
				kept = append(kept, e)
			}
		}
		// A live marker whose slot is locked is an unknown outcome its
		// owner could not save yet: cleared like an entry (the owner's
		// late save sees the id in cleared and adds nothing).
		t := &slotTester{l: l}
		defer t.close()
		keptM := make([]Marker, 0, len(st.InFlight))
		for _, m := range st.InFlight {
			if match(m.Server, m.ID) && m.Slot > 0 {
				locked, err := t.locked(m.Slot)
				if err != nil {
					return false, err
				}
				if locked {
					out = append(out, unsavedEntry(m))
					continue
				}
			}
			keptM = append(keptM, m)
		}
		if id != "" && len(out) == 0 {
			return false, fmt.Errorf("ledger: clear %s --id %s: %w", server, id, ErrNotFound)
		}
		if len(out) == 0 {
			return false, nil
		}
		at := now.Format(TimeFormat)
		for _, e := range out {
			st.Cleared = append(st.Cleared, Cleared{Entry: e, ClearedAt: at, Reason: reason})
		}
		st.Entries = kept
		st.InFlight = keptM
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return nonNil(out), nil
}
