package ledger

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
)

// NewEntry is the entry a write of server's tool with args records if its
// outcome turns out unknown: id (each store makes its own), the SHA-256 of
// the canonical args (decision.ArgsSHA256, never the args), the time now
// in TimeFormat and the surface. It fails when server or tool is empty or
// args are not JSON; the request must then not be sent.
func NewEntry(id, server, tool string, args map[string]any, surface string) (decision.LedgerEntry, error) {
	if server == "" || tool == "" {
		return decision.LedgerEntry{}, errors.New("ledger: begin: server and tool are required")
	}
	sum, err := decision.ArgsSHA256(args)
	if err != nil {
		return decision.LedgerEntry{}, fmt.Errorf("ledger: begin: %w", err)
	}
	return decision.LedgerEntry{
		ID: id, Server: server, Tool: tool, ArgsSHA256: sum,
		Time: time.Now().UTC().Format(TimeFormat), Surface: surface,
	}, nil
}

// Lifecycle is the part of a Write every store shares: the entry it
// records, whether the request bytes went out, and how Settle, Unknown
// and Abort come down to the store's one ending. A store's write embeds
// it and calls Init with its ending: end(nil) removes the marker, end(e)
// turns it into the unknown-outcome entry e; the first ending wins. Its
// methods are safe for concurrent use.
type Lifecycle struct {
	entry decision.LedgerEntry
	end   func(unknown *Entry) error

	mu   sync.Mutex
	sent bool
}

// Init sets the entry and the store's ending; call it once, before the
// write is used.
func (w *Lifecycle) Init(entry decision.LedgerEntry, end func(unknown *Entry) error) {
	w.entry, w.end = entry, end
}

// ID is the write's id: its marker's and, if the outcome turns out
// unknown, its entry's.
func (w *Lifecycle) ID() string { return w.entry.ID }

// Entry is the entry this write records if its outcome is unknown.
func (w *Lifecycle) Entry() decision.LedgerEntry { return w.entry }

// Sent records that the request bytes were written (or that writing them
// started). It is kept in memory only: after a crash no store can tell,
// so every leftover marker counts as sent. It changes what Abort does.
func (w *Lifecycle) Sent() {
	w.mu.Lock()
	w.sent = true
	w.mu.Unlock()
}

// Settle ends the write on a definite result or error from the server:
// the marker is removed and nothing is recorded. When the store cannot
// remove it, Settle returns the error and the store retries in the
// background (the marker meanwhile stays, which is conservative: should
// this process die, it becomes an unknown-outcome entry).
func (w *Lifecycle) Settle() error { return w.end(nil) }

// Unknown ends the write when its outcome is lost after the bytes went
// out (transport failure, process exit, timeout, cancellation): the
// marker becomes an unknown-outcome entry with cause ("outcome unknown"
// when empty), which every reader counts from then on. When the store
// cannot save it, Unknown returns the error, the server's writes stay
// blocked everywhere and the store retries in the background.
func (w *Lifecycle) Unknown(cause string) error {
	e := Entry{LedgerEntry: w.entry, Cause: strings.TrimSpace(cause)}
	if e.Cause == "" {
		e.Cause = "outcome unknown"
	}
	return w.end(&e)
}

// Abort ends a write whose request bytes were never written: the marker
// is removed. After Sent it is not an abort any more: it records an
// unknown-outcome entry as Unknown("aborted after the request was sent")
// does.
func (w *Lifecycle) Abort() error {
	w.mu.Lock()
	sent := w.sent
	w.mu.Unlock()
	if sent {
		return w.Unknown("aborted after the request was sent")
	}
	return w.end(nil)
}
