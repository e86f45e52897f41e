package ledger

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// ofdLocks says whether slot locks work here: open file description locks
// (fcntl F_OFD_SETLK, Linux 3.15 and later).
const ofdLocks = true

// lockSlot takes an OFD write lock on byte slot of the slot file f without
// waiting. The lock belongs to f's open file description: another open of
// the file, in this process or another, sees it; the kernel drops it when
// the last descriptor of f is closed, at the latest when the process dies.
// It needs no disk space.
func lockSlot(f *os.File, slot int64) error {
	return ofd(f, unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: slot, Len: 1})
}

// unlockSlot releases lockSlot's lock.
func unlockSlot(f *os.File, slot int64) error {
	return ofd(f, unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_UNLCK, Whence: 0, Start: slot, Len: 1})
}

// slotLocked reports whether another open file description than f's holds
// a lock on byte slot.
func slotLocked(f *os.File, slot int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: slot, Len: 1}
	if err := ofd(f, unix.F_OFD_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != unix.F_UNLCK, nil
}

func ofd(f *os.File, cmd int, lk *unix.Flock_t) error {
	for {
		err := unix.FcntlFlock(f.Fd(), cmd, lk)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}
