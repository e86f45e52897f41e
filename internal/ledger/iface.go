package ledger

import "github.com/mcpx/mcpx-policy/decision"

// Store is an unknown-outcome ledger as its users see it: the file in a
// state dir (*Ledger, the default) or a PostgreSQL database that a fleet
// shares (package pgledger, docs/ledger.md#a-ledger-a-fleet-shares). Both
// keep the same promise: no process that shares the store allows a write
// to a server while a write to it has an unknown outcome, and a write
// whose process dies in flight becomes an unknown-outcome entry.
//
// Errors are the same on both: an *UnreadableError (errors.Is
// ErrUnreadable; ErrNewerVersion for a store written by a newer build) for
// a store that cannot be used, ErrNotFound from Clear, a *ChangedError
// from ClearSeen. Every method is
// safe for concurrent use.
type Store interface {
	// BeginWrite records an in-flight marker for a write and returns once
	// it is durable; only then may the request bytes go out.
	BeginWrite(server, tool string, args map[string]any, surface string) (Write, error)
	// BeginCounted is BeginWrite for a write that write budgets count
	// (budget.go): in one atomic step with every process sharing the
	// store, it tallies c.Limits and either records nothing and returns a
	// *BudgetError (a budget is spent), or counts the write and records
	// its marker. c nil is BeginWrite.
	BeginCounted(server, tool string, args map[string]any, surface string, c *Counting) (Write, error)
	// Tally counts limits for a write to server at the store's time, for
	// the policy's input.
	Tally(server string, limits []Limit) ([]Tally, error)
	// Pending is what the policy sees of server's entries: the oldest
	// limit of them (all when limit < 0) and the total.
	Pending(server string, limit int) (Pending, error)
	// List is every entry, write in flight and cleared entry.
	List() (State, error)
	// Counts is the number of entries per server (servers without
	// entries absent).
	Counts() (map[string]int, error)
	// Clear clears server's entries (id "" for all of them), keeping each
	// in the cleared list with reason, and returns them.
	Clear(server, id, reason string) ([]Entry, error)
	// ClearSeen clears server's entries when they are exactly those a
	// listing showed as seen (Seen), and otherwise nothing, with a
	// *ChangedError: an entry recorded after the listing is never cleared
	// with the ones listed.
	ClearSeen(server, seen, reason string) ([]Entry, error)
	// Recover turns the markers of processes that died into entries now
	// and returns how many.
	Recover() (int, error)
	// Check reports whether the store reads (a readiness probe).
	Check() error
	// Where names the store for messages: the file's path, or the
	// database without its password.
	Where() string
	// Close releases what the store holds open. A process's writes still
	// in flight read as a dead process's from then on.
	Close() error
}

// Write is one write on its way to a server (Dispatch, for the file
// store): Sent once the bytes went out, then exactly one of Settle,
// Unknown or Abort; the first ending wins.
type Write interface {
	ID() string
	Entry() decision.LedgerEntry
	Sent()
	Settle() error
	Unknown(cause string) error
	Abort() error
}

var _ Store = (*Ledger)(nil)

// BeginWrite is Begin, as Store has it.
func (l *Ledger) BeginWrite(server, tool string, args map[string]any, surface string) (Write, error) {
	d, err := l.Begin(server, tool, args, surface)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// Where is the ledger file's path.
func (l *Ledger) Where() string { return l.path }

// Close does nothing: the slot file stays open for the life of the
// process, since closing it would drop the locks of unknowns still being
// saved (slots.go), and the kernel closes it at exit.
func (l *Ledger) Close() error { return nil }
