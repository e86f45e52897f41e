package ledger_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

// crashChild is the child role of TestCrashKill: 4 goroutines run the
// dispatch lifecycle until the parent kills the process. Each step is
// reported on stdout (fd 1, a pipe) with one write(2) of a short line,
// which a pipe delivers whole:
//
//	SENDING <id>   Begin returned; about to write the request bytes
//	SETTLING <id>  a definite answer came; about to Settle
//	SETTLED <id>   Settle returned
//	UNKNOWN <id>   Unknown returned
//	ABORTED <id>   Abort returned; the bytes were never written
func crashChild() {
	l, err := childStore()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	say := crashtest.Say
	if os.Getenv(childDSN) != "" {
		// Connect before READY (the pool and the owner session), so the
		// kills land while the lifecycle runs, as with the file store.
		w, err := l.BeginWrite("srv", "warm-up", nil, "test")
		if err == nil {
			err = w.Settle()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	say("READY", strconv.Itoa(os.Getpid()))
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for g := range 4 {
		go func() {
			for i := 0; ; i++ {
				d, err := l.BeginWrite("srv", "write", map[string]any{"g": g, "i": i}, "test")
				if err != nil {
					fail(err)
				}
				r := rand.IntN(100)
				if r < 15 {
					if err := d.Abort(); err != nil {
						fail(err)
					}
					say("ABORTED", d.ID())
					continue
				}
				say("SENDING", d.ID())
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond) // the request and its answer
				d.Sent()
				if r < 85 {
					say("SETTLING", d.ID())
					if err := d.Settle(); err != nil {
						fail(err)
					}
					say("SETTLED", d.ID())
				} else {
					if err := d.Unknown("timeout"); err != nil {
						fail(err)
					}
					say("UNKNOWN", d.ID())
				}
			}
		}()
	}
	select {}
}

// childStore opens the store a child role works on: the PostgreSQL
// database childDSN names, else the file in the state dir childDir names.
func childStore() (ledger.Store, error) {
	if dsn := os.Getenv(childDSN); dsn != "" {
		return pgledger.Open(dsn, "test", pgledger.Options{})
	}
	return ledger.Open(os.Getenv(childDir))
}

// childDSN names, for a child role, the PostgreSQL database to work on
// instead of a state dir.
const childDSN = "MCPX_LEDGER_TEST_DSN"

// TestCrashKill starts a child that runs the lifecycle in a loop, kills it
// with SIGKILL at a random moment, and checks after each kill that the file
// parses and that every write the child reported as being sent is either
// settled or an unknown-outcome entry. MCPX_LEDGER_CRASH_KILLS sets the
// number of kills (400 in a full run, make test-full; else 40).
func TestCrashKill(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var dir string
	crashKill(t, func(k int) (ledger.Store, []string) {
		if k%25 == 0 { // a fresh dir now and then keeps the cleared list short
			dir = filepath.Join(root, strconv.Itoa(k))
		}
		return open(t, dir), []string{childDir + "=" + dir}
	}, func(k int) {
		// Restart: the file parses, and Recover left no temp file.
		if b, err := os.ReadFile(filepath.Join(dir, ledger.FileName)); err == nil && !json.Valid(b) {
			t.Fatalf("kill %d: the file does not parse:\n%s", k, b)
		}
	}, func(k int) {
		if temps, _ := filepath.Glob(filepath.Join(dir, "."+ledger.FileName+"*")); len(temps) != 0 {
			t.Fatalf("kill %d: temp files left after Recover: %v", k, temps)
		}
	})
}

// TestCrashKillPostgres is TestCrashKill on the PostgreSQL store, with the
// same bar: 0 lost writes, no marker of the dead child left, every write
// it reported as being sent settled or an entry. The child's owner session
// ends when the kernel closes its socket; the parent, restarting, waits
// for the server to notice (at most LivenessTimeout for a vanished
// machine, milliseconds for a killed process).
func TestCrashKillPostgres(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	s, err := pgledger.Open(dsn, "test", pgledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The children name their sessions, so that the parent, restarting,
	// can wait for the server to end them: a killed child's statement in
	// progress may still commit (a marker of a write never sent, which
	// the dead session makes an entry: conservative).
	const app = "mcpx-crash-child"
	crashKill(t, func(int) (ledger.Store, []string) {
		return s, []string{childDSN + "=" + pgtest.WithParam(t, dsn, "application_name", app)}
	}, func(int) { pgtest.WaitSessionsGone(t, dsn, app, pgledger.LivenessTimeout+5*time.Second) }, nil)
}

// crashKill is the crash test on one store: store returns, for kill k, the
// store the parent checks with and the child's environment; afterKill and
// afterRecover (optional) check what is particular to the store.
func crashKill(t *testing.T, store func(k int) (ledger.Store, []string), afterKill, afterRecover func(k int)) {
	kills := crashtest.Kills("MCPX_LEDGER_CRASH_KILLS", 400, 40)
	start := time.Now()
	var stats struct {
		roundCounts
		recovered, unreadable int
	}
	for k := range kills {
		l, env := store(k)
		lines, err := runAndKill(t, env)
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		if afterKill != nil {
			afterKill(k)
		}
		// Restart: a fresh process (here, the parent) recovers; the
		// child's markers are a dead process's once its session or its
		// PID is gone.
		var st ledger.State
		deadline := time.Now().Add(pgledger.LivenessTimeout + 5*time.Second)
		for {
			n, err := l.Recover()
			if err != nil {
				stats.unreadable++
				t.Fatalf("kill %d: Recover: %v", k, err)
			}
			stats.recovered += n
			if st, err = l.List(); err != nil {
				t.Fatalf("kill %d: List: %v", k, err)
			}
			if len(st.InFlight) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: %d markers of the dead child left in flight", k, len(st.InFlight))
			}
			time.Sleep(5 * time.Millisecond)
		}
		if afterRecover != nil {
			afterRecover(k)
		}
		judgeRound(t, k, l, st, lines, &stats.roundCounts)
	}
	t.Logf("%d kills in %v; writes reported: %d settled, %d unknown, %d aborted; killed while sent and unanswered: %d, all entries; "+
		"killed inside Settle: %d settled, %d entries; %d conservative entries (killed between Begin and the send report); "+
		"%d markers recovered; lost writes %d, unreadable files %d",
		kills, time.Since(start).Round(time.Millisecond), stats.settled, stats.unknown, stats.aborted, stats.sending,
		stats.settlingGone, stats.settlingEntry, stats.extra, stats.recovered, stats.lost, stats.unreadable)
}

// roundCounts add up what the writes of the kill rounds came to.
type roundCounts struct {
	settled, unknown, aborted int
	sending                   int // killed while sent and unanswered
	settlingEntry             int // killed inside Settle (or a failed Abort): an entry
	settlingGone              int // killed inside Settle (or a failed Abort): settled
	extra                     int // entries the child never reported: killed between Begin and SENDING
	lost                      int // writes that should be entries and are not
}

// judgeRound checks one kill round: each write the child reported (lines:
// id → steps) against the entries of st, the ledger l after recovery. An
// aborted or settled write is no entry; an unknown one, and one killed
// while it was being sent, is (else it is lost); one killed inside Settle
// may be either. Then it clears l's entries, as an operator does after
// investigating, so the next round starts from an empty ledger.
func judgeRound(t *testing.T, k int, l ledger.Store, st ledger.State, lines map[string]map[string]bool, c *roundCounts) {
	t.Helper()
	entries := map[string]bool{}
	for _, e := range st.Entries {
		entries[e.ID] = true
	}
	for id, steps := range lines {
		switch {
		case steps["ABORTED"]:
			c.aborted++
			if entries[id] {
				t.Errorf("kill %d: aborted write %s is an entry", k, id)
			}
		case steps["SETTLED"]:
			c.settled++
			if entries[id] {
				t.Errorf("kill %d: settled write %s is an entry", k, id)
			}
		case steps["UNKNOWN"]:
			c.unknown++
			if !entries[id] {
				c.lost++
				t.Errorf("kill %d: unknown write %s is not an entry", k, id)
			}
		case steps["SETTLING"], steps["ABORTFAIL"]:
			if entries[id] {
				c.settlingEntry++
			} else {
				c.settlingGone++
			}
		case steps["SENDING"]:
			c.sending++
			if !entries[id] {
				c.lost++
				t.Errorf("kill %d: write %s was being sent when the child died and is not an entry: a lost write", k, id)
			}
		}
	}
	for id := range entries {
		if _, ok := lines[id]; !ok {
			c.extra++
		}
	}
	cleared, err := l.Clear("srv", "", fmt.Sprintf("round %d", k))
	if err != nil || len(cleared) != len(st.Entries) {
		t.Fatalf("kill %d: Clear = %d, %v; want %d", k, len(cleared), err, len(st.Entries))
	}
}

// runAndKill runs one crash child with env (its store), SIGKILLs it at a random moment
// and returns what it reported: id → steps.
func runAndKill(t *testing.T, env []string) (map[string]map[string]bool, error) {
	c, err := crashtest.Start(append([]string{childEnv + "=crash"}, env...)...)
	if err != nil {
		return nil, err
	}
	// Most kills land while the lifecycle runs; one in ten lands during
	// start-up, before the child has even opened the ledger.
	if rand.IntN(10) > 0 {
		if err := c.Ready(); err != nil {
			return nil, err
		}
		time.Sleep(time.Duration(rand.IntN(30_000)) * time.Microsecond)
	} else {
		time.Sleep(time.Duration(rand.IntN(5_000)) * time.Microsecond)
	}
	rest, err := c.Kill()
	if err != nil {
		return nil, err
	}
	lines := map[string]map[string]bool{}
	for _, line := range rest {
		what, id, ok := strings.Cut(line, " ")
		if !ok || what == "READY" {
			continue
		}
		if lines[id] == nil {
			lines[id] = map[string]bool{}
		}
		lines[id][what] = true
	}
	return lines, nil
}
