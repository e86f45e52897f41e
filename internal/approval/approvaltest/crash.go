package approvaltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/crashtest"
)

// CrashOptions are the options a crash child opens its Backend with:
// caps far above what it makes, a TTL longer than the test.
func CrashOptions() []approval.Option {
	return []approval.Option{approval.WithMaxLive(1 << 20), approval.WithMaxPerCaller(1 << 20), approval.WithTTL(time.Hour)}
}

// CrashChild plays a gateway on s until it is killed: it opens requests,
// approves two in three and uses one in three, and every few rounds uses
// every approved request it finds (its own and those of the children
// killed before it, racing its sibling), reporting on stdout
// (crashtest.Say) each step after it returned, and before each use that
// it is trying one:
//
//	REQUESTED <id>   Request returned it
//	APPROVED <id>    Approve returned
//	USING <id>       Consume is called: until USED, the use is in doubt
//	USED <id>        Consume returned: the call may run now, once
func CrashChild(s approval.Backend) {
	if _, err := s.List(); err != nil { // connected, the tables made: the kills land in the work
		fail(err)
	}
	crashtest.Say("READY")
	use := func(id string) {
		crashtest.Say("USING", id)
		if _, err := s.Consume(id, SumA, "bind-1"); err == nil {
			crashtest.Say("USED", id)
		} else if !errors.Is(err, approval.ErrUnknown) {
			fail(err)
		}
	}
	// Prompts of 8 KiB make the file store compact every few dozen
	// requests, so that kills land in compactions too.
	prompt := json.RawMessage(`"` + strings.Repeat("p", 8<<10) + `"`)
	for i := 0; ; i++ {
		r := Record(SumA)
		r.Binding, r.Prompt = "bind-1", prompt
		r.Caller = fmt.Sprintf("daemon:%d-%d", os.Getpid(), i) // a new ask each time: never joined
		got, err := s.Request(r)
		if err != nil {
			fail(err)
		}
		crashtest.Say("REQUESTED", got.ID)
		if i%3 != 2 {
			if _, err := s.Approve(got.ID, SumA); err != nil && !errors.Is(err, approval.ErrUnknown) {
				fail(err)
			}
			crashtest.Say("APPROVED", got.ID)
		}
		if i%3 == 0 {
			use(got.ID)
		}
		if i%7 == 0 {
			list, err := s.List()
			if err != nil {
				fail(err)
			}
			for _, r := range list {
				if r.State == approval.Approved {
					use(r.ID)
				}
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(2)
}

// CrashBook is what the children of a crash test reported, over all of
// them.
type CrashBook struct {
	requested, approved, using map[string]bool
	used                       map[string]int
	// Doubts counts the uses a kill left in doubt (USING without USED)
	// that the store shows done: the approval is spent and the call did
	// not run — never twice.
	Doubts int
}

// NewCrashBook is an empty book.
func NewCrashBook() *CrashBook {
	return &CrashBook{requested: map[string]bool{}, approved: map[string]bool{}, using: map[string]bool{}, used: map[string]int{}}
}

// Read books a child's report lines.
func (b *CrashBook) Read(lines []string) {
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		switch f[0] {
		case "REQUESTED":
			b.requested[f[1]] = true
		case "APPROVED":
			b.approved[f[1]] = true
		case "USING":
			b.using[f[1]] = true
		case "USED":
			b.used[f[1]]++
		}
	}
}

// Check checks the store s against the book after a kill: it reads; no
// approval was used twice; every use reported is gone; every request
// reported and not used is there, approved when reported approved (no
// lost request, answer or use); a request gone without a reported use was
// being used when a child died.
func (b *CrashBook) Check(t *testing.T, s approval.Backend, round int) {
	t.Helper()
	list, err := s.List()
	if err != nil {
		t.Fatalf("round %d: the store does not read after the kill: %v", round, err)
	}
	have := map[string]approval.Record{}
	for _, r := range list {
		have[r.ID] = r
	}
	doubts := 0
	for id, n := range b.used {
		if n > 1 {
			t.Fatalf("round %d: approval %s was used %d times", round, id, n)
		}
		if _, ok := have[id]; ok {
			t.Fatalf("round %d: approval %s was reported used and is still in the store", round, id)
		}
	}
	for id := range b.requested {
		r, ok := have[id]
		switch {
		case b.used[id] > 0:
		case !ok && b.using[id]:
			doubts++
		case !ok:
			t.Fatalf("round %d: request %s was reported and is gone, never used", round, id)
		case b.approved[id] && r.State != approval.Approved:
			t.Fatalf("round %d: request %s was reported approved and is %s", round, id, r.State)
		}
	}
	b.Doubts = doubts
}

// Counts is how many requests, approvals and uses were reported.
func (b *CrashBook) Counts() (requested, approved, used int) {
	return len(b.requested), len(b.approved), len(b.used)
}

// RunCrash runs kills rounds: each starts two children with env (the
// store's place; crashtest.Start), kills them with SIGKILL at random
// moments up to 80 ms apart, and checks open() against the book.
func RunCrash(t *testing.T, kills int, open func() approval.Backend, env ...string) *CrashBook {
	t.Helper()
	book := NewCrashBook()
	s := open()
	for k := range kills {
		var children []*crashtest.Child
		for range 2 {
			c, err := crashtest.Start(env...)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Ready(); err != nil {
				t.Fatal(err)
			}
			children = append(children, c)
		}
		for _, c := range children {
			time.Sleep(time.Duration(rand.IntN(80_000)) * time.Microsecond)
			lines, err := c.Kill()
			if err != nil {
				t.Fatalf("kill %d: %v", k, err)
			}
			book.Read(lines)
		}
		book.Check(t, s, k)
	}
	return book
}
