package ledger

// Test hooks.

// Commits is how many times l replaced the file.
func Commits(l *Ledger) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.commits
}

// Pending is how many submitted changes are not committed yet.
func Pending(l *Ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending
}

// SelfOwner is this process's owner identity.
func SelfOwner() Owner { return selfOwner() }
