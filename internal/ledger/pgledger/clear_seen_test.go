package pgledger_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/ledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger"
	"github.com/mcpx/mcpx-policy/internal/ledger/pgledger/pgtest"
)

func lose(t *testing.T, s ledger.Store, server string) string {
	t.Helper()
	w := begin(t, s, server, rand.Int())
	w.Sent()
	if err := w.Unknown("timeout"); err != nil {
		t.Fatal(err)
	}
	return w.ID()
}

func ids(es []ledger.Entry, server string) []string {
	var out []string
	for _, e := range es {
		if server == "" || e.Server == server {
			out = append(out, e.ID)
		}
	}
	slices.Sort(out)
	return out
}

// TestClearSeenNeverClearsANewerEntry: as on the file store, over
// generated rounds, an operator lists the shared ledger and clears what
// the listing showed while another gateway of the fleet records zero, one
// or two unknown outcomes in between (and, in some rounds, a gateway dies
// with a write in flight, which a listing shows as an entry): the clear
// takes exactly the listed entries, or, when one was recorded since,
// nothing; the policy's token (Pending.Seen) is the listing's.
func TestClearSeenNeverClearsANewerEntry(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	operator, gateway := open(t, dsn), open(t, dsn)
	r := rand.New(rand.NewPCG(23, 11))
	for round := range 12 {
		before, after := 1+r.IntN(3), r.IntN(3)
		for range before {
			lose(t, gateway, "fs")
		}
		if round%3 == 0 { // a gateway that dies with a write in flight
			dying, err := pgledger.Open(dsn, "dying", pgledger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			begin(t, dying, "fs", round).Sent()
			dying.Close()
			before++
			// The server ends the closed session's advisory locks on its
			// own time: until it has, the write reads as in flight.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				st, err := operator.List()
				if err != nil {
					t.Fatal(err)
				}
				if len(st.InFlight) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: the closed gateway's write still reads as in flight after 10 s", round)
				}
			}
		}
		lose(t, gateway, "git")
		st, err := operator.List()
		if err != nil {
			t.Fatal(err)
		}
		seen := st.Seen["fs"]
		if p := pending(t, gateway, "fs"); p.Seen != seen || p.Total != before {
			t.Fatalf("round %d: Pending = %+v; want total %d and the listing's token %s", round, p, before, seen)
		}
		listed := ids(st.Entries, "fs")
		for range after {
			lose(t, gateway, "fs")
		}
		got, err := operator.ClearSeen("fs", seen, fmt.Sprintf("round %d", round))
		var ce *ledger.ChangedError
		switch {
		case after == 0 && (err != nil || !slices.Equal(ids(got, ""), listed)):
			t.Fatalf("round %d: ClearSeen = %v, %v; want exactly the listed %v", round, ids(got, ""), err, listed)
		case after > 0 && (!errors.As(err, &ce) || len(got) != 0 || len(ce.Entries) != before+after):
			t.Fatalf("round %d: ClearSeen = %v, %v; want nothing cleared and the %d entries there are now", round, ids(got, ""), err, before+after)
		case after > 0:
			if p := pending(t, operator, "fs"); p.Total != before+after {
				t.Fatalf("round %d: a refused clear cleared something: %+v", round, p)
			}
			if got, err := operator.ClearSeen("fs", ce.Now, "looked again"); err != nil || len(got) != before+after {
				t.Fatalf("round %d: ClearSeen with the new token = %v, %v", round, ids(got, ""), err)
			}
		}
		if p := pending(t, operator, "fs"); p.Total != 0 {
			t.Fatalf("round %d: fs still has %+v", round, p)
		}
		if _, err := operator.Clear("git", "", "not part of the test"); err != nil {
			t.Fatal(err)
		}
	}
}
