package ledger

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// Scratch is a throwaway store for deciding recorded calls again
// (`mcpx-policy replay`): the budgets' counts in memory, on a clock the
// caller sets to each recorded call's time (SetNow), and no
// unknown-outcome entry ever. It counts and checks exactly as the file
// store does (TallyOf under one lock, nothing recorded past a spent
// budget but in shadow mode), so a replay of a recording rebuilds the
// counts its gateway read. Nothing of it reaches a disk or another
// process. Safe for concurrent use; its clock is one for all callers.
type Scratch struct {
	mu      sync.Mutex
	now     time.Time
	records []Counted
	n       int
}

var _ Store = (*Scratch)(nil)

// SetNow sets the store's clock. As the file store's, it never goes back
// past the newest record: a recorded call older than one before it is
// counted as if it came at the newest record's time.
func (s *Scratch) SetNow(t time.Time) {
	s.mu.Lock()
	s.now = t.UTC()
	s.mu.Unlock()
}

// clock is the store's time; s.mu is held.
func (s *Scratch) clock() time.Time {
	now := s.now
	for _, r := range s.records {
		if at, err := time.Parse(time.RFC3339Nano, r.Time); err == nil && at.After(now) {
			now = at
		}
	}
	return now
}

// Tally counts limits at the store's clock.
func (s *Scratch) Tally(_ string, limits []Limit) ([]Tally, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return TallyOf(s.records, limits, s.clock()), nil
}

// BeginCounted counts c's record unless a budget is spent (a
// *BudgetError; shadow mode counts it anyway). The write it returns ends
// without a trace.
func (s *Scratch) BeginCounted(server, tool string, args map[string]any, surface string, c *Counting) (Write, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	id := "scratch-" + strconv.Itoa(s.n)
	entry, err := NewEntry(id, server, tool, args, surface)
	if err != nil {
		return nil, err
	}
	if c != nil && len(c.Limits) > 0 {
		now := s.clock()
		if c.Retain > 0 {
			s.records = pruneCounted(s.records, now.Add(-c.Retain))
		}
		ts := TallyOf(s.records, c.Limits, now)
		for _, t := range ts {
			if t.Spent() && !c.Shadow {
				return nil, &BudgetError{Tallies: ts}
			}
		}
		rec := c.Record
		rec.ID, rec.Time = id, now.Format(time.RFC3339Nano)
		s.records = append(s.records, rec)
	}
	w := &scratchWrite{}
	w.Init(entry, func(*Entry) error { return nil })
	return w, nil
}

type scratchWrite struct{ Lifecycle }

// BeginWrite is BeginCounted with nothing to count.
func (s *Scratch) BeginWrite(server, tool string, args map[string]any, surface string) (Write, error) {
	return s.BeginCounted(server, tool, args, surface, nil)
}

// Pending is always empty: a replay leaves the unknown-outcome ledger out.
func (s *Scratch) Pending(string, int) (Pending, error) {
	return Pending{Entries: []decision.LedgerEntry{}}, nil
}

// List is always empty.
func (s *Scratch) List() (State, error) { return State{Entries: []Entry{}, InFlight: []Marker{}}, nil }

// Counts is always empty.
func (s *Scratch) Counts() (map[string]int, error) { return map[string]int{}, nil }

// Clear finds nothing to clear.
func (s *Scratch) Clear(string, string, string) ([]Entry, error) { return nil, ErrNotFound }

// ClearSeen finds nothing to clear.
func (s *Scratch) ClearSeen(string, string, string) ([]Entry, error) {
	return nil, errors.New("ledger: a replay's scratch store holds no entries")
}

// Recover finds no marker.
func (s *Scratch) Recover() (int, error) { return 0, nil }

// Check reports that it reads.
func (s *Scratch) Check() error { return nil }

// Where names it.
func (s *Scratch) Where() string { return "a replay's scratch counts (in memory)" }

// Close does nothing.
func (s *Scratch) Close() error { return nil }
