package policy_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	kit "github.com/mcpx/mcpx-policy/internal/hostile"
	"github.com/mcpx/mcpx-policy/internal/sweep"
)

// researchTool is server-everything's task tool: a write (readOnlyHint
// false) that the server runs as a task through four stages of a second
// each.
const researchTool = "simulate-research-query"

// TestE2ETasksEverything: the built proxy in front of
// @modelcontextprotocol/server-everything, whose simulate-research-query
// runs as an MCP task (2025-11-25). A run left alone settles the write
// when the task completes, not when the task handle comes back; runs whose
// server is SIGKILLed at a random moment of the task's life leave an
// unknown outcome unless the client saw the task completed first — no
// write is lost, and none is left in flight.
func TestE2ETasksEverything(t *testing.T) {
	t.Parallel()
	server := npmServer(t, "mcp-server-everything")
	g := newGate(t, "everything", "version: 1\npolicy: {write: allow}\nservers: {everything: {}}\n")
	run := func(t *testing.T, kill bool) {
		cmd := g.command(t, server)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			stdin.Close()
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				for _, k := range children(cmd.Process.Pid) {
					syscall.Kill(k, syscall.SIGKILL)
				}
				cmd.Process.Kill()
				<-exited
			}
		}()
		c := kit.NewClient(stdout, stdin)
		c.Initialize(t, "2025-11-25", `{}`)
		c.Sendf(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":%q,"arguments":{"topic":"tasks through a gate"},"task":{"ttl":60000}}}`, researchTool)
		task, status := kit.TaskOf(c.Answer(t, "w"))
		if task == "" || status != "working" {
			t.Fatal("the task tool's call did not come back as a working task")
		}
		if l := readLedger(t, g.state); len(l.InFlight) != 1 || len(l.Entries) != 0 {
			t.Fatalf("with the task running, the ledger holds %+v; want the write in flight", l)
		}
		var killAt time.Time
		if kill {
			killAt = time.Now().Add(time.Duration(rand.IntN(4500)) * time.Millisecond)
		}
		completed, killed := false, false
		for i := 0; !completed; i++ {
			if kill && time.Now().After(killAt) {
				killChildren(t, cmd.Process.Pid)
				killed = true
				break
			}
			time.Sleep(100 * time.Millisecond)
			id := fmt.Sprintf("g%d", i)
			c.Sendf(`{"jsonrpc":"2.0","id":%q,"method":"tasks/get","params":{"taskId":%q}}`, id, task)
			a := c.Answer(t, id)
			st, _ := kit.Result(a)["status"].(string)
			switch st {
			case "working", "input_required":
			case "completed":
				completed = true
			default:
				t.Fatalf("tasks/get: %v", a)
			}
		}
		if completed {
			c.Send(`{"jsonrpc":"2.0","id":"res","method":"tasks/result","params":{"taskId":"` + task + `"}}`)
			if res := c.Answer(t, "res"); !strings.Contains(kit.Text(res), "Research Report") {
				t.Fatalf("tasks/result: %v", res)
			}
		}
		if kill && !killed {
			// The task ended first: the kill comes after its end.
			killChildren(t, cmd.Process.Pid)
		}
		if !kill {
			stdin.Close()
		}
		// The server is gone (killed, or its input closed): the proxy
		// answers what is left and exits.
		select {
		case <-exited:
			exited <- nil
		case <-time.After(kit.Wait):
			t.Fatal("the proxy did not exit after its server went away")
		}
		l := readLedger(t, g.state)
		// The proxy may have seen the task complete (a status notification)
		// a moment before the kill the client had not yet seen it past:
		// the write settled then, rightly. Its stderr is whole once it
		// exited.
		settled := strings.Contains(g.stderr.String(), "task completed; the write settles")
		switch {
		case len(l.InFlight) != 0:
			t.Fatalf("a write left in flight: %+v", l)
		case (completed || settled) && len(l.Entries) != 0:
			t.Fatalf("the task completed, yet the ledger holds %+v", l.Entries)
		case !completed && !settled && (len(l.Entries) != 1 || l.Entries[0].Tool != researchTool):
			t.Fatalf("the server was killed before the task completed, and the ledger holds %+v: the write was lost", l.Entries)
		}
		t.Logf("completed %v, unknown outcomes %d", completed, len(l.Entries))
		if len(l.Entries) > 0 {
			clear := exec.Command(filepath.Join(binDir, "mcpx-policy"), "writes", "clear", "everything", "--state-dir", g.state, "--reason", "next run")
			clear.Env = cleanEnv()
			if out, err := clear.CombinedOutput(); err != nil {
				t.Fatalf("writes clear: %v\n%s", err, out)
			}
		}
	}
	t.Run("left alone", func(t *testing.T) { run(t, false) })
	kills := 2 // a quick run; make test-full kills at 8 random moments
	if sweep.Full() {
		kills = 8
	}
	for i := range kills {
		t.Run(fmt.Sprintf("killed %d", i), func(t *testing.T) { run(t, true) })
	}
}

// ledgerOnDisk is what ledger.json holds.
type ledgerOnDisk struct {
	Entries []struct {
		Tool  string `json:"tool"`
		Cause string `json:"cause"`
	} `json:"entries"`
	InFlight []struct {
		Tool string `json:"tool"`
	} `json:"in_flight"`
}

func readLedger(t *testing.T, state string) ledgerOnDisk {
	t.Helper()
	var l ledgerOnDisk
	raw, err := os.ReadFile(filepath.Join(state, "ledger.json"))
	if os.IsNotExist(err) {
		return l
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// children returns the processes whose parent is pid: from the kernel's
// list of each of its threads' children, one small read per thread, where
// a kernel has them (CONFIG_PROC_CHILDREN); else from a scan of every
// process's stat, 5 ms of CPU a call on a busy machine, which a test that
// samples every 2 ms spent whole seconds on.
func children(pid int) []int {
	task := fmt.Sprintf("/proc/%d/task", pid)
	threads, _ := os.ReadDir(task)
	if len(threads) == 0 {
		return childrenByScan(pid)
	}
	if _, err := os.Stat(filepath.Join(task, threads[0].Name(), "children")); err != nil {
		return childrenByScan(pid)
	}
	var out []int
	for _, th := range threads {
		raw, err := os.ReadFile(filepath.Join(task, th.Name(), "children"))
		if err != nil {
			continue // the thread ended
		}
		for _, f := range strings.Fields(string(raw)) {
			if child, err := strconv.Atoi(f); err == nil {
				out = append(out, child)
			}
		}
	}
	return out
}

// childrenByScan is children from every process's stat.
func childrenByScan(pid int) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// The fields after the command (in parentheses, which may hold
		// spaces): state, ppid, …
		s := string(raw)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			out = append(out, child)
		}
	}
	return out
}

// killChildren SIGKILLs every child of pid (the proxy's server).
func killChildren(t *testing.T, pid int) {
	t.Helper()
	kids := children(pid)
	if len(kids) == 0 {
		t.Fatal("the proxy has no server process to kill")
	}
	for _, k := range kids {
		syscall.Kill(k, syscall.SIGKILL)
	}
}
