package approval

import (
	"container/heap"
	"fmt"
	"slices"
	"time"
)

// mem is the store as a process has read its log so far: the requests by
// id, the live ones counted per caller and surface, the pending ones by
// ask, and their expiries in a heap. Every operation costs O(1) in the
// number of requests but for the heap's O(log n); a listing is O(n).
type mem struct {
	recs     map[string]*entry
	pending  map[string]string // AskKey -> id of the live pending request
	callers  map[string]int    // CallerKey -> live requests
	surfaces map[string]int    // SurfaceOf(Caller) -> live requests
	live     int
	exp      expiries
	// liveBytes is what the live requests take in a compacted log.
	liveBytes int64
}

// entry is one request; counted while it is live (not yet expired by the
// clock of the last advance).
type entry struct {
	Record
	size    int64
	counted bool
}

func newMem() *mem {
	return &mem{recs: map[string]*entry{}, pending: map[string]string{}, callers: map[string]int{}, surfaces: map[string]int{}}
}

// apply applies one line of the log. size is the line's length, for a
// request line. A line that cannot follow what was read before — a
// request for an id that exists, an answer or removal of one that does
// not — is an error: the log is corrupt.
func (m *mem) apply(l anyLine, size int64) error {
	e := m.recs[l.ID]
	if l.Op == opRequest {
		if e != nil {
			return fmt.Errorf("request %s is in the log twice", l.ID)
		}
		e = &entry{Record: l.Record, size: size}
		m.recs[l.ID] = e
		m.count(e, 1)
		heap.Push(&m.exp, expiry{at: e.Expires, id: e.ID})
		m.index(e)
		return nil
	}
	if e == nil {
		return fmt.Errorf("%s of request %s, which the log does not hold", l.Op, l.ID)
	}
	switch l.Op {
	case opApprove, opDecline:
		m.unindex(e)
		e.State, e.Answered = Approved, l.At
		if l.Op == opDecline {
			e.State = Declined
		}
	case opRemove:
		m.unindex(e)
		if e.counted {
			m.count(e, -1)
		}
		delete(m.recs, l.ID)
	}
	return nil
}

// count adds d to e's counts.
func (m *mem) count(e *entry, d int) {
	e.counted = d > 0
	m.live += d
	m.callers[CallerKey(e.Record)] += d
	m.surfaces[SurfaceOf(e.Caller)] += d
	m.liveBytes += int64(d) * e.size
	if m.callers[CallerKey(e.Record)] == 0 {
		delete(m.callers, CallerKey(e.Record))
	}
	if m.surfaces[SurfaceOf(e.Caller)] == 0 {
		delete(m.surfaces, SurfaceOf(e.Caller))
	}
}

// index makes a live pending e the request of its ask, unless another is.
func (m *mem) index(e *entry) {
	if e.State != Pending || !e.counted {
		return
	}
	if _, ok := m.pending[AskKey(e.Record)]; !ok {
		m.pending[AskKey(e.Record)] = e.ID
	}
}

func (m *mem) unindex(e *entry) {
	if m.pending[AskKey(e.Record)] == e.ID {
		delete(m.pending, AskKey(e.Record))
	}
}

// advance stops counting the requests that expired at now. They stay,
// uncounted, so that the next operation naming one can say it expired.
func (m *mem) advance(now time.Time) {
	for len(m.exp) > 0 && !now.Before(m.exp[0].at) {
		x := heap.Pop(&m.exp).(expiry)
		if e := m.recs[x.id]; e != nil && e.counted && e.Expires.Equal(x.at) {
			m.unindex(e)
			m.count(e, -1)
		}
	}
}

// find returns request id: ErrUnknown when there is none, ErrExpired
// (and the entry) when its time ran out at now.
func (m *mem) find(id string, now time.Time) (*entry, error) {
	e := m.recs[id]
	if e == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknown, id)
	}
	if !now.Before(e.Expires) {
		return e, fmt.Errorf("%w: approval %s expired at %s", ErrExpired, id, e.Expires.Format(time.RFC3339))
	}
	return e, nil
}

// same returns the live pending request of r's ask, if any.
func (m *mem) same(r Record, now time.Time) (Record, bool) {
	id, ok := m.pending[AskKey(r)]
	if !ok {
		return Record{}, false
	}
	e := m.recs[id]
	if e == nil || e.State != Pending || !now.Before(e.Expires) {
		return Record{}, false
	}
	return e.Record, true
}

// counts is what Limits.Admit weighs for a new request r.
func (m *mem) counts(r Record) Counts {
	return Counts{Live: m.live, Surface: m.surfaces[SurfaceOf(r.Caller)], Caller: m.callers[CallerKey(r)]}
}

// list returns the requests live at now, oldest first.
func (m *mem) list(now time.Time) []Record {
	out := make([]Record, 0, m.live)
	for _, e := range m.recs {
		if now.Before(e.Expires) {
			out = append(out, e.Record)
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmpString(a.ID, b.ID)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// expiry is one request's expiry in the heap.
type expiry struct {
	at time.Time
	id string
}

// expiries is a min-heap of expiries (container/heap).
type expiries []expiry

func (h expiries) Len() int           { return len(h) }
func (h expiries) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiries) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiries) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiries) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
