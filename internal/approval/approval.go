// Package approval binds a person's yes to one exact call, durably and
// across processes. A Backend keeps approval requests: Store, an
// append-only log in the state dir (approvals.log, beside the
// unknown-outcome ledger and guarded like it: internal/statedir), or a
// PostgreSQL database a fleet shares (internal/pgstate). Both keep the
// same promises, which the tests in internal/approval/approvaltest check
// on each.
//
// The life of a request: Request opens it (pending) for an ask, with the
// sha256 of the unredacted canonical call, a binding (an opaque digest of
// what else the approver was shown and the policy judged, compared on
// use), who asked (Caller, Principal) and the redacted prompt; Approve
// (given the sha256 the approver saw) or Decline answers it; Consume uses
// it once, for a call with the same sha256 and binding, and removes it in
// the same durable change, so exactly one of any number of concurrent
// consumers, in any processes, wins. A request expires TTL after it was
// opened. Nothing is ever approved but by Approve.
//
// Fairness: an ask identical to one still pending (same sha256 and
// binding) is that request again, not a new one; and the live requests
// are capped per caller (MaxPerCaller, Caller and Principal together),
// per surface (MaxPerSurface, Caller's surface) and in all (MaxLive), so
// one caller flooding asks cannot make another's un-approvable
// (docs/surfaces.md#fairness-one-caller-cannot-starve-another). A request beyond a cap is refused with
// ErrFull, which the caller turns into a deny.
//
// A store holds no arguments: the sha256 of the call, and the prompt as the
// approver is shown it (secret values redacted), kept as opaque bytes. A
// store that exists but cannot be used — a corrupt, newer-version or unsafe
// file, a database that does not answer — fails every operation with an
// *UnreadableError (so no ask becomes an allow) and is never overwritten.
package approval

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/statedir"
)

// Defaults and limits of a Backend.
const (
	// DefaultTTL is how long a request lives, answered or not.
	DefaultTTL = 5 * time.Minute
	// DefaultMaxLive caps the unexpired requests of a store.
	DefaultMaxLive = 256
	// DefaultMaxPerCaller caps the unexpired requests of one caller (a
	// Caller and Principal together).
	DefaultMaxPerCaller = 16
	// MaxPromptSize caps one request's prompt (its JSON): a bigger prompt
	// is refused with ErrTooLarge rather than stored.
	MaxPromptSize = 64 << 10
	// MaxNameSize caps a request's server, tool, surface, caller and
	// principal, in bytes (ErrTooLarge).
	MaxNameSize = 1024
)

// State is where a request stands (as the SDK lists it).
type State = decision.ApprovalState

// The states of a request. A consumed request is gone from the store.
const (
	Pending  = decision.ApprovalPending
	Approved = decision.ApprovalApproved
	Declined = decision.ApprovalDeclined
)

// Errors of a Backend; match them with errors.Is.
var (
	// ErrUnknown: no such request — never opened in this store, already
	// used, or expired and purged.
	ErrUnknown = statedir.Kind(statedir.ErrNotFound, "no such approval request (never made here, already used, or expired)")
	// ErrExpired: the request's time ran out.
	ErrExpired = errors.New("the approval request expired")
	// ErrMismatch: the call is not the one the request is for — its
	// sha256 differs (the approver saw, or the caller sent, another call)
	// or its binding does (the reasons it asks for, the principal or the
	// config revision changed).
	ErrMismatch = statedir.Kind(statedir.ErrMismatch, "the call is not the one the approval request is for")
	// ErrNotApproved: the request is still waiting for an answer.
	ErrNotApproved = errors.New("the approval request has not been answered yet")
	// ErrDeclined: the request was declined.
	ErrDeclined = errors.New("the approval request was declined")
	// ErrFull: a cap on live requests is reached — the caller's, its
	// surface's or the store's (Limits); the text says which.
	ErrFull = errors.New("too many approval requests are waiting")
	// ErrTooLarge: the prompt is above MaxPromptSize, or a name above
	// MaxNameSize.
	ErrTooLarge = errors.New("the prompt is too large to keep")
	// ErrUnreadable is matched by every *UnreadableError.
	ErrUnreadable = statedir.ErrUnreadable
	// ErrNewerVersion is matched by the *UnreadableError of a store
	// written by a newer build.
	ErrNewerVersion = statedir.Kind(statedir.ErrNewerVersion, "newer approval store version")
)

