package ledger

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Write budgets count dispatched writes in the ledger's store
// (docs/decisions/0027-write-budgets.md): a write a budget counts is
// recorded as Counted in the same commit as its in-flight marker, after
// the store checked, under its lock, that no budget is spent — so N
// processes sharing the store share each budget, and a write is counted
// exactly once: a commit that did not happen counted nothing, and a
// retried commit cannot add a record twice (records are keyed by the
// dispatch's id). Times are the store's: the file store's clock never
// goes back past the newest record it holds, PostgreSQL's is the
// database's.

// Counted is one dispatched write as the budgets count it. Its fields are
// the call's facts, not a budget's id, so a budget counts every write it
// matches whichever budget made it recorded.
type Counted struct {
	ID          string `json:"id"`
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Destructive bool   `json:"destructive,omitempty"`
	Principal   string `json:"principal,omitempty"`
	Session     string `json:"session,omitempty"`
	// Call is the SHA-256 of the call's canonical form, for loop
	// breakers (one count per exact call).
	Call string `json:"call,omitempty"`
	// Time is when the store recorded it (RFC 3339 with nanoseconds, UTC).
	Time string `json:"time"`
}

// Limit is one budget as the store checks it: at most Max of the writes
// Counts matches in the last Window.
type Limit struct {
	ID     string
	Max    int
	Window time.Duration
	// Counts reports whether the budget counts a recorded write for the
	// call being decided (same server, a matching tool and class, the same
	// principal or session).
	Counts func(Counted) bool
}

// Tally is a budget's count: the writes it counts in its window, and when
// the oldest of them leaves it (zero when Count is 0).
type Tally struct {
	ID      string
	Max     int
	Count   int
	RetryAt time.Time
}

// Spent reports whether the budget holds no more writes.
func (t Tally) Spent() bool { return t.Count >= t.Max }

// BudgetError is BeginCounted's refusal: a budget was spent when the
// store checked, so nothing was recorded and the request must not be
// sent. Tallies are every budget's count then.
type BudgetError struct {
	Tallies []Tally
}

func (e *BudgetError) Error() string {
	for _, t := range e.Tallies {
		if t.Spent() {
			return fmt.Sprintf("ledger: write budget %s is spent (%d of %d in its window) until %s", t.ID, t.Count, t.Max, t.RetryAt.Format(time.RFC3339))
		}
	}
	return "ledger: a write budget is spent"
}

// ErrBudgetSpent is matched by errors.Is on a *BudgetError.
var ErrBudgetSpent = errors.New("ledger: write budget spent")

// Is makes errors.Is(err, ErrBudgetSpent) hold.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetSpent }

// Counting is what BeginCounted records and checks: the write's record
// (its ID and Time are the store's to set), the budgets that count it,
// and how long the store keeps records (the longest window of the
// config's budgets; older records are dropped in the same commit).
type Counting struct {
	Record Counted
	Limits []Limit
	Retain time.Duration
	// Shadow counts the write even when a budget is spent (a server in
	// shadow mode: the policy reports the would-be refusal, the write
	// runs).
	Shadow bool
}

// TallyOf counts records for each limit at now. A record newer than now
// (a clock that went back since it was written) counts as if it were
// written now: it is in every window, and leaves it no earlier than its
// own time plus the window.
func TallyOf(records []Counted, limits []Limit, now time.Time) []Tally {
	// each record's time parsed once, whatever the number of limits
	times := make([]time.Time, len(records))
	for i, r := range records {
		times[i], _ = time.Parse(time.RFC3339Nano, r.Time) // the zero time for a bad one: in no window
	}
	out := make([]Tally, len(limits))
	var in []time.Time
	for i, l := range limits {
		t := Tally{ID: l.ID, Max: l.Max}
		since := now.Add(-l.Window)
		in = in[:0]
		for k, r := range records {
			if times[k].After(since) && l.Counts(r) {
				in = append(in, times[k])
			}
		}
		t.Count = len(in)
		if t.Count > 0 {
			// the window holds Max-1 again once the (Count-Max+1) oldest
			// have left it: the earliest a retry can pass
			slices.SortFunc(in, func(a, b time.Time) int { return a.Compare(b) })
			k := min(max(t.Count-l.Max, 0), t.Count-1)
			t.RetryAt = in[k].Add(l.Window).UTC()
		}
		out[i] = t
	}
	return out
}

// storeClock is the file store's clock: the wall clock as it was at the
// process's start advanced by the monotonic clock, so that a jump of the
// wall clock while the process runs moves no window, and never before the
// newest record the store holds.
var storeClock = sync.OnceValue(func() time.Time { return time.Now() })

func clockNow(records []Counted) time.Time {
	base := storeClock()
	now := base.Add(time.Since(base)).Round(0).UTC()
	for _, r := range records {
		if at, err := time.Parse(time.RFC3339Nano, r.Time); err == nil && at.After(now) {
			now = at
		}
	}
	return now
}

// Tally counts the budgets of limits for a write to server at the store's
// time. An error (an *UnreadableError) means the caller must deny the
// write. Safe for concurrent use; it reads a cached parse as Pending does.
func (l *Ledger) Tally(server string, limits []Limit) ([]Tally, error) {
	if len(limits) == 0 {
		return nil, nil
	}
	p, err := l.load()
	if err != nil {
		return nil, err
	}
	recs := p.st.Dispatched
	return TallyOf(recs, limits, clockNow(recs)), nil
}

// BeginCounted is BeginWrite for a write budgets count: in the commit
// that makes its in-flight marker durable, the store tallies c.Limits
// and, when one is spent, records nothing and returns a *BudgetError;
// otherwise it records c.Record with the marker. c nil is BeginWrite.
func (l *Ledger) BeginCounted(server, tool string, args map[string]any, surface string, c *Counting) (Write, error) {
	if c == nil || len(c.Limits) == 0 {
		return l.BeginWrite(server, tool, args, surface)
	}
	var refused *BudgetError
	d, err := l.begin(server, tool, args, surface, func(st *fileState, id string) error {
		now := clockNow(st.Dispatched)
		if c.Retain > 0 {
			st.Dispatched = pruneCounted(st.Dispatched, now.Add(-c.Retain))
		}
		ts := TallyOf(st.Dispatched, c.Limits, now)
		for _, t := range ts {
			if t.Spent() && !c.Shadow {
				refused = &BudgetError{Tallies: ts}
				return refused
			}
		}
		rec := c.Record
		rec.ID, rec.Time = id, now.Format(time.RFC3339Nano)
		if !slices.ContainsFunc(st.Dispatched, func(r Counted) bool { return r.ID == id }) {
			st.Dispatched = append(st.Dispatched, rec)
		}
		return nil
	})
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// pruneCounted drops the records at or before since.
func pruneCounted(recs []Counted, since time.Time) []Counted {
	return slices.DeleteFunc(slices.Clone(recs), func(r Counted) bool {
		at, err := time.Parse(time.RFC3339Nano, r.Time)
		return err != nil || !at.After(since)
	})
}
