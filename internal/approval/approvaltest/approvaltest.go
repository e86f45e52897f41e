// Package approvaltest is the behaviour every approval.Backend promises,
// as tests: the file store (internal/approval) and the PostgreSQL store
// (internal/pgstate) each run Run over themselves, so that a request, an
// answer and a use mean the same in both, whichever process or gateway
// makes them. Only tests import it.
package approvaltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/approval"
)

// Opener opens one more Backend on the same store (the same state dir or
// database), with opts after the suite's clock.
type Opener func(opts ...approval.Option) approval.Backend

// Factory makes a fresh, empty store for one test and returns its Opener.
type Factory func(t *testing.T) Opener

// Clock is a settable test clock shared by the Backends of one test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts at a fixed instant.
func NewClock() *Clock { return &Clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Add moves the clock on.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Sums of two calls.
const (
	SumA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	SumB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// Record is a request for the call sum, as the daemon's caller "daemon:x"
// asks it, with binding "bind-1".
func Record(sum string) approval.Record {
	return approval.Record{SHA256: sum, Server: "fs", Tool: "write_file", Surface: "daemon", Caller: "daemon:x", Binding: "bind-1",
		Prompt: json.RawMessage(`{"server":"fs","tool":"write_file","arguments":{"path":"/workspace/a"}}`)}
}

// Run runs the suite on the stores f makes.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener, *Clock)
	}{
		{"ApproveThenConsumeOnce", approveThenConsumeOnce},
		{"ChangedCallVoidsTheApproval", changedCallVoids},
		{"Expiry", expiry},
		{"Decline", decline},
		{"Bounded", bounded},
		{"AcrossBackends", acrossBackends},
		{"ConcurrentConsumersOneWins", concurrentConsumersOneWins},
		{"IdenticalPendingAsksCoalesce", coalesce},
		{"CallerQuota", callerQuota},
		{"FloodThenAnotherSurfaceCompletes", floodThenAnotherSurface},
		{"ConcurrentFloodsStayUnderTheCaps", concurrentFloods},
		{"PromptAndFieldsKeptAsGiven", keptAsGiven},
		{"ListOldestFirst", listOldestFirst},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewClock()
			open := f(t)
			tc.fn(t, func(opts ...approval.Option) approval.Backend {
				return open(append([]approval.Option{approval.WithClock(c.Now), approval.WithTTL(time.Minute)}, opts...)...)
			}, c)
		})
	}
}

func request(t *testing.T, s approval.Backend, r approval.Record) approval.Record {
	t.Helper()
	got, err := s.Request(r)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v, want %v", what, err, want)
	}
}

// approveThenConsumeOnce: a request is pending, approved with the sha256
// the approver saw, used once by the exact call, and then gone: a replay
// is ErrUnknown.
func approveThenConsumeOnce(t *testing.T, open Opener, c *Clock) {
	s := open()
	r := request(t, s, Record(SumA))
	if len(r.ID) != 32 || r.State != approval.Pending || !r.Created.Equal(c.Now()) || !r.Expires.Equal(c.Now().Add(time.Minute)) {
		t.Fatalf("request = %+v", r)
	}
	_, err := s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "consume before the answer", err, approval.ErrNotApproved)
	a, err := s.Approve(r.ID, SumA)
	if err != nil || a.State != approval.Approved || !a.Answered.Equal(c.Now()) {
		t.Fatalf("approve: %+v, %v", a, err)
	}
	if _, err := s.Approve(r.ID, SumA); err != nil {
		t.Fatalf("approving twice: %v", err)
	}
	// An approved request is not an ask waiting: the same ask again is a
	// new request.
	if r2 := request(t, s, Record(SumA)); r2.ID == r.ID {
		t.Fatal("an ask identical to an approved request got that request")
	}
	if _, err := s.Consume(r.ID, SumA, "bind-1"); err != nil {
		t.Fatalf("consume: %v", err)
	}
	_, err = s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "replay", err, approval.ErrUnknown)
	_, err = s.Approve(r.ID, SumA)
	wantErr(t, "approve after use", err, approval.ErrUnknown)
	_, err = s.Get(r.ID)
	wantErr(t, "get after use", err, approval.ErrUnknown)
}

