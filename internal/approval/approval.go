// Package approval binds a person's yes to one exact call, durably and
// across processes. A Store keeps approval requests in approvals.json in
// the state dir, beside the unknown-outcome ledger and guarded the same way
// (internal/statedir): every change is a read-modify-write under an
// exclusive flock on approvals.lock, written atomically and fsynced, so a
// daemon, a proxy and a CLI sharing the directory see one set of approvals.
//
// The life of a request: Request opens it (pending) for an ask, with the
// sha256 of the unredacted canonical call, a binding (an opaque digest of
// what else the approver was shown, compared on use) and the redacted
// prompt; Approve (given the sha256 the approver saw) or Decline answers
// it; Consume uses it once, for a call with the same sha256 and binding,
// and removes it in the same locked change, so exactly one of any number of
// concurrent consumers, in any processes, wins. A request expires TTL after
// it was opened; a Store holds at most MaxLive unexpired requests. Nothing
// is ever approved but by Approve.
//
// The file holds no arguments: the sha256 of the call, and the prompt as
// the approver is shown it (secret values redacted, long values cut). A
// missing file is an empty store; a corrupt, newer-version or unsafe file
// fails every operation with an *UnreadableError (so no ask becomes an
// allow) and is never overwritten.
package approval

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// Defaults and limits of a Store.
const (
	// DefaultTTL is how long a request lives, answered or not.
	DefaultTTL = 5 * time.Minute
	// DefaultMaxLive caps the unexpired requests of a state dir.
	DefaultMaxLive = 256
	// MaxPromptSize caps one request's prompt (its JSON): a bigger prompt
	// is refused with ErrTooLarge rather than stored.
	MaxPromptSize = 64 << 10
	// MaxFileSize caps approvals.json: a bigger file is unreadable. The
	// caps above keep a healthy file far below it.
	MaxFileSize = 32 << 20
)

// State is where a request stands (as the SDK lists it).
type State = decision.ApprovalState

// The states of a request. A consumed request is gone from the store.
const (
	Pending  = decision.ApprovalPending
	Approved = decision.ApprovalApproved
	Declined = decision.ApprovalDeclined
)

// Errors of a Store; match them with errors.Is.
var (
	// ErrUnknown: no such request — never opened in this state dir,
	// already used, or expired and purged.
	ErrUnknown = statedir.Kind(statedir.ErrNotFound, "no such approval request (never made here, already used, or expired)")
	// ErrExpired: the request's time ran out.
	ErrExpired = errors.New("the approval request expired")
	// ErrMismatch: the call is not the one the request is for — its
	// sha256 differs (the approver saw, or the caller sent, another call)
	// or its binding does (the reasons it asks for changed).
	ErrMismatch = statedir.Kind(statedir.ErrMismatch, "the call is not the one the approval request is for")
	// ErrNotApproved: the request is still waiting for an answer.
	ErrNotApproved = errors.New("the approval request has not been answered yet")
	// ErrDeclined: the request was declined.
	ErrDeclined = errors.New("the approval request was declined")
	// ErrFull: MaxLive requests are live already.
	ErrFull = errors.New("too many approval requests are waiting")
	// ErrTooLarge: the prompt is above MaxPromptSize.
	ErrTooLarge = errors.New("the prompt is too large to keep")
	// ErrUnreadable is matched by every *UnreadableError.
	ErrUnreadable = statedir.ErrUnreadable
	// ErrNewerVersion is matched by the *UnreadableError of a file written
	// by a newer build.
	ErrNewerVersion = statedir.Kind(statedir.ErrNewerVersion, "newer approval store version")
)

// UnreadableError reports an approval store that exists but cannot be
// used: the file, the lock file or the state dir (Store "approval store").
// Nothing is written; every request, answer and use fails until an
// operator repairs it.
type UnreadableError = statedir.UnreadableError

