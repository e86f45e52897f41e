// Package approval binds a person's yes to one exact call. A Store hands out
// an approval request for a call (an id, the sha256 of the unredacted
// canonical call, an expiry); an approver approves the id together with the
// sha256 it was shown; the gate then consumes the approval for the call it
// is about to run. An approval is single use, expires, and is refused when
// the call's sha256 is not the approved one — any changed argument changes
// it. A Store is safe for concurrent use and keeps everything in memory.
package approval

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcpx/mcpx-policy/internal/decision"
)

// Defaults of a Store.
const (
	DefaultTTL        = 5 * time.Minute
	DefaultMaxPending = 1024
)

// Errors of a Store; match them with errors.Is.
var (
	// ErrUnknown: no such approval — never requested, already consumed
	// (a replay), declined, or expired and purged.
	ErrUnknown = errors.New("approval: unknown or already used")
	// ErrExpired: the approval's time ran out before it was approved or used.
	ErrExpired = errors.New("approval: expired")
	// ErrCallChanged: the sha256 given is not the sha256 of the call the
	// approval was requested for.
	ErrCallChanged = errors.New("approval: the call changed")
	// ErrNotApproved: there is a request for the call but nobody approved it.
	ErrNotApproved = errors.New("approval: not approved")
	// ErrFull: too many requests are pending.
	ErrFull = errors.New("approval: too many pending requests")
)

// Request is one approval request.
type Request struct {
	ID      string    `json:"id"`
	SHA256  string    `json:"sha256"`
	Expires time.Time `json:"expires"`
}

type entry struct {
	Request
	approved bool
}

// Store holds approval requests. The zero value is not usable; use New.
type Store struct {
	mu         sync.Mutex
	now        func() time.Time
	ttl        time.Duration
	maxPending int
	rand       io.Reader
	byID       map[string]*entry
}

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithTTL sets how long a request stays valid after Request (default
// DefaultTTL); the approval expires at the same moment.
func WithTTL(d time.Duration) Option { return func(s *Store) { s.ttl = d } }

// WithMaxPending caps the number of live requests (default
// DefaultMaxPending).
func WithMaxPending(n int) Option { return func(s *Store) { s.maxPending = n } }

// WithRand sets the source of request ids (default crypto/rand).
func WithRand(r io.Reader) Option { return func(s *Store) { s.rand = r } }

// New returns an empty Store.
func New(opts ...Option) *Store {
	s := &Store{now: time.Now, ttl: DefaultTTL, maxPending: DefaultMaxPending, rand: rand.Reader, byID: map[string]*entry{}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Request opens an approval request for call: a fresh random id, the
// sha256 of the unredacted canonical call (decision.CallSHA256), and an
// expiry TTL from now. It fails with ErrFull when MaxPending requests are
// live, and when the call's arguments are not JSON.
func (s *Store) Request(call decision.Call) (Request, error) {
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		return Request{}, fmt.Errorf("approval: %w", err)
	}
	var raw [16]byte
	if _, err := io.ReadFull(s.rand, raw[:]); err != nil {
		return Request{}, fmt.Errorf("approval: id: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.purge(now)
	if len(s.byID) >= s.maxPending {
		return Request{}, ErrFull
	}
	req := Request{ID: hex.EncodeToString(raw[:]), SHA256: sum, Expires: now.Add(s.ttl)}
	s.byID[req.ID] = &entry{Request: req}
	return req, nil
}

// Approve records a yes for request id, for the call whose sha256 the
// approver was shown. It fails with ErrUnknown for an unknown or used id,
// ErrExpired after the expiry, and ErrCallChanged when sha256 is not the
// request's (the approver saw another call).
func (s *Store) Approve(id, sha256 string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.live(id)
	if err != nil {
		return err
	}
	if e.SHA256 != sha256 {
		return ErrCallChanged
	}
	e.approved = true
	return nil
}

// Decline drops request id: the call was refused. It fails with ErrUnknown
// for an unknown or used id.
func (s *Store) Decline(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[id]; !ok {
		return ErrUnknown
	}
	delete(s.byID, id)
	return nil
}

// ConsumeID uses the approval of request id for call, once. It succeeds
// only when the request is approved, unexpired, and call's sha256 is the
// approved one; whatever the outcome a used, expired or mismatched request
// cannot be used again (a changed call voids the approval). Errors:
// ErrUnknown, ErrExpired, ErrCallChanged, ErrNotApproved (the request stays
// open), or an error when the arguments are not JSON.
func (s *Store) ConsumeID(id string, call decision.Call) error {
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.live(id)
	if err != nil {
		return err
	}
	if e.SHA256 != sum {
		delete(s.byID, id)
		return ErrCallChanged
	}
	if !e.approved {
		return ErrNotApproved
	}
	delete(s.byID, id)
	return nil
}

// Consume uses an approval for call, once, found by the call's sha256: it
// succeeds when some unexpired request for exactly this call is approved,
// and removes that one. It fails with ErrNotApproved when a live request
// for the call exists but is not approved, ErrExpired when the only
// approval for it has expired, and ErrUnknown otherwise — a replay, or a
// call whose arguments changed since it was approved.
func (s *Store) Consume(call decision.Call) error {
	sum, err := decision.CallSHA256(call.Server, call.Tool.Name, call.Args)
	if err != nil {
		return fmt.Errorf("approval: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var pending, expired bool
	var best *entry
	for _, e := range s.byID {
		if e.SHA256 != sum {
			continue
		}
		switch {
		case !now.Before(e.Expires):
			expired = true
		case !e.approved:
			pending = true
		case best == nil || e.Expires.Before(best.Expires):
			best = e
		}
	}
	s.purge(now)
	switch {
	case best != nil:
		delete(s.byID, best.ID)
		return nil
	case pending:
		return ErrNotApproved
	case expired:
		return ErrExpired
	default:
		return ErrUnknown
	}
}

// Pending returns the number of live requests.
func (s *Store) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purge(s.now())
	return len(s.byID)
}

// live returns request id if it exists and has not expired; an expired one
// is removed. The caller holds s.mu.
func (s *Store) live(id string) (*entry, error) {
	e, ok := s.byID[id]
	if !ok {
		return nil, ErrUnknown
	}
	if !s.now().Before(e.Expires) {
		delete(s.byID, id)
		return nil, ErrExpired
	}
	return e, nil
}

// purge drops expired requests. The caller holds s.mu.
func (s *Store) purge(now time.Time) {
	for id, e := range s.byID {
		if !now.Before(e.Expires) {
			delete(s.byID, id)
		}
	}
}