// changedCallVoids: a call with another sha256 or another binding does not
// use the approval and voids it; an approver who saw another call's sha256
// approves nothing.
func changedCallVoids(t *testing.T, open Opener, c *Clock) {
	s := open()
	r := request(t, s, Record(SumA))
	_, err := s.Approve(r.ID, SumB)
	wantErr(t, "approve with another sha256", err, approval.ErrMismatch)
	if got, _ := s.Get(r.ID); got.State != approval.Pending {
		t.Fatalf("after a mismatched approve the state is %s, want pending", got.State)
	}
	if _, err := s.Approve(r.ID, SumA); err != nil {
		t.Fatal(err)
	}
	_, err = s.Consume(r.ID, SumB, "bind-1")
	wantErr(t, "consume for another call", err, approval.ErrMismatch)
	_, err = s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "consume after the mismatch voided it", err, approval.ErrUnknown)

	r = request(t, s, Record(SumA))
	if _, err := s.Approve(r.ID, SumA); err != nil {
		t.Fatal(err)
	}
	_, err = s.Consume(r.ID, SumA, "bind-2")
	wantErr(t, "consume with another binding", err, approval.ErrMismatch)
	_, err = s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "consume after the binding mismatch", err, approval.ErrUnknown)

	_, err = s.Consume("0123456789abcdef0123456789abcdef", SumA, "bind-1")
	wantErr(t, "a forged id", err, approval.ErrUnknown)
}

// expiry: an approval used at or after its expiry is refused, and neither
// an answer nor a use extends it.
func expiry(t *testing.T, open Opener, c *Clock) {
	s := open()
	r := request(t, s, Record(SumA))
	c.Add(30 * time.Second)
	if _, err := s.Approve(r.ID, SumA); err != nil {
		t.Fatal(err)
	}
	c.Add(30 * time.Second) // exactly at the expiry
	_, err := s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "consume at the expiry", err, approval.ErrExpired)
	_, err = s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "consume after", err, approval.ErrUnknown)

	r = request(t, s, Record(SumA))
	c.Add(2 * time.Minute)
	_, err = s.Get(r.ID)
	wantErr(t, "get after the expiry", err, approval.ErrExpired)
	_, err = s.Approve(r.ID, SumA)
	wantErr(t, "approve after the expiry", err, approval.ErrExpired)
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("list = %v, %v; want nothing live", l, err)
	}
	// An expired pending request is not the ask an identical one joins.
	r = request(t, s, Record(SumA))
	c.Add(time.Minute)
	if r2 := request(t, s, Record(SumA)); r2.ID == r.ID {
		t.Fatal("an ask joined an expired request")
	}
}

// decline: a declined request cannot be approved or used; declining after
// a yes (before the use) wins.
func decline(t *testing.T, open Opener, c *Clock) {
	s := open()
	r := request(t, s, Record(SumA))
	if d, err := s.Decline(r.ID); err != nil || d.State != approval.Declined {
		t.Fatalf("decline: %+v, %v", d, err)
	}
	if r2 := request(t, s, Record(SumA)); r2.ID == r.ID {
		t.Fatal("an ask joined a declined request")
	} else if _, err := s.Discard(r2.ID); err != nil {
		t.Fatal(err)
	}
	_, err := s.Approve(r.ID, SumA)
	wantErr(t, "approve after decline", err, approval.ErrDeclined)
	_, err = s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "consume after decline", err, approval.ErrDeclined)
	_, err = s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "consume again", err, approval.ErrUnknown)

	r = request(t, s, Record(SumA))
	s.Approve(r.ID, SumA)
	if _, err := s.Decline(r.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.Consume(r.ID, SumA, "bind-1")
	wantErr(t, "consume after yes then no", err, approval.ErrDeclined)
	_, err = s.Decline("0123456789abcdef0123456789abcdef")
	wantErr(t, "decline an unknown id", err, approval.ErrUnknown)
	if found, err := s.Discard("0123456789abcdef0123456789abcdef"); found || err != nil {
		t.Fatalf("discard an unknown id: %v, %v", found, err)
	}
}

