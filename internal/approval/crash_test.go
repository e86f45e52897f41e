package approval_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/approval"
	"github.com/mcpx/mcpx-policy/internal/approval/approvaltest"
	"github.com/mcpx/mcpx-policy/internal/crashtest"
)

// childEnv makes the test binary a crash child (TestMain); childDir names
// its state dir.
const (
	childEnv = "MCPX_APPROVAL_TEST_CHILD"
	childDir = "MCPX_APPROVAL_TEST_DIR"
)

func TestMain(m *testing.M) {
	crashtest.Main(m, childEnv, map[string]func(){"crash": func() {
		s, err := approval.Open(os.Getenv(childDir), approvaltest.CrashOptions()...)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		approvaltest.CrashChild(s)
	}})
}

// TestCrashKill runs two children on one state dir, each requesting,
// approving and using approvals (and racing to use each other's), and
// SIGKILLs them at random moments; after each kill the log reads, no
// approval was used twice, and every request, answer and use a child
// reported is in it (approvaltest.CrashBook). The log is compacted along
// the way, so kills land in compactions too. MCPX_APPROVAL_CRASH_KILLS
// sets the number of rounds (60 in a full run, MCPX_POLICY_TEST_FULL=1; 15 in a quick one).
func TestCrashKill(t *testing.T) {
	kills := crashtest.Kills("MCPX_APPROVAL_CRASH_KILLS", 60, 15)
	dir := filepath.Join(t.TempDir(), "state")
	open := func() approval.Backend {
		s, err := approval.Open(dir, approvaltest.CrashOptions()...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	book := approvaltest.RunCrash(t, kills, open, childEnv+"=crash", childDir+"="+dir)
	requested, approved, used := book.Counts()
	t.Logf("%d rounds of two kills: %d requests, %d approvals, %d uses reported, each once; %d uses in doubt at a kill, spent and never run twice",
		kills, requested, approved, used, book.Doubts)
	if used == 0 {
		t.Fatal("no use was reported: the children did not get far enough to test anything")
	}
}
