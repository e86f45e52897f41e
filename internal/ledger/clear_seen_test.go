package ledger_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// lose records an unknown outcome of a write to server through l, as a
// gateway that lost the answer does, and returns its id.
func lose(t *testing.T, l *ledger.Ledger, server string) string {
	t.Helper()
	d, err := l.Begin(server, "write_file", map[string]any{"n": rand.Int()}, "mcp")
	if err != nil {
		t.Fatal(err)
	}
	d.Sent()
	if err := d.Unknown("timeout"); err != nil {
		t.Fatal(err)
	}
	return d.ID()
}

func idsOf(es []ledger.Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	slices.Sort(out)
	return out
}

// TestClearSeenNeverClearsANewerEntry: an operator lists the ledger and
// clears what the listing showed (its seen token); another gateway on
// the same state dir records an unknown outcome between the listing and
// the clear — zero, one or two of them, over generated rounds. A clear
// with the listing's token clears exactly the entries listed when nothing
// was recorded since, and otherwise clears nothing and says what there is
// now; a newer entry is never cleared with the listed ones. The token the
// policy is given (Pending.Seen, which a deny's clear command carries) is
// the listing's.
func TestClearSeenNeverClearsANewerEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	operator := open(t, dir) // the CLI or serve the operator uses
	gateway := open(t, dir)  // another gateway on the same state dir
	r := rand.New(rand.NewPCG(23, 7))
	for round := range 40 {
		before, after := 1+r.IntN(3), r.IntN(3)
		for range before {
			lose(t, gateway, "fs")
		}
		lose(t, gateway, "git") // another server's entries are never part of fs's
		st, err := operator.List()
		if err != nil {
			t.Fatal(err)
		}
		seen := st.Seen["fs"]
		p, err := gateway.Pending("fs", ledger.Listed)
		if err != nil || p.Seen != seen || p.Total != before {
			t.Fatalf("round %d: Pending = %+v, %v; want total %d, seen %s (the listing's)", round, p, err, before, seen)
		}
		listed := idsOf(slices.DeleteFunc(slices.Clone(st.Entries), func(e ledger.Entry) bool { return e.Server != "fs" }))
		var newer []string
		for range after {
			newer = append(newer, lose(t, gateway, "fs"))
		}
		got, err := operator.ClearSeen("fs", seen, fmt.Sprintf("round %d", round))
		var ce *ledger.ChangedError
		switch {
		case after == 0 && (err != nil || !slices.Equal(idsOf(got), listed)):
			t.Fatalf("round %d: ClearSeen = %v, %v; want exactly the listed %v", round, idsOf(got), err, listed)
		case after > 0 && (!errors.Is(err, ledger.ErrChanged) || !errors.As(err, &ce) || len(got) != 0):
			t.Fatalf("round %d: an entry was recorded after the listing; ClearSeen = %v, %v; want ErrChanged and nothing cleared", round, idsOf(got), err)
		case after > 0:
			if len(ce.Entries) != before+after || ce.Now == seen || !strings.Contains(err.Error(), "nothing was cleared") {
				t.Fatalf("round %d: %v; want the %d entries there are now and their token", round, err, before+after)
			}
			// the operator looks again, checks the new ones, and clears what the error showed
			got, err = operator.ClearSeen("fs", ce.Now, "looked again")
			if err != nil || len(got) != before+after {
				t.Fatalf("round %d: ClearSeen with the new token = %v, %v", round, idsOf(got), err)
			}
		}
		st, err = operator.List()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range st.Entries {
			if e.Server == "fs" {
				t.Fatalf("round %d: fs still has %s", round, e.ID)
			}
		}
		// every newer entry was cleared, if at all, only once the operator had been shown it
		for _, c := range st.Cleared {
			if slices.Contains(newer, c.ID) && c.Reason != "looked again" {
				t.Fatalf("round %d: newer entry %s cleared with the listing (%q)", round, c.ID, c.Reason)
			}
		}
		if _, err := operator.Clear("git", "", "not part of the test"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClearSeenCoversWhatAListingShows: the entries a listing shows that
// are not yet entries in the file — a dead process's in-flight marker —
// are cleared by the listing's token like the others; an entry cleared by
// another operator since the listing makes the token stale too.
func TestClearSeenCoversWhatAListingShows(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	self := ledger.SelfOwner()
	if self.Start == "" {
		t.Skip("no /proc: liveness falls back to signal 0")
	}
	writeFile(t, dir, map[string]any{
		"version": 1, "entries": []any{}, "cleared": []any{},
		"in_flight": []ledger.Marker{{LedgerEntry: decision.LedgerEntry{ID: "dead", Server: "fs", Tool: "w",
			ArgsSHA256: strings.Repeat("0", 64), Time: "2026-01-01T00:00:00.000000000Z", Surface: "mcp"},
			Owner: ledger.Owner{PID: deadPID(t), Start: "1", Boot: self.Boot}}},
	})
	l := open(t, dir)
	lost := lose(t, l, "fs")
	st, err := l.List()
	if err != nil || len(st.Entries) != 2 {
		t.Fatalf("List = %+v, %v", st, err)
	}
	got, err := l.ClearSeen("fs", st.Seen["fs"], "checked")
	want := []string{"dead", lost}
	slices.Sort(want)
	if err != nil || !slices.Equal(idsOf(got), want) {
		t.Fatalf("ClearSeen = %v, %v; want the dead marker and the entry", idsOf(got), err)
	}

	a, b := lose(t, l, "fs"), lose(t, l, "fs")
	st, _ = l.List()
	if _, err := l.Clear("fs", a, "another operator"); err != nil {
		t.Fatal(err)
	}
	if got, err := l.ClearSeen("fs", st.Seen["fs"], "stale"); !errors.Is(err, ledger.ErrChanged) || len(got) != 0 {
		t.Fatalf("ClearSeen after another clear = %v, %v; want ErrChanged", idsOf(got), err)
	}
	if es, _ := l.Entries("fs"); len(es) != 1 || es[0].ID != b {
		t.Fatalf("entries left: %+v", es)
	}
}