// Record is one approval request.
type Record struct {
	// ID is 32 random hex digits.
	ID string `json:"id"`
	// SHA256 is the hex SHA-256 of the unredacted canonical call
	// (decision.CallSHA256): what an approval binds to.
	SHA256 string `json:"sha256"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Surface is where the ask was made (mcp, daemon, cli).
	Surface string    `json:"surface,omitempty"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	State   State     `json:"state"`
	// Answered is when Approve or Decline last changed State.
	Answered time.Time `json:"answered,omitzero"`
	// Binding is compared, as an opaque string, by Consume: the caller's
	// digest of what else must not change between the ask and the use.
	Binding string `json:"binding"`
	// Prompt is the redacted prompt as the approver is shown it (JSON).
	Prompt json.RawMessage `json:"prompt"`
}

// Store is the approval store of one state dir. It is safe for concurrent
// use; several Stores, in this or other processes, may share a directory.
type Store struct {
	file    *statedir.File[*fileState]
	path    string
	now     func() time.Time
	ttl     time.Duration
	maxLive int
}

// Option configures a Store.
type Option func(*Store)

// WithTTL sets how long a request lives (default DefaultTTL); 0 or less
// keeps the default.
func WithTTL(d time.Duration) Option {
	return func(s *Store) {
		if d > 0 {
			s.ttl = d
		}
	}
}

// WithMaxLive caps the live requests (default DefaultMaxLive); 0 or less
// keeps the default.
func WithMaxLive(n int) Option {
	return func(s *Store) {
		if n > 0 {
			s.maxLive = n
		}
	}
}

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// Open returns the store in the state dir dir (made absolute). It touches
// nothing on disk: the directory (0700), approvals.lock and approvals.json
// (0600) are created by the first request.
func Open(dir string, opts ...Option) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("approval: state dir %q: %w", dir, err)
	}
	path := filepath.Join(abs, FileName)
	s := &Store{path: path, now: time.Now, ttl: DefaultTTL, maxLive: DefaultMaxLive}
	s.file = &statedir.File[*fileState]{
		Dir: statedir.New(abs), Name: FileName, Lock: lockName, Max: MaxFileSize,
		Empty:  func() *fileState { return &fileState{Version: Version} },
		Decode: decode,
		Store:  "approval store",
		Aside:  "move it aside (mv " + path + " " + path + ".bad): the requests in it are lost and their calls are asked again",
		Prefix: "approval",
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Path is approvals.json's path.
func (s *Store) Path() string { return s.path }

// Request opens a pending request from r's SHA256, Server, Tool, Surface,
// Binding and Prompt, with a fresh random ID, Created now and Expires TTL
// later, and returns it once it is durable. Expired requests are dropped on
// the way. Errors: ErrTooLarge, ErrFull, an *UnreadableError, I/O errors.
func (s *Store) Request(r Record) (Record, error) {
	if len(r.Prompt) > MaxPromptSize {
		return Record{}, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(r.Prompt), MaxPromptSize)
	}
	if r.SHA256 == "" || r.Server == "" || r.Tool == "" {
		return Record{}, errors.New("approval: request: sha256, server and tool are required")
	}
	var raw [16]byte
	rand.Read(raw[:]) // never fails (crypto/rand)
	err := s.transact(func(st *fileState, now time.Time) (bool, error) {
		if st.liveCount(now) >= s.maxLive {
			return false, fmt.Errorf("%w: %d, the most a state dir keeps", ErrFull, s.maxLive)
		}
		r.ID = hex.EncodeToString(raw[:])
		r.Created, r.Expires, r.State, r.Answered = now, now.Add(s.ttl), Pending, time.Time{}
		st.Approvals = append(st.Approvals, r)
		return true, nil
	})
	if err != nil {
		return Record{}, err
	}
	return r, nil
}