// bounded: at most MaxLive requests live at once; expired ones make room;
// a prompt above MaxPromptSize is refused, not stored.
func bounded(t *testing.T, open Opener, c *Clock) {
	s := open(approval.WithMaxLive(4))
	for i := range 4 {
		r := Record(SumA)
		r.Binding = fmt.Sprint("b", i)
		r.Caller = fmt.Sprint("s", i%2, ":", i) // two surfaces, two each
		request(t, s, r)
	}
	r := Record(SumA)
	r.Caller = "s2:a"
	_, err := s.Request(r)
	wantErr(t, "the fifth request", err, approval.ErrFull)
	if !strings.Contains(err.Error(), "the most the store keeps") {
		t.Errorf("the refusal does not say which cap: %v", err)
	}
	c.Add(time.Minute)
	request(t, s, r)

	big := Record(SumA)
	big.Prompt = json.RawMessage(`"` + strings.Repeat("x", approval.MaxPromptSize) + `"`)
	_, err = s.Request(big)
	wantErr(t, "a huge prompt", err, approval.ErrTooLarge)
	big = Record(SumA)
	big.Caller = strings.Repeat("c", approval.MaxNameSize+1)
	_, err = s.Request(big)
	wantErr(t, "a huge caller", err, approval.ErrTooLarge)
}

// acrossBackends: a request made through one Backend is answered through
// a second and used through a third, as a daemon, the CLI and another
// daemon (or three gateways) would.
func acrossBackends(t *testing.T, open Opener, c *Clock) {
	r := request(t, open(), Record(SumA))
	l, err := open().List()
	if err != nil || len(l) != 1 || l[0].ID != r.ID || string(l[0].Prompt) != string(Record(SumA).Prompt) {
		t.Fatalf("list through another backend = %+v, %v", l, err)
	}
	if r2 := request(t, open(), Record(SumA)); r2.ID != r.ID {
		t.Fatal("an identical ask through another backend opened a second request")
	}
	if _, err := open().Approve(r.ID, SumA); err != nil {
		t.Fatal(err)
	}
	if got, err := open().Get(r.ID); err != nil || got.State != approval.Approved {
		t.Fatalf("get through another backend: %+v, %v", got, err)
	}
	if _, err := open().Consume(r.ID, SumA, "bind-1"); err != nil {
		t.Fatal(err)
	}
	_, err = open().Consume(r.ID, SumA, "bind-1")
	wantErr(t, "replay through a fifth backend", err, approval.ErrUnknown)
}

