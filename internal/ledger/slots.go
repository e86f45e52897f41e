package ledger

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Slots carry an unknown outcome across processes when it cannot be saved.
//
// Begin gives each marker a slot: a byte offset in the slot file
// (ledger.slots) that no other marker in the file uses and no process
// holds locked. Unknown locks that byte with an OFD lock before it saves
// the entry, and unlocks it only once the entry is durable in the file
// (under the file lock). If the save fails — disk full, file unwritable —
// the lock stays while this Ledger retries in the background; every reader
// (another process, another Ledger of this process, this Ledger) counts a
// live marker whose slot is locked as an unknown-outcome entry. The lock
// needs no disk space, and the kernel drops it when the process dies, at
// which point the marker is a dead process's marker and an entry anyway.
// docs/decisions/0003-ledger.md has the argument.

// slotFile returns this Ledger's open of the slot file, the one its slot
// locks belong to, opening (and creating) it on first use.
func (l *Ledger) slotFile() (*os.File, error) {
	l.mu.Lock()
	f := l.slots
	l.mu.Unlock()
	if f != nil {
		return f, nil
	}
	if err := l.preflight(); err != nil {
		return nil, err
	}
	f, _, err := l.openChecked(slotsName, unix.O_RDWR|unix.O_CREAT)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.slots != nil {
		f.Close() // another Begin won the race; no lock was taken through f
		return l.slots, nil
	}
	l.slots = f
	return f, nil
}

// freeSlot picks the lowest slot that no marker in st uses, no retried
// change of this Ledger uses, and no process holds locked. It runs under
// the file lock, so two Begins never pick the same slot.
func (l *Ledger) freeSlot(st *fileState, t *slotTester) (int64, error) {
	used := map[int64]bool{}
	for _, m := range st.InFlight {
		used[m.Slot] = true
	}
	l.mu.Lock()
	for _, r := range l.retry {
		used[r.slot] = true
	}
	l.mu.Unlock()
	for s := int64(1); ; s++ {
		if used[s] {
			continue
		}
		locked, err := t.locked(s)
		if err != nil {
			return 0, err
		}
		if !locked {
			return s, nil
		}
	}
}

// holdSlot locks slot through this Ledger's open of the slot file.
func (l *Ledger) holdSlot(slot int64) error {
	l.mu.Lock()
	f := l.slots
	l.mu.Unlock()
	if f == nil || slot <= 0 {
		return fmt.Errorf("ledger: no slot to lock")
	}
	return lockSlot(f, slot)
}

// releaseSlot unlocks slot. Call it only once the entry the slot stood for
// is durable in the file (or an operator cleared it).
func (l *Ledger) releaseSlot(slot int64) {
	l.mu.Lock()
	f := l.slots
	l.mu.Unlock()
	if f != nil && slot > 0 {
		unlockSlot(f, slot) // an unlock that fails leaves a lock held: readers err on the safe side
	}
}

// relock takes the slot locks that retried Unknowns could not take.
func (l *Ledger) relock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, r := range l.retry {
		if r.unknown != nil && !r.held && r.slot > 0 && l.slots != nil && lockSlot(l.slots, r.slot) == nil {
			r.held = true
			l.retry[id] = r
		}
	}
}