// UnreadableError reports an approval store that exists but cannot be
// used: the file, the lock file or the state dir, or the database (Store
// "approval store"). Nothing is written; every request, answer and use
// fails until an operator repairs it.
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
	Surface string `json:"surface,omitempty"`
	// Caller is who asked, as the program that took the call knows it
	// ("daemon:127.0.0.1", "mcp:<session>", "cli"): the text before the
	// first ':' is the surface its quota counts under (SurfaceOf).
	Caller string `json:"caller,omitempty"`
	// Principal is the id of the call's principal ("" for none).
	Principal string    `json:"principal,omitempty"`
	Created   time.Time `json:"created"`
	Expires   time.Time `json:"expires"`
	State     State     `json:"state"`
	// Answered is when Approve or Decline last changed State.
	Answered time.Time `json:"answered,omitzero"`
	// Binding is compared, as an opaque string, by Consume: the caller's
	// digest of what else must not change between the ask and the use.
	// Requests with equal SHA256 and Binding are the same ask.
	Binding string `json:"binding"`
	// Prompt is the redacted prompt as the approver is shown it (JSON),
	// kept as given.
	Prompt json.RawMessage `json:"prompt"`
}

// Backend is an approval store. Its methods are safe for concurrent use,
// and any number of Backends on one state dir or database, in any
// processes, behave as one store.
type Backend interface {
	// Request opens a pending request from r's SHA256, Server, Tool,
	// Surface, Caller, Principal, Binding and Prompt, with a fresh random
	// ID, Created now and Expires TTL later, and returns it once it is
	// durable — or, when a live pending request has r's SHA256 and
	// Binding already, returns that one and opens nothing. Errors:
	// ErrTooLarge, ErrFull (a cap of Limits), an *UnreadableError, I/O
	// errors.
	Request(r Record) (Record, error)
	// Approve records a yes for request id, for the call whose sha256 the
	// approver was shown, and returns the request. Approving an approved
	// request again is harmless. Errors: ErrUnknown, ErrExpired,
	// ErrMismatch (sha256 is not the request's; nothing changes),
	// ErrDeclined, an *UnreadableError, I/O errors.
	Approve(id, sha256 string) (Record, error)
	// Decline records a no for request id (also after a yes, until it is
	// used) and returns the request: using it then fails with
	// ErrDeclined. Errors: ErrUnknown, ErrExpired, an *UnreadableError,
	// I/O errors.
	Decline(id string) (Record, error)
	// Consume uses request id for the call with sha256 and binding, once:
	// it succeeds only when the request is approved and unexpired and
	// both match, and removes it in the same durable change. Whatever the
	// outcome, a request that expired, was declined, or does not match is
	// removed too (a changed call voids it); only a pending one stays, for
	// its answer. Errors: ErrUnknown (a replay), ErrExpired, ErrMismatch,
	// ErrDeclined, ErrNotApproved, an *UnreadableError, I/O errors (the
	// approval is then not used).
	Consume(id, sha256, binding string) (Record, error)
	// Discard removes request id if it exists, in whatever state, and
	// reports whether it did: an approval presented with a call that is
	// no longer an ask is spent. Errors: an *UnreadableError, I/O errors.
	Discard(id string) (bool, error)
	// List returns the live requests, oldest first.
	List() ([]Record, error)
	// Get returns live request id. Errors: ErrUnknown, ErrExpired, an
	// *UnreadableError.
	Get(id string) (Record, error)
	// Where names the store: the file's path, or the database without its
	// password.
	Where() string
}

