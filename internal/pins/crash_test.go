package pins_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/pins"
)

// childEnv makes the test binary a crash child (TestMain); childDir names
// its state dir.
const (
	childEnv = "MCPX_PINS_TEST_CHILD"
	childDir = "MCPX_PINS_TEST_DIR"
)

func TestMain(m *testing.M) {
	crashtest.Main(m, childEnv, map[string]func(){"crash": crashChild})
}

// crashChild pins new tools and changes and accepts them in a loop until
// the parent kills it, reporting on stdout (crashtest.Say) each step after
// it returned:
//
//	PINNED <tool> <sha256>    See pinned the tool (trust on first use)
//	ACCEPTED <tool> <sha256>  Accept made this definition the pin
func crashChild() {
	s, err := pins.Open(os.Getenv(childDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	crashtest.Say("READY")
	base := rand.Int64()
	for i := 0; ; i++ {
		tool := decision.Tool{Name: fmt.Sprintf("t%d-%d", base, i), Description: "first"}
		d, err := pins.SeenTool(tool)
		if err == nil {
			var st pins.Status
			if st, err = s.See("srv", d); err == nil && st.State == pins.New {
				crashtest.Say("PINNED", tool.Name, d.SHA256)
			}
		}
		if err == nil && i%2 == 1 {
			tool.Description = "changed"
			d, _ = pins.SeenTool(tool)
			if _, err = s.See("srv", d); err == nil {
				if _, err = s.Accept("srv", tool.Name, d.SHA256); err == nil {
					crashtest.Say("ACCEPTED", tool.Name, d.SHA256)
				}
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
}

// TestCrashKill SIGKILLs a child at random moments while it pins and
// accepts, and checks after each kill that pins.json reads and holds every
// pin and acceptance the child reported: a kill mid-write leaves the old
// file or the new one, never a torn one, and the temp file it may leave is
// removed by the next write. MCPX_PINS_CRASH_KILLS sets the number of kills
// (100 in a full run, make test-full; else 20).
func TestCrashKill(t *testing.T) {
	kills := crashtest.Kills("MCPX_PINS_CRASH_KILLS", 100, 20)
	dir := filepath.Join(t.TempDir(), "state")
	s := open(t, dir)
	want := map[string]string{} // tool -> the sha256 its pin must have
	reported := 0
	for k := range kills {
		lines, err := runAndKill(dir)
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) == 3 && (f[0] == "PINNED" || f[0] == "ACCEPTED") {
				want[f[1]] = f[2]
				reported++
			}
		}
		list, err := s.List()
		if err != nil {
			b, _ := os.ReadFile(filepath.Join(dir, pins.FileName))
			t.Fatalf("kill %d: the file does not read after the kill: %v\n%s", k, err, b)
		}
		have := map[string]pins.Pin{}
		for _, p := range list {
			have[p.Tool] = p
		}
		for tool, sum := range want {
			p, ok := have[tool]
			if !ok {
				t.Fatalf("kill %d: %s was reported pinned and is not in the file", k, tool)
			}
			// An acceptance after the report of the first pin may have
			// landed (the child died before reporting it): the pin is
			// then the changed definition, never anything else.
			if p.Pinned.SHA256 != sum && p.Accepted.IsZero() {
				t.Fatalf("kill %d: %s is pinned to %s; want %s", k, tool, p.Pinned.SHA256, sum)
			}
		}
	}
	// One more write removes whatever temp file a kill left.
	if _, err := s.See("srv", seen(t, decision.Tool{Name: "last"})); err != nil {
		t.Fatal(err)
	}
	if temps, _ := filepath.Glob(filepath.Join(dir, "."+pins.FileName+"*")); len(temps) != 0 {
		t.Errorf("temp files left after a write: %v", temps)
	}
	t.Logf("%d kills; %d pins and acceptances reported, all in the file", kills, reported)
}

// runAndKill runs one crash child on dir, SIGKILLs it at a random moment
// and returns the lines it reported.
func runAndKill(dir string) ([]string, error) {
	c, err := crashtest.Start(childEnv+"=crash", childDir+"="+dir)
	if err != nil {
		return nil, err
	}
	if err := c.Ready(); err != nil {
		return nil, err
	}
	time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
	return c.Kill()
}