// Approve records a yes for request id, for the call whose sha256 the
// approver was shown, and returns the request. Approving an approved
// request again is harmless. Errors: ErrUnknown, ErrExpired, ErrMismatch
// (sha256 is not the request's; nothing changes), ErrDeclined, an
// *UnreadableError, I/O errors.
func (s *Store) Approve(id, sha256 string) (Record, error) {
	return s.answer(id, func(r *Record) error {
		switch {
		case r.SHA256 != sha256:
			return fmt.Errorf("%w: approval %s is for the call with sha256 %s, not %s", ErrMismatch, id, r.SHA256, sha256)
		case r.State == Declined:
			return fmt.Errorf("%w: approval %s", ErrDeclined, id)
		}
		return nil
	}, Approved)
}

// Decline records a no for request id (also after a yes, until it is used)
// and returns the request: using it then fails with ErrDeclined. Errors:
// ErrUnknown, ErrExpired, an *UnreadableError, I/O errors.
func (s *Store) Decline(id string) (Record, error) {
	return s.answer(id, func(*Record) error { return nil }, Declined)
}

func (s *Store) answer(id string, check func(*Record) error, to State) (Record, error) {
	var out Record
	err := s.transact(func(st *fileState, now time.Time) (bool, error) {
		i, err := st.live(id, now)
		if err != nil {
			return false, err
		}
		r := &st.Approvals[i]
		if err := check(r); err != nil {
			return false, err
		}
		if r.State == to {
			out = *r
			return false, nil
		}
		r.State, r.Answered = to, now
		out = *r
		return true, nil
	})
	return out, err
}

// Consume uses request id for the call with sha256 and binding, once: it
// succeeds only when the request is approved and unexpired and both match,
// and removes it in the same durable change. Whatever the outcome, a
// request that expired, was declined, or does not match is removed too (a
// changed call voids it); only a pending one stays, for its answer. Errors:
// ErrUnknown (a replay), ErrExpired, ErrMismatch, ErrDeclined,
// ErrNotApproved, an *UnreadableError, I/O errors (the approval is then
// not used).
func (s *Store) Consume(id, sha256, binding string) (Record, error) {
	var out Record
	err := s.transact(func(st *fileState, now time.Time) (bool, error) {
		i, err := st.live(id, now)
		if err != nil {
			return false, err
		}
		r := st.Approvals[i]
		out = r
		switch {
		case r.SHA256 != sha256:
			err = fmt.Errorf("%w: approval %s is for the call with sha256 %s, this call's is %s", ErrMismatch, id, r.SHA256, sha256)
		case r.Binding != binding:
			err = fmt.Errorf("%w: approval %s was given for other reasons to ask than this call's now", ErrMismatch, id)
		case r.State == Declined:
			err = fmt.Errorf("%w: approval %s", ErrDeclined, id)
		case r.State == Pending:
			return false, fmt.Errorf("%w: approval %s", ErrNotApproved, id)
		}
		st.Approvals = slices.Delete(st.Approvals, i, i+1)
		return true, err
	})
	return out, err
}

// Discard removes request id if it exists, in whatever state, and reports
// whether it did: an approval presented with a call that is no longer an
// ask is spent. Errors: an *UnreadableError, I/O errors.
func (s *Store) Discard(id string) (bool, error) {
	found := false
	err := s.transact(func(st *fileState, now time.Time) (bool, error) {
		i := slices.IndexFunc(st.Approvals, func(r Record) bool { return r.ID == id })
		if i < 0 {
			return false, nil
		}
		found = true
		st.Approvals = slices.Delete(st.Approvals, i, i+1)
		return true, nil
	})
	return found, err
}

// List returns the live requests, oldest first, read without the lock (the
// file is only ever replaced whole). A missing file is an empty list.
func (s *Store) List() ([]Record, error) {
	st, err := s.load()
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	out := []Record{}
	for _, r := range st.Approvals {
		if now.Before(r.Expires) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Record) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// Get returns live request id. Errors: ErrUnknown, ErrExpired, an
// *UnreadableError.
func (s *Store) Get(id string) (Record, error) {
	st, err := s.load()
	if err != nil {
		return Record{}, err
	}
	i, err := st.live(id, s.now().UTC())
	if err != nil {
		return Record{}, err
	}
	return st.Approvals[i], nil
}
