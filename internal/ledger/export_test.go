package ledger

// Test hooks.

// Commits is how many times l replaced the file.
func Commits(l *Ledger) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.commits
}

// Queued is how many submitted changes are not committed yet.
func Queued(l *Ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending
}

// SelfOwner is this process's owner identity.
func SelfOwner() Owner { return selfOwner() }

// Parses is how many times l parsed the file.
func Parses(l *Ledger) uint64 { return l.parses.Load() }

// Retrying is how many changes l keeps retrying.
func Retrying(l *Ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.retry)
}

// RetrierRunning reports whether l's background retrier runs.
func RetrierRunning(l *Ledger) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.retrying
}

// FastLoads is how many reads of l the snapshot answered.
func FastLoads(l *Ledger) uint64 { return l.fastLoads.Load() }
