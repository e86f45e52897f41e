//go:build linux

package ledger_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

func init() { childRoles["crashfull"] = crashFullChild }

// crashFullChild is the child role of TestCrashKillDiskFull: crashChild's
// lifecycle on a ledger that fails to write now and then. A failed Begin
// sends nothing; a failed Settle or Abort leaves its marker (retried in the
// background); Unknown is reported whether or not its entry could be
// saved. After each Unknown the child checks that it counts the write as
// an entry itself. Lines, besides crashChild's:
//
//	BEGINFAIL -       Begin failed; nothing is sent
//	SETTLEFAIL <id>   Settle failed: settled or an entry, both fine
//	ABORTFAIL <id>    Abort failed: removed or an entry, both fine
//	UNSAVED <id>      Unknown returned an error (it is reported as UNKNOWN too)
//	VIOLATION <id>    this process does not count its own unknown write
func crashFullChild() {
	l, err := ledger.Open(os.Getenv(childDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	say := crashtest.Say
	say("READY", strconv.Itoa(os.Getpid()))
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				d, err := l.Begin("srv", "write", map[string]any{"g": g, "i": i}, "test")
				if err != nil {
					say("BEGINFAIL", "-")
					time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
					continue
				}
				r := rand.IntN(100)
				if r < 15 {
					if err := d.Abort(); err != nil {
						say("ABORTFAIL", d.ID())
					} else {
						say("ABORTED", d.ID())
					}
					continue
				}
				say("SENDING", d.ID())
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
				d.Sent()
				if r < 85 {
					say("SETTLING", d.ID())
					if err := d.Settle(); err != nil {
						say("SETTLEFAIL", d.ID())
					} else {
						say("SETTLED", d.ID())
					}
					continue
				}
				if err := d.Unknown("timeout"); err != nil {
					say("UNSAVED", d.ID())
				}
				say("UNKNOWN", d.ID())
				es, err := l.Entries("srv")
				if err != nil || !slices.ContainsFunc(es, func(e decision.LedgerEntry) bool { return e.ID == d.ID() }) {
					say("VIOLATION", d.ID())
				}
			}
		}()
	}
	select {}
}

