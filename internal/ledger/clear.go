package ledger

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Clear removes unknown-outcome entries of server — the one with id, or
// all of them when id is "" — and keeps each in the cleared list with the
// time and reason. Markers of dead processes are converted first, so they
// can be cleared too; live in-flight writes are never touched. It returns
// the entries it cleared, once the change is durable; clearing all of a
// server that has none returns an empty slice and writes nothing.
//
// Errors: server empty; ErrNotFound (wrapped) when id names no entry of
// server; an *UnreadableError for a bad file (nothing is written); I/O
// errors. Safe for concurrent use, also against other processes.
func (l *Ledger) Clear(server, id, reason string) ([]Entry, error) {
	if server == "" {
		return nil, errors.New("ledger: clear: server is required")
	}
	var out []Entry
	err := l.submit(func(st *fileState, now time.Time, _ int) (bool, error) {
		out = nil
		kept := make([]Entry, 0, len(st.Entries))
		for _, e := range st.Entries {
			if e.Server == server && (id == "" || e.ID == id) {
				out = append(out, e)
			} else {
				kept = append(kept, e)
			}
		}
		if id != "" && len(out) == 0 {
			return false, fmt.Errorf("ledger: clear %s --id %s: %w", server, id, ErrNotFound)
		}
		if len(out) == 0 {
			return false, nil
		}
		at := now.Format(timeFormat)
		for _, e := range out {
			st.Cleared = append(st.Cleared, Cleared{Entry: e, ClearedAt: at, Reason: reason})
		}
		st.Entries = kept
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return nonNil(out), nil
}

// ClearCommand is the command an operator runs to clear the entries of
// server (id "") or one entry: `mcpx-policy writes clear <server>` plus
// ` --id <id>`. Arguments that a POSIX shell would split are single-quoted.
func ClearCommand(server, id string) string {
	s := "mcpx-policy writes clear " + shellQuote(server)
	if id != "" {
		s += " --id " + shellQuote(id)
	}
	return s
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
