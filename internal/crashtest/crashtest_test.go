package crashtest_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/internal/crashtest"
)

const roleEnv = "MCPX_CRASHTEST_ROLE"

func TestMain(m *testing.M) {
	crashtest.Main(m, roleEnv, map[string]func(){
		// wait: reports, then waits to be killed
		"wait": func() {
			os.Stdout.WriteString("READY\nSTEP 1\n")
			time.Sleep(time.Minute)
		},
		// done: reports and returns, so Main exits 0
		"done": func() { fmt.Println("READY") },
	})
}

// TestKill: a child killed by SIGKILL hands over what it wrote; one that
// ended by itself, or never said READY, is an error that says so.
func TestKill(t *testing.T) {
	t.Parallel()
	c, err := crashtest.Start(roleEnv + "=wait")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); err != nil {
		t.Fatal(err)
	}
	lines, err := c.Kill()
	if err != nil || lines[0] != "STEP 1" {
		t.Fatalf("Kill: %q, %v; want STEP 1 first", lines, err)
	}

	c, err = crashtest.Start(roleEnv + "=done")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); err != nil {
		t.Fatal(err)
	}
	io.ReadAll(c.Out) // to its exit, which closes its stdout
	if _, err := c.Kill(); err == nil || !strings.Contains(err.Error(), "without our SIGKILL") {
		t.Errorf("a child that exited by itself: %v", err)
	}

	c, err = crashtest.Start() // no role: runs no test and exits
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ready(); err == nil || !strings.Contains(err.Error(), "did not start") {
		t.Errorf("a child that never said READY: %v", err)
	}
}

func TestKills(t *testing.T) {
	t.Setenv("MCPX_CRASHTEST_KILLS", "7")
	if n := crashtest.Kills("MCPX_CRASHTEST_KILLS", 100, 20); n != 7 {
		t.Errorf("Kills = %d, want 7 from the environment", n)
	}
}
