//go:build !linux

package ledger

import (
	"errors"
	"os"
)

// ofdLocks says whether slot locks work here: not on this platform, which
// has no open file description locks. An Unknown whose save failed blocks
// this process's writes only (docs/decisions/0003-ledger.md).
const ofdLocks = false

var errNoOFD = errors.New("open file description locks are not available on this platform")

func lockSlot(*os.File, int64) error { return errNoOFD }

func unlockSlot(*os.File, int64) error { return nil }

func slotLocked(*os.File, int64) (bool, error) { return false, nil }
