package ledger

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// Version is the ledger file format version this build reads and writes.
// A file with a higher version is unreadable (ErrNewerVersion) and is never
// overwritten.
const Version = 1

// FileName is the name of the ledger file inside the state directory.
const FileName = "ledger.json"

// lockName is the lock file beside the ledger. It holds no data: an
// exclusive flock on it serialises every read-modify-write of FileName.
const lockName = "ledger.lock"

// slotsName is the slot file beside the ledger. It holds no data: a
// process that declared a write's outcome unknown holds an OFD byte-range
// lock on the byte its marker's slot names until the entry is saved (see
// slots.go).
const slotsName = "ledger.slots"

// Entry is one unknown-outcome write: the policy's view of it and why
// its outcome is unknown (decision.UnknownWrite, as the SDK lists it).
type Entry = decision.UnknownWrite

// Cleared is an entry an operator cleared, kept for the record.
type Cleared struct {
	Entry
	ClearedAt string `json:"cleared_at"`
	Reason    string `json:"reason"`
}

// Marker is an in-flight write: made durable before the request bytes are
// written, removed when the call settles. A marker whose owner process is
// gone is an unknown-outcome write, and so is a marker whose slot is locked
// in the slot file: its owner declared the outcome unknown and has not
// saved the entry yet (the disk was full, say).
type Marker struct {
	decision.LedgerEntry
	Owner Owner `json:"owner"`
	// Slot is the byte of the slot file the owner locks while the outcome
	// is unknown and not yet saved; unique among the markers in the file
	// and the slots locked. 0 (markers written by older builds): none.
	Slot int64 `json:"slot,omitempty"`
}

// Owner identifies the process that dispatched a write, across PID reuse
// and reboots: the PID, its start time in clock ticks since boot (from
// /proc/PID/stat) and the kernel boot id. Start and Boot are empty where
// the platform does not expose them. In the PostgreSQL store (pgledger)
// the owner is the process's database session instead: Host and its
// owner lock's Key, with the PID for people.
type Owner struct {
	PID   int    `json:"pid"`
	Start string `json:"start,omitempty"`
	Boot  string `json:"boot,omitempty"`
	Host  string `json:"host,omitempty"`
	Key   int64  `json:"key,omitempty"`
}

// fileState is the whole ledger file. extra keeps top-level fields this
// build does not know, so a rewrite never drops them.
type fileState struct {
	Version  int       `json:"version"`
	Entries  []Entry   `json:"entries"`
	Cleared  []Cleared `json:"cleared"`
	InFlight []Marker  `json:"in_flight"`
	// Dispatched are the writes budgets count (budget.go); absent from
	// the file while there are none.
	Dispatched []Counted `json:"dispatched,omitempty"`
	extra      map[string]json.RawMessage
}

var knownFields = map[string]bool{"version": true, "entries": true, "cleared": true, "in_flight": true, "dispatched": true}

// decodeFile parses a ledger file. Every failure is the cause of an
// UnreadableError: the caller must neither use nor overwrite the file.
func decodeFile(b []byte) (*fileState, error) {
	raw, err := statedir.CheckVersion(b, Version, ErrNewerVersion)
	if err != nil {
		return nil, err
	}
	st := &fileState{Version: Version}
	for name, dst := range map[string]any{"entries": &st.Entries, "cleared": &st.Cleared, "in_flight": &st.InFlight, "dispatched": &st.Dispatched} {
		if r, ok := raw[name]; ok {
			if err := json.Unmarshal(r, dst); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	for k, r := range raw {
		if !knownFields[k] {
			if st.extra == nil {
				st.extra = map[string]json.RawMessage{}
			}
			st.extra[k] = r
		}
	}
	for i, e := range st.Entries {
		if e.ID == "" || e.Server == "" {
			return nil, fmt.Errorf("entries[%d]: id and server are required", i)
		}
	}
	for i, m := range st.InFlight {
		if m.ID == "" || m.Server == "" {
			return nil, fmt.Errorf("in_flight[%d]: id and server are required", i)
		}
	}
	for i, r := range st.Dispatched {
		// a record that does not read would count nothing: the file is
		// unreadable rather than a budget silently larger
		if _, err := time.Parse(time.RFC3339Nano, r.Time); err != nil || r.ID == "" || r.Server == "" {
			return nil, fmt.Errorf("dispatched[%d]: id, server and an RFC 3339 time are required", i)
		}
	}
	return st, nil
}

// encode renders the file: known fields first, then any unknown top-level
// fields in key order, two-space indented, newline-terminated.
func (st *fileState) encode() ([]byte, error) {
	out := map[string]any{
		"version":   Version,
		"entries":   nonNil(st.Entries),
		"cleared":   nonNil(st.Cleared),
		"in_flight": nonNil(st.InFlight),
	}
	if len(st.Dispatched) > 0 {
		out["dispatched"] = st.Dispatched
	}
	for k, v := range st.extra {
		out[k] = v
	}
	// encoding/json sorts map keys; the order is stable, which keeps diffs
	// of backups readable.
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// clone copies the lists and the extra fields: the copy can be changed
// without touching st, which a cached parse shares with readers.
func (st *fileState) clone() *fileState {
	c := &fileState{Version: st.Version, Entries: slices.Clone(st.Entries), Cleared: slices.Clone(st.Cleared),
		InFlight: slices.Clone(st.InFlight), Dispatched: slices.Clone(st.Dispatched)}
	if st.extra != nil {
		c.extra = maps.Clone(st.extra)
	}
	return c
}

func emptyState() *fileState { return &fileState{Version: Version} }
