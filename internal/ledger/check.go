package ledger

// Check reports whether the ledger reads: the state dir and its files pass
// their checks and ledger.json parses (a missing one is an empty ledger).
// It is what a readiness probe asks; the error is the *UnreadableError
// every write is denied with meanwhile. Safe for concurrent use; it does
// not lock and does not write.
func (l *Ledger) Check() error {
	_, err := l.load()
	return err
}

// Counts returns how many unknown-outcome entries each server has, as
// List counts them (dead processes' markers and unsaved unknowns
// included); servers without entries are absent. Safe for concurrent use.
func (l *Ledger) Counts() (map[string]int, error) {
	st, err := l.List()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int)
	for _, e := range st.Entries {
		out[e.Server]++
	}
	return out, nil
}