// Limits caps the live (unexpired) requests of a store. A request beyond
// any cap is refused with ErrFull; an identical pending ask is never
// refused (it is the request already there).
type Limits struct {
	// MaxLive caps them all.
	MaxLive int
	// MaxPerSurface caps those of one surface (SurfaceOf(Caller)).
	MaxPerSurface int
	// MaxPerCaller caps those of one caller (Caller and Principal).
	MaxPerCaller int
}

// Config is what Options set; a Backend reads it with Configure.
type Config struct {
	TTL    time.Duration
	Limits Limits
	Now    func() time.Time
}

// Option configures a Backend.
type Option func(*Config)

// WithTTL sets how long a request lives (default DefaultTTL); 0 or less
// keeps the default.
func WithTTL(d time.Duration) Option {
	return func(c *Config) {
		if d > 0 {
			c.TTL = d
		}
	}
}

// WithMaxLive caps the live requests (default DefaultMaxLive); 0 or less
// keeps the default. A surface may hold at most half of them, rounded up.
func WithMaxLive(n int) Option {
	return func(c *Config) {
		if n > 0 {
			c.Limits.MaxLive = n
		}
	}
}

// WithMaxPerCaller caps the live requests of one caller (default
// DefaultMaxPerCaller, and never more than a surface may hold); 0 or less
// keeps the default.
func WithMaxPerCaller(n int) Option {
	return func(c *Config) {
		if n > 0 {
			c.Limits.MaxPerCaller = n
		}
	}
}

// WithClock sets the clock (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *Config) { c.Now = now } }

// Configure applies opts to the defaults.
func Configure(opts ...Option) Config {
	c := Config{TTL: DefaultTTL, Now: time.Now, Limits: Limits{MaxLive: DefaultMaxLive}}
	for _, o := range opts {
		o(&c)
	}
	c.Limits.MaxPerSurface = (c.Limits.MaxLive + 1) / 2
	if c.Limits.MaxPerCaller == 0 {
		c.Limits.MaxPerCaller = DefaultMaxPerCaller
	}
	c.Limits.MaxPerCaller = min(c.Limits.MaxPerCaller, c.Limits.MaxPerSurface)
	return c
}

// Clock is the time a store stamps and compares: now, in UTC, to the
// microsecond (what PostgreSQL keeps), so that every Backend records the
// same instants.
func (c Config) Clock() time.Time { return c.Now().UTC().Truncate(time.Microsecond) }

// NewID is a fresh request id: 128 random bits, 32 hex digits.
func NewID() string {
	var raw [16]byte
	rand.Read(raw[:]) // never fails (crypto/rand)
	return hex.EncodeToString(raw[:])
}

// CheckRequest checks what Request is given: the prompt's and the names'
// sizes, and the fields it needs. Errors: ErrTooLarge, or a plain error
// for a missing field.
func CheckRequest(r Record) error {
	if len(r.Prompt) > MaxPromptSize {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(r.Prompt), MaxPromptSize)
	}
	for _, s := range []string{r.Server, r.Tool, r.Surface, r.Caller, r.Principal} {
		if len(s) > MaxNameSize {
			return fmt.Errorf("%w: a name of %d bytes, at most %d", ErrTooLarge, len(s), MaxNameSize)
		}
	}
	if !hexSum.MatchString(r.SHA256) || r.Server == "" || r.Tool == "" {
		return errors.New("approval: request: a sha256 of 64 hex digits, a server and a tool are required")
	}
	return nil
}

// Renew is r as Request opens it: a fresh ID, Created now, Expires ttl
// later, pending.
func Renew(r Record, now time.Time, ttl time.Duration) Record {
	r.ID = NewID()
	r.Created, r.Expires, r.State, r.Answered = now, now.Add(ttl), Pending, time.Time{}
	return r
}