// TestCrashKillDiskFull is TestCrashKill on a ledger whose writes fail now
// and then: a tmpfs the parent fills and empties at random moments, or,
// where mounting is not permitted, the child's RLIMIT_FSIZE set to 0 and
// back from outside. The bar is the same — after each SIGKILL and restart
// no lost write and no unreadable file — plus one: while the child runs,
// every write it reports unknown (saved or not) already counts as an entry
// in this process and in its own. MCPX_LEDGER_CRASH_KILLS/4 sets the
// number of kills (100 in a full run, make test-full; else 20); MCPX_LEDGER_FAULT=fsize
// picks the fallback fault even where a tmpfs can be mounted.
func TestCrashKillDiskFull(t *testing.T) {
	t.Parallel()
	kills := crashtest.Kills("MCPX_LEDGER_CRASH_KILLS", 400, 80) / 4
	var f fault
	if os.Getenv("MCPX_LEDGER_FAULT") == "fsize" {
		f = &fsizeFault{d: filepath.Join(t.TempDir(), "state")}
		t.Log("fault: RLIMIT_FSIZE 0 on the child (EFBIG), as MCPX_LEDGER_FAULT asks")
	} else if tf, err := newTmpfsFault(t); err == nil {
		f = tf
		t.Log("fault: a full 1 MiB tmpfs (ENOSPC)")
	} else {
		f = &fsizeFault{d: filepath.Join(t.TempDir(), "state")}
		t.Logf("fault: RLIMIT_FSIZE 0 on the child (EFBIG); mounting a tmpfs is not permitted here: %v", err)
	}
	base := f.dir()
	start := time.Now()
	var stats struct {
		roundCounts
		unsaved, failed, unreadable, checked int
	}
	var dir string
	// a quick run that has not met the fault yet goes on, up to a full
	// run's kills: the fault biting is what the test is about, and at
	// random moments 20 kills sometimes miss it
	k := 0
	for ; k < kills || (stats.unsaved == 0 && k < 100); k++ {
		if k%25 == 0 {
			if dir != "" {
				os.RemoveAll(dir) // the tmpfs is small
			}
			dir = filepath.Join(base, strconv.Itoa(k))
		}
		lines, checked, err := runFaultyAndKill(t, f, dir)
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		stats.checked += checked
		if b, err := os.ReadFile(filepath.Join(dir, ledger.FileName)); err == nil && !json.Valid(b) {
			stats.unreadable++
			t.Fatalf("kill %d: the file does not parse:\n%s", k, b)
		}
		l := open(t, dir)
		if _, err := l.Recover(); err != nil {
			stats.unreadable++
			t.Fatalf("kill %d: Recover: %v", k, err)
		}
		st, err := l.List()
		if err != nil {
			t.Fatalf("kill %d: List: %v", k, err)
		}
		if len(st.InFlight) != 0 {
			t.Fatalf("kill %d: %d markers of the dead child left in flight", k, len(st.InFlight))
		}
		for id, steps := range lines {
			if steps["VIOLATION"] {
				t.Errorf("kill %d: the child did not count its own unknown write %s", k, id)
			}
			if steps["UNSAVED"] {
				stats.unsaved++
			}
			if steps["SETTLEFAIL"] || steps["ABORTFAIL"] {
				stats.failed++
			}
		}
		judgeRound(t, k, l, st, lines, &stats.roundCounts)
	}
	t.Logf("%d kills in %v; writes reported: %d settled, %d unknown (%d of them not saved when Unknown returned, %d checked from this process while the child ran), "+
		"%d aborted, %d failed Settles or Aborts; killed while sent and unanswered: %d, all entries; %d conservative entries; lost writes %d, unreadable files %d",
		k, time.Since(start).Round(time.Millisecond), stats.settled, stats.unknown, stats.unsaved, stats.checked,
		stats.aborted, stats.failed, stats.sending, stats.extra, stats.lost, stats.unreadable)
	if stats.unsaved == 0 {
		t.Error("no Unknown ever failed to save: the fault did not bite")
	}
}

// runFaultyAndKill runs one crashFullChild in dir, turns the fault on and
// off at random moments, SIGKILLs the child, and returns what it reported
// (id → steps) and how many of its unknown writes this process checked
// while it ran. Each UNKNOWN line is checked as soon as it arrives: this
// process must already count the write as an entry.
func runFaultyAndKill(t *testing.T, f fault, dir string) (map[string]map[string]bool, int, error) {
	c, err := crashtest.Start(childEnv+"=crashfull", childDir+"="+dir)
	if err != nil {
		return nil, 0, err
	}
	pid := c.Cmd.Process.Pid
	r := c.Out
	if err := c.Ready(); err != nil {
		return nil, 0, err
	}
	reader := open(t, dir)
	lines := map[string]map[string]bool{}
	var problems []string
	checked := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := r.ReadString('\n')
			what, id, ok := strings.Cut(strings.TrimSpace(line), " ")
			if ok {
				if lines[id] == nil {
					lines[id] = map[string]bool{}
				}
				lines[id][what] = true
				if what == "UNKNOWN" {
					checked++
					es, err := reader.Entries("srv")
					if err != nil || !slices.ContainsFunc(es, func(e decision.LedgerEntry) bool { return e.ID == id }) {
						problems = append(problems, fmt.Sprintf("write %s is unknown in the child and this process allows writes to srv (%v)", id, err))
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	on := false
	for end := time.Now().Add(time.Duration(rand.IntN(30_000)) * time.Microsecond); time.Now().Before(end); {
		time.Sleep(time.Duration(rand.IntN(4_000)) * time.Microsecond)
		if on = !on; on {
			f.on(t, pid)
		} else {
			f.off(t, pid)
		}
	}
	if err := c.SIGKILL(); err != nil {
		return nil, 0, err
	}
	<-done
	err = c.Reap()
	f.off(t, pid)
	if err != nil {
		return nil, 0, err
	}
	if len(problems) > 0 {
		return nil, 0, errors.New(strings.Join(problems, "\n"))
	}
	return lines, checked, nil
}
