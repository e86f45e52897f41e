package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// ErrChanged is matched (errors.Is) by ClearSeen's error when the
// server's entries are no longer the ones the operator was shown. It is a
// mismatch of the state dir's stores (statedir.ErrMismatch): what the
// operator names is not what the store holds.
var ErrChanged = statedir.Kind(statedir.ErrMismatch, "the unknown-outcome entries changed since they were listed")

// ChangedError is ClearSeen's refusal: server's entries are not the ones
// listed as Seen; Now is the token of those there are, Entries.
// Nothing was cleared.
type ChangedError struct {
	Server, Seen, Now string
	Entries           []Entry
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("ledger: the unknown-outcome entries of %s changed since they were listed (listed as %s; now %d, listed as %s): nothing was cleared", e.Server, e.Seen, len(e.Entries), e.Now)
}

// Is matches ErrChanged, and so statedir.ErrMismatch.
func (e *ChangedError) Is(target error) bool {
	return target == ErrChanged || target == statedir.ErrMismatch
}

// Seen is the token of server's entries in entries (other servers' are
// left out): what a listing shows an operator, and what ClearSeen takes to
// clear exactly those. It depends on the entries' ids only: the first 16
// hex digits of the SHA-256 of the sorted ids, one a line.
func Seen(entries []Entry, server string) string {
	var ids []string
	for _, e := range entries {
		if e.Server == server {
			ids = append(ids, e.ID)
		}
	}
	return SeenIDs(ids)
}

// SeenIDs is Seen of entries with these ids; ids is sorted in place (an
// id counts once).
func SeenIDs(ids []string) string {
	slices.Sort(ids)
	ids = slices.Compact(ids)
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return hex.EncodeToString(sum[:8])
}

// SeenOf is Seen for every server that has entries in entries.
func SeenOf(entries []Entry) map[string]string {
	out := map[string]string{}
	for _, e := range entries {
		if _, ok := out[e.Server]; !ok {
			out[e.Server] = Seen(entries, e.Server)
		}
	}
	return out
}

// checkSeen is ClearSeen's test of the entries about to be cleared.
func checkSeen(server, seen string, out []Entry) error {
	if now := Seen(out, server); now != seen {
		return &ChangedError{Server: server, Seen: seen, Now: now, Entries: nonNil(slices.Clone(out))}
	}
	return nil
}

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
	return l.clear(server, id, nil, reason)
}

// ClearSeen clears server's entries when they are exactly the ones a
// listing showed as seen (Seen, State.Seen, Pending.Seen): every one of
// them, and none recorded since. When they are not — an entry was
// recorded (or cleared) since — nothing is cleared and the error is a
// *ChangedError (errors.Is ErrChanged) holding the entries there are now
// and their token. Otherwise as Clear with id "".
func (l *Ledger) ClearSeen(server, seen, reason string) ([]Entry, error) {
	return l.clear(server, "", func(out []Entry) error { return checkSeen(server, seen, out) }, reason)
}

// clear is Clear, and ClearSeen when check is set: check sees the entries
// about to be cleared and may refuse them (nothing is written then).
func (l *Ledger) clear(server, id string, check func([]Entry) error, reason string) ([]Entry, error) {
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
		if check != nil {
			if err := check(out); err != nil {
				return false, err
			}
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
