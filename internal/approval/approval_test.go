package approval_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/decision"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newStore(t *testing.T) (*approval.Store, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	return approval.New(approval.WithClock(c.now), approval.WithTTL(time.Minute)), c
}

func writeCall(path string) decision.Call {
	return decision.Call{
		Server: "fs",
		Tool:   decision.Tool{Name: "write_file"},
		Args:   map[string]any{"path": path, "content": "hello"},
	}
}

func TestRequestBindsTheUnredactedCallSHA256(t *testing.T) {
	t.Parallel()
	s, c := newStore(t)
	call := writeCall("/workspace/a.txt")
	call.Args["token"] = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	req, err := s.Request(call)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := decision.CallSHA256("fs", "write_file", call.Args)
	if req.SHA256 != want {
		t.Fatalf("sha256 = %s, want %s", req.SHA256, want)
	}
	if len(req.ID) != 32 {
		t.Fatalf("id %q: want 32 hex digits", req.ID)
	}
	if !req.Expires.Equal(c.now().Add(time.Minute)) {
		t.Fatalf("expires %v", req.Expires)
	}
	other, _ := s.Request(call)
	if other.ID == req.ID {
		t.Fatal("two requests got the same id")
	}
}

func TestApproveThenConsumeOnce(t *testing.T) {
	t.Parallel()
	for _, consume := range []string{"by id", "by call"} {
		t.Run(consume, func(t *testing.T) {
			t.Parallel()
			s, _ := newStore(t)
			call := writeCall("/workspace/a.txt")
			req, err := s.Request(call)
			if err != nil {
				t.Fatal(err)
			}
			use := func() error {
				if consume == "by id" {
					return s.ConsumeID(req.ID, call)
				}
				return s.Consume(call)
			}
			if err := use(); !errors.Is(err, approval.ErrNotApproved) {
				t.Fatalf("consume before approve: %v, want ErrNotApproved", err)
			}
			if err := s.Approve(req.ID, req.SHA256); err != nil {
				t.Fatal(err)
			}
			if err := use(); err != nil {
				t.Fatalf("first consume: %v", err)
			}
			// Replay: the same approval, the same call, again.
			if err := use(); !errors.Is(err, approval.ErrUnknown) {
				t.Fatalf("replay: %v, want ErrUnknown", err)
			}
			if err := s.Approve(req.ID, req.SHA256); !errors.Is(err, approval.ErrUnknown) {
				t.Fatalf("approve after use: %v, want ErrUnknown", err)
			}
		})
	}
}

func TestChangedArgumentsAreRefused(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	call := writeCall("/workspace/a.txt")
	req, _ := s.Request(call)
	if err := s.Approve(req.ID, req.SHA256); err != nil {
		t.Fatal(err)
	}
	changed := writeCall("/etc/passwd")
	if err := s.Consume(changed); !errors.Is(err, approval.ErrUnknown) {
		t.Fatalf("consume changed call: %v, want ErrUnknown", err)
	}
	if err := s.ConsumeID(req.ID, changed); !errors.Is(err, approval.ErrCallChanged) {
		t.Fatalf("consume id with changed call: %v, want ErrCallChanged", err)
	}
	// A changed call voids the approval: the original cannot use it now.
	if err := s.ConsumeID(req.ID, call); !errors.Is(err, approval.ErrUnknown) {
		t.Fatalf("original after mismatch: %v, want ErrUnknown", err)
	}
}

func TestApproveWithAnotherSHA256IsRefused(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	call := writeCall("/workspace/a.txt")
	req, _ := s.Request(call)
	shown, _ := decision.CallSHA256("fs", "write_file", writeCall("/workspace/b.txt").Args)
	if err := s.Approve(req.ID, shown); !errors.Is(err, approval.ErrCallChanged) {
		t.Fatalf("approve other sha: %v, want ErrCallChanged", err)
	}
	if err := s.Consume(call); !errors.Is(err, approval.ErrNotApproved) {
		t.Fatalf("consume: %v, want ErrNotApproved", err)
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	t.Run("approve after expiry", func(t *testing.T) {
		t.Parallel()
		s, c := newStore(t)
		req, _ := s.Request(writeCall("/workspace/a.txt"))
		c.add(time.Minute)
		if err := s.Approve(req.ID, req.SHA256); !errors.Is(err, approval.ErrExpired) {
			t.Fatalf("approve: %v, want ErrExpired", err)
		}
	})
	t.Run("consume after expiry", func(t *testing.T) {
		t.Parallel()
		s, c := newStore(t)
		call := writeCall("/workspace/a.txt")
		req, _ := s.Request(call)
		if err := s.Approve(req.ID, req.SHA256); err != nil {
			t.Fatal(err)
		}
		c.add(59 * time.Second)
		if s.Pending() != 1 {
			t.Fatal("request gone before its expiry")
		}
		c.add(time.Second)
		if err := s.Consume(call); !errors.Is(err, approval.ErrExpired) {
			t.Fatalf("consume: %v, want ErrExpired", err)
		}
		if err := s.ConsumeID(req.ID, call); !errors.Is(err, approval.ErrUnknown) {
			t.Fatalf("consume id after purge: %v, want ErrUnknown", err)
		}
		if s.Pending() != 0 {
			t.Fatal("expired request kept")
		}
	})
	t.Run("consume id after expiry", func(t *testing.T) {
		t.Parallel()
		s, c := newStore(t)
		call := writeCall("/workspace/a.txt")
		req, _ := s.Request(call)
		_ = s.Approve(req.ID, req.SHA256)
		c.add(2 * time.Minute)
		if err := s.ConsumeID(req.ID, call); !errors.Is(err, approval.ErrExpired) {
			t.Fatalf("consume id: %v, want ErrExpired", err)
		}
	})
}

func TestDecline(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	call := writeCall("/workspace/a.txt")
	req, _ := s.Request(call)
	if err := s.Decline(req.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Approve(req.ID, req.SHA256); !errors.Is(err, approval.ErrUnknown) {
		t.Fatalf("approve after decline: %v", err)
	}
	if err := s.Consume(call); !errors.Is(err, approval.ErrUnknown) {
		t.Fatalf("consume after decline: %v", err)
	}
}

func TestMaxPending(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(0, 0)}
	s := approval.New(approval.WithClock(c.now), approval.WithTTL(time.Second), approval.WithMaxPending(2))
	for i := 0; i < 2; i++ {
		if _, err := s.Request(writeCall("/workspace/a.txt")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Request(writeCall("/workspace/a.txt")); !errors.Is(err, approval.ErrFull) {
		t.Fatalf("third request: %v, want ErrFull", err)
	}
	c.add(time.Second)
	if _, err := s.Request(writeCall("/workspace/a.txt")); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

func TestConcurrentConsumeOnlyOneWins(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	call := writeCall("/workspace/a.txt")
	req, _ := s.Request(call)
	if err := s.Approve(req.ID, req.SHA256); err != nil {
		t.Fatal(err)
	}
	const n = 32
	var wins atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			var err error
			if i%2 == 0 {
				err = s.Consume(call)
			} else {
				err = s.ConsumeID(req.ID, call)
			}
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, approval.ErrUnknown) {
				t.Errorf("loser: %v, want ErrUnknown", err)
			}
		}(i)
	}
	close(start)
	wg.Wait()
	if got := wins.Load(); got != 1 {
		t.Fatalf("%d consumers won, want exactly 1", got)
	}
}
