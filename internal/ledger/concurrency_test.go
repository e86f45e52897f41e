package ledger_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/ledger"
)

// childEnv switches the re-executed test binary into a child role (see
// TestMain); childDir names its state dir.
const (
	childEnv = "MCPX_LEDGER_TEST_CHILD"
	childDir = "MCPX_LEDGER_TEST_DIR"
)

// work runs goroutines × iters dispatches to server "srv" over the given
// ledgers. Every third ends Unknown, every third Settles, every third is
// aborted before sending. unknown is called with each id whose Unknown
// returned. It returns the first error.
func work(ls []*ledger.Ledger, goroutines, iters int, unknown func(id string)) error {
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := ls[g%len(ls)]
			for i := range iters {
				d, err := l.Begin("srv", "write", map[string]any{"pid": os.Getpid(), "g": g, "i": i}, "test")
				if err != nil {
					errs <- err
					return
				}
				switch (g + i) % 3 {
				case 0:
					d.Sent()
					if err := d.Unknown("timeout"); err != nil {
						errs <- err
						return
					}
					unknown(d.ID())
				case 1:
					d.Sent()
					err = d.Settle()
				case 2:
					err = d.Abort()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// sweep clears server "srv" until ctx ends — alternately one entry by id
// and all of them — and returns the ids it cleared.
func sweep(ctx context.Context, l *ledger.Ledger) ([]string, error) {
	var ids []string
	for n := 0; ; n++ {
		id := ""
		if n%2 == 0 {
			if st, err := l.List(); err != nil {
				return ids, err
			} else if len(st.Entries) > 0 {
				id = st.Entries[len(st.Entries)/2].ID
			}
		}
		got, err := l.Clear("srv", id, "sweep "+strconv.Itoa(n))
		if err != nil && !(id != "" && errors.Is(err, ledger.ErrNotFound)) {
			return ids, err
		}
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		select {
		case <-ctx.Done():
			return ids, nil
		case <-time.After(time.Millisecond):
		}
	}
}

// checkNothingLost: every reported unknown is in entries or cleared,
// exactly once; cleared is exactly what the sweepers got back; no marker
// is left; nothing else is in the file.
func checkNothingLost(t *testing.T, dir string, unknown, swept []string) {
	t.Helper()
	f := readRaw(t, dir)
	if len(f.InFlight) != 0 {
		t.Errorf("%d markers left in flight", len(f.InFlight))
	}
	inFile := map[string]int{}
	for _, e := range f.Entries {
		inFile[e.ID]++
	}
	clearedInFile := map[string]int{}
	for _, c := range f.Cleared {
		inFile[c.ID]++
		clearedInFile[c.ID]++
	}
	for _, id := range unknown {
		if inFile[id] != 1 {
			t.Errorf("unknown write %s is %d times in the file, want once", id, inFile[id])
		}
		delete(inFile, id)
	}
	for id := range inFile {
		t.Errorf("the file holds %s, which no one reported", id)
	}
	if len(swept) != len(clearedInFile) {
		t.Errorf("sweepers cleared %d, the file's cleared list has %d", len(swept), len(clearedInFile))
	}
	for _, id := range swept {
		if clearedInFile[id] != 1 {
			t.Errorf("cleared %s is %d times in cleared, want once", id, clearedInFile[id])
		}
	}
	t.Logf("%d unknown writes: %d left as entries, %d cleared", len(unknown), len(f.Entries), len(f.Cleared))
}

func TestConcurrentGoroutines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ls := []*ledger.Ledger{open(t, dir), open(t, dir), open(t, dir)} // separate locks, one file
	iters := 20
	if testing.Short() {
		iters = 5
	}
	var mu sync.Mutex
	var unknown []string
	ctx, cancel := context.WithCancel(context.Background())
	sweptc := make(chan []string, 1)
	go func() {
		ids, err := sweep(ctx, open(t, dir))
		if err != nil {
			t.Error(err)
		}
		sweptc <- ids
	}()
	err := work(ls, 16, iters, func(id string) { mu.Lock(); unknown = append(unknown, id); mu.Unlock() })
	cancel()
	swept := <-sweptc
	if err != nil {
		t.Fatal(err)
	}
	checkNothingLost(t, dir, unknown, swept)
}

// procChild is the child role of TestConcurrentProcesses: dispatches,
// printing "UNKNOWN <id>" for each write whose Unknown returned.
func procChild() {
	l, err := ledger.Open(os.Getenv(childDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	iters, _ := strconv.Atoi(os.Getenv("MCPX_LEDGER_TEST_ITERS"))
	err = work([]*ledger.Ledger{l}, 4, iters, func(id string) { mu.Lock(); fmt.Fprintln(out, "UNKNOWN", id); mu.Unlock() })
	out.Flush()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

func TestConcurrentProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	iters := 25
	if testing.Short() {
		iters = 5
	}
	type child struct {
		cmd *exec.Cmd
		out strings.Builder
		err strings.Builder
	}
	var children []*child
	for range 3 {
		c := &child{cmd: crashtest.Command(childEnv+"=proc", childDir+"="+dir, "MCPX_LEDGER_TEST_ITERS="+strconv.Itoa(iters))}
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.err
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	sweptc := make(chan []string, 1)
	go func() {
		ids, err := sweep(ctx, open(t, dir))
		if err != nil {
			t.Error(err)
		}
		sweptc <- ids
	}()
	var mu sync.Mutex
	var unknown []string
	err := work([]*ledger.Ledger{open(t, dir)}, 4, iters, func(id string) { mu.Lock(); unknown = append(unknown, id); mu.Unlock() })
	for _, c := range children {
		if werr := c.cmd.Wait(); werr != nil {
			t.Errorf("child: %v\n%s", werr, c.err.String())
		}
		for _, line := range strings.Split(c.out.String(), "\n") {
			if id, ok := strings.CutPrefix(line, "UNKNOWN "); ok {
				unknown = append(unknown, id)
			}
		}
	}
	cancel()
	swept := <-sweptc
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 * 4 * iters / 3; len(unknown) < want {
		t.Fatalf("only %d unknown writes reported, want about %d", len(unknown), want)
	}
	checkNothingLost(t, dir, unknown, swept)
}