// concurrentConsumersOneWins: many Backends on one store race to use one
// approval: exactly one succeeds, the others get ErrUnknown.
func concurrentConsumersOneWins(t *testing.T, open Opener, c *Clock) {
	const n = 12
	backends := make([]approval.Backend, n)
	for i := range backends {
		backends[i] = open()
	}
	for round := range 4 {
		r := request(t, backends[0], Record(SumA))
		if _, err := backends[1].Approve(r.ID, SumA); err != nil {
			t.Fatal(err)
		}
		var wins, unknown atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, b := range backends {
			wg.Go(func() {
				<-start
				_, err := b.Consume(r.ID, SumA, "bind-1")
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, approval.ErrUnknown):
					unknown.Add(1)
				default:
					t.Errorf("consume: %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if wins.Load() != 1 || unknown.Load() != n-1 {
			t.Fatalf("round %d: %d consumers won, %d got ErrUnknown; want 1 and %d", round, wins.Load(), unknown.Load(), n-1)
		}
	}
}

// coalesce: an ask identical to a pending one (same sha256 and binding) is
// that request, whoever asks it and however often; any difference is
// another request; answering it answers every copy of the ask once.
func coalesce(t *testing.T, open Opener, c *Clock) {
	s := open(approval.WithMaxPerCaller(2))
	first := request(t, s, Record(SumA))
	for range 10 {
		r := Record(SumA)
		r.Caller = "mcp:other-session" // who asks again does not matter
		if got := request(t, s, r); got.ID != first.ID || got.Caller != "daemon:x" {
			t.Fatalf("an identical pending ask is request %s (caller %s), want %s", got.ID, got.Caller, first.ID)
		}
	}
	other := Record(SumB)
	if got := request(t, s, other); got.ID == first.ID {
		t.Fatal("another call joined the ask")
	}
	rebound := Record(SumA)
	rebound.Binding = "bind-2" // other reasons, principal or revision
	_, err := s.Request(rebound)
	wantErr(t, "a third request of the caller (cap 2)", err, approval.ErrFull)
	if l, _ := s.List(); len(l) != 2 {
		t.Fatalf("%d requests live, want 2", len(l))
	}
	if _, err := s.Approve(first.ID, SumA); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Consume(first.ID, SumA, "bind-1"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Consume(first.ID, SumA, "bind-1")
	wantErr(t, "the joined ask used twice", err, approval.ErrUnknown)
}

// callerQuota: one caller (Caller and Principal) holds at most
// MaxPerCaller live requests; another principal of the same caller, and
// another caller, are counted apart; the refusal names the caller; an
// answered, used or expired request makes room.
func callerQuota(t *testing.T, open Opener, c *Clock) {
	s := open(approval.WithMaxPerCaller(3))
	var ids []string
	for i := range 3 {
		r := Record(SumA)
		r.Binding, r.Principal = fmt.Sprint("b", i), "alice"
		ids = append(ids, request(t, s, r).ID)
	}
	r := Record(SumA)
	r.Binding, r.Principal = "b9", "alice"
	_, err := s.Request(r)
	wantErr(t, "alice's fourth", err, approval.ErrFull)
	if !strings.Contains(err.Error(), `3 from this caller (daemon:x, principal "alice")`) {
		t.Errorf("the refusal does not name the caller: %v", err)
	}
	// (a binding digests the principal, so bob's ask is another one)
	bob := r
	bob.Principal, bob.Binding = "bob", "b9-bob"
	request(t, s, bob)
	otherCaller := r
	otherCaller.Caller, otherCaller.Binding = "daemon:y", "b9-y"
	request(t, s, otherCaller)

	s.Approve(ids[0], SumA)
	if _, err := s.Consume(ids[0], SumA, "b0"); err != nil {
		t.Fatal(err)
	}
	request(t, s, r) // the used one made room
	again := r
	again.Binding = "b10"
	_, err = s.Request(again)
	wantErr(t, "alice's request past the cap again", err, approval.ErrFull)
	c.Add(time.Minute)
	request(t, s, again) // expired ones make room
}

// floodThenAnotherSurface: one caller flooding asks fills its own quota
// and never the store: after it, an ask of another surface (and of
// another caller of the same surface) is opened, answered and used. A
// caller rotating its principal fills at most its surface's half.
func floodThenAnotherSurface(t *testing.T, open Opener, c *Clock) {
	s := open(approval.WithMaxLive(40), approval.WithMaxPerCaller(5))
	flood := func(caller, principal string, n int) (opened, refused int) {
		for i := range n {
			r := Record(fmt.Sprintf("%064x", i))
			r.Caller, r.Principal = caller, principal
			if principal == "*" {
				r.Principal = fmt.Sprint("p", i)
			}
			r.Binding = "bind-" + r.Principal // a binding digests the principal
			if _, err := s.Request(r); errors.Is(err, approval.ErrFull) {
				refused++
			} else if err != nil {
				t.Fatal(err)
			} else {
				opened++
			}
		}
		return opened, refused
	}
	if opened, refused := flood("daemon:127.0.0.1", "mallory", 300); opened != 5 || refused != 295 {
		t.Fatalf("one caller's flood: %d opened, %d refused; want 5 and 295", opened, refused)
	}
	if opened, _ := flood("daemon:127.0.0.1", "*", 300); opened != 15 {
		t.Fatalf("a flood rotating principals opened %d more, want 15 (the surface's 20 in all)", opened)
	}
	complete := func(caller string) {
		t.Helper()
		r := Record(SumB)
		r.Caller, r.Binding = caller, caller
		got, err := s.Request(r)
		if err != nil {
			t.Fatalf("%s's ask after the flood: %v", caller, err)
		}
		if _, err := open().Approve(got.ID, SumB); err != nil {
			t.Fatal(err)
		}
		if _, err := open().Consume(got.ID, SumB, caller); err != nil {
			t.Fatalf("%s's approval after the flood: %v", caller, err)
		}
	}
	complete("mcp:session-1")
	complete("cli")
}

// concurrentFloods: callers flooding at once from many Backends never
// take more than their caps, in all and each.
func concurrentFloods(t *testing.T, open Opener, c *Clock) {
	const callers, each = 6, 30
	var wg sync.WaitGroup
	for i := range callers {
		b := open(approval.WithMaxLive(20), approval.WithMaxPerCaller(4))
		wg.Go(func() {
			for j := range each {
				r := Record(fmt.Sprintf("%064x", i*1000+j))
				r.Caller = fmt.Sprintf("s%d:c%d", i%2, i)
				if _, err := b.Request(r); err != nil && !errors.Is(err, approval.ErrFull) {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	l, err := open().List()
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, r := range l {
		per[r.Caller]++
	}
	if len(l) != 20 {
		t.Errorf("%d live, want 20 (6 callers of 4, two surfaces of at most 10)", len(l))
	}
	for caller, n := range per {
		if n > 4 {
			t.Errorf("%s holds %d, more than its 4", caller, n)
		}
	}
	for _, surface := range []string{"s0", "s1"} {
		n := 0
		for caller, k := range per {
			if strings.HasPrefix(caller, surface+":") {
				n += k
			}
		}
		if n > 10 {
			t.Errorf("surface %s holds %d, more than its 10", surface, n)
		}
	}
}

// keptAsGiven: the prompt is kept as the bytes given (compact JSON), and
// every field of the request reads back as written.
func keptAsGiven(t *testing.T, open Opener, c *Clock) {
	r := Record(SumA)
	r.Prompt = json.RawMessage(`{"text":"\u202e <b>&amp; \"quoted\"\n","n":1.50,"z":[]}`)
	r.Principal, r.Surface = "alice", "mcp"
	got := request(t, open(), r)
	list, err := open().List()
	if err != nil || len(list) != 1 {
		t.Fatalf("list = %+v, %v", list, err)
	}
	back := list[0]
	if string(back.Prompt) != string(r.Prompt) {
		t.Errorf("prompt read back as %s, want %s", back.Prompt, r.Prompt)
	}
	if back.ID != got.ID || back.SHA256 != SumA || back.Server != "fs" || back.Tool != "write_file" || back.Surface != "mcp" ||
		back.Caller != "daemon:x" || back.Principal != "alice" || back.Binding != "bind-1" ||
		!back.Created.Equal(c.Now()) || !back.Expires.Equal(c.Now().Add(time.Minute)) || back.State != approval.Pending {
		t.Errorf("read back %+v", back)
	}
}

// listOldestFirst: the listing is the live requests, oldest first.
func listOldestFirst(t *testing.T, open Opener, c *Clock) {
	s := open()
	var want []string
	for i := range 5 {
		r := Record(fmt.Sprintf("%064x", i))
		want = append(want, request(t, s, r).ID)
		c.Add(time.Second)
	}
	c.Add(55 * time.Second) // the first has expired
	l, err := open().List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range l {
		got = append(got, r.ID)
	}
	if !slices.Equal(got, want[1:]) {
		t.Fatalf("list = %v, want %v", got, want[1:])
	}
}
