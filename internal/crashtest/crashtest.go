// Package crashtest is what the crash tests of the state files
// (internal/ledger, internal/pins) share: the test binary re-run as a
// child in a role, and killed with SIGKILL at a moment the test picks. A
// child reports on stdout, one write(2) per line, which a pipe delivers
// whole; its first line starts with READY. Only tests import it.
package crashtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// Main is a test binary's TestMain: when the environment variable env
// names one of roles, the binary is a child and plays that role (then
// exits 0, unless the role exits or is killed first); else it runs the
// tests.
func Main(m *testing.M, env string, roles map[string]func()) {
	if run := roles[os.Getenv(env)]; run != nil {
		run()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var sayMu sync.Mutex

// Say is a child's report: one line on stdout, the fields joined by
// spaces, written with one write(2) under a lock, so that the lines of
// several goroutines never interleave and a kill never tears one.
func Say(fields ...string) {
	line := strings.Join(fields, " ") + "\n"
	sayMu.Lock()
	defer sayMu.Unlock()
	os.Stdout.WriteString(line)
}

// Command is the test binary, running no test, with env ("NAME=value")
// added to this process's environment: a child, when env names a role
// (Main).
func Command(env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Kills is how many kills a crash test makes: the number in the
// environment variable env when it is set; else full in a full run
// (MCPX_POLICY_TEST_FULL=1, make test-full: internal/sweep) and quick in
// a quick one (go test, make test) or under -short.
func Kills(env string, full, quick int) int {
	if v := os.Getenv(env); v != "" {
		n, _ := strconv.Atoi(v)
		return n
	}
	if testing.Short() || !sweep.Full() {
		return quick
	}
	return full
}

// Child is a started child whose stdout the test reads.
type Child struct {
	Cmd *exec.Cmd
	// Out is the child's stdout.
	Out *bufio.Reader

	stderr strings.Builder
}

// Start starts Command(env...) with its stdout on a pipe (Out) and its
// stderr kept for the errors.
func Start(env ...string) (*Child, error) {
	c := &Child{Cmd: Command(env...)}
	c.Cmd.Stderr = &c.stderr
	out, err := c.Cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Cmd.Start(); err != nil {
		return nil, err
	}
	c.Out = bufio.NewReader(out)
	return c, nil
}

// Ready reads the child's first line, which must start with READY. When
// it does not, the child is killed and reaped, and the error says what it
// wrote.
func (c *Child) Ready() error {
	line, err := c.Out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY") {
		c.Cmd.Process.Kill()
		c.Cmd.Wait()
		return fmt.Errorf("child did not start: %q %v: %s", line, err, c.stderr.String())
	}
	return nil
}

// SIGKILL kills the child with SIGKILL. Read its stdout to the end, then
// Reap it.
func (c *Child) SIGKILL() error { return c.Cmd.Process.Signal(syscall.SIGKILL) }

// Reap waits for the killed child and checks that SIGKILL ended it.
func (c *Child) Reap() error {
	werr := c.Cmd.Wait()
	if ws, ok := c.Cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		return fmt.Errorf("child ended without our SIGKILL: %v: %s", werr, c.stderr.String())
	}
	return nil
}

// Kill kills the child with SIGKILL, reads the rest of its stdout, reaps
// it, and returns the lines it wrote after the last one read.
func (c *Child) Kill() ([]string, error) {
	if err := c.SIGKILL(); err != nil {
		return nil, err
	}
	rest, _ := io.ReadAll(c.Out)
	if err := c.Reap(); err != nil {
		return nil, err
	}
	return strings.Split(string(rest), "\n"), nil
}
