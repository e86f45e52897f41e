package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	selfOnce sync.Once
	self     Owner
)

// selfOwner is this process's identity, computed once.
func selfOwner() Owner {
	selfOnce.Do(func() {
		self = Owner{PID: os.Getpid(), Boot: bootID()}
		if start, _, err := procStat(self.PID); err == nil {
			self.Start = start
		}
	})
	return self
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStat returns the start time (field 22, clock ticks since boot) and
// the state (field 3) of a process from /proc/PID/stat.
func procStat(pid int) (start string, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces and
	// parentheses itself: the fields resume after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return "", 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return f[19], f[0][0], nil
}

// alive reports whether the process that wrote a marker may still be
// running: same boot, PID present and not a zombie, same start time. It
// answers true when in doubt (no /proc and signal 0 inconclusive), so a
// live process's marker is never taken from it.
func alive(o, self Owner) bool {
	if o == self {
		return true
	}
	if o.Boot != "" && self.Boot != "" && o.Boot != self.Boot {
		return false // written before a reboot
	}
	if o.PID <= 0 {
		return false
	}
	start, state, err := procStat(o.PID)
	switch {
	case err == nil:
		if state == 'Z' || state == 'X' {
			return false // exited, not yet reaped
		}
		return o.Start == "" || o.Start == start // a different start: PID reused
	case errors.Is(err, os.ErrNotExist) && self.Start != "":
		return false // /proc works here and the PID is gone
	}
	// No usable /proc: fall back to signal 0.
	if err := unix.Kill(o.PID, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	return true
}

// livenessCache answers alive once per owner within one read or commit.
type livenessCache map[Owner]bool

func (c livenessCache) check(o, self Owner) bool {
	v, ok := c[o]
	if !ok {
		v = alive(o, self)
		c[o] = v
	}
	return v
}

// deadEntry is the unknown-outcome entry a dead process's marker stands for.
func deadEntry(m Marker) Entry {
	return Entry{LedgerEntry: m.LedgerEntry,
		Cause: fmt.Sprintf("process %d exited while the call was in flight", m.Owner.PID)}
}
