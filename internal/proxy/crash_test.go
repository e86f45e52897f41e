package proxy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/crashtest"
	"github.com/mcpx/mcpx-policy/internal/hostile"
	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// roleEnv names the role the test binary plays as a child (crashtest).
const roleEnv = "MCPX_POLICY_PROXY_TEST_ROLE"

func TestMain(m *testing.M) {
	crashtest.Main(m, roleEnv, map[string]func(){"hostile-server": hostileServerRole})
}

// hostileServerRole is the kit's server on stdio, playing the script in
// HOSTILE_SCRIPT and writing its events to the file HOSTILE_EVENTS.
func hostileServerRole() {
	var sc hostile.Script
	if err := json.Unmarshal([]byte(os.Getenv("HOSTILE_SCRIPT")), &sc); err != nil {
		panic(err)
	}
	var opts []hostile.ServerOption
	if path := os.Getenv("HOSTILE_EVENTS"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			panic(err)
		}
		opts = append(opts, hostile.WithEvents(f))
	}
	hostile.NewServer(sc, os.Stdout, opts...).Serve(os.Stdin)
}

// TestTaskServerKilledAtRandomMoments: the server running a write as a
// task is killed (SIGKILL) at a random moment of the task's life — before
// the handle, while it works, while it waits for input, around its end —
// again and again; no write is lost. Each run's write either the server
// never received, or it reported the task completed before it died, or the
// ledger holds an unknown outcome for it; and no write is left in flight.
// MCPX_POLICY_PROXY_KILLS sets the number of kills (default 40, 10 with
// -short).
func TestTaskServerKilledAtRandomMoments(t *testing.T) {
	kills := crashtest.Kills("MCPX_POLICY_PROXY_KILLS", 40, 10)
	eng, state := newEngine(t, allowWrites)
	dir := t.TempDir()
	var settled, unknown, unsent int
	for i := range kills {
		gen := generations[i%2]
		sc := taskScript(gen,
			hostile.Step{Status: "working", JitterMs: 10},
			hostile.Step{Status: "input_required", JitterMs: 10},
			hostile.Step{Status: "working", JitterMs: 10},
			hostile.Step{Status: "completed", JitterMs: 20})
		script, _ := json.Marshal(sc)
		events := filepath.Join(dir, fmt.Sprintf("events-%d", i))
		cmd := crashtest.Command(roleEnv+"=hostile-server", "HOSTILE_SCRIPT="+string(script), "HOSTILE_EVENTS="+events)
		server, err := proxy.StartCommand(cmd, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		clientEnd, front := net.Pipe()
		log := &logBuffer{}
		done := make(chan error, 1)
		go func() {
			opts := proxy.Options{Engine: eng, Server: "s", Logger: slog.New(slog.NewTextHandler(log, nil))}
			done <- proxy.Run(context.Background(), opts, proxy.NewStreamConn(front, front), server)
		}()
		client := hostile.NewClient(clientEnd, clientEnd)
		client.Initialize(t, gen, `{}`)
		args := fmt.Sprintf(`{"n":%d}`, i)
		client.Sendf(`{"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"deploy","arguments":%s,"task":{}}}`, args)
		// The client follows its task as a client would, until the end.
		go followTask(client, gen)
		time.Sleep(time.Duration(rand.IntN(90)) * time.Millisecond)
		cmd.Process.Kill()
		if err := <-done; !errors.Is(err, proxy.ErrServerGone) {
			t.Fatalf("run %d: the session ended with %v; want the server gone", i, err)
		}
		server.Close()
		clientEnd.Close()

		received, completed := taskEvents(t, events)
		l := readLedgerFile(t, state)
		if len(l.InFlight) != 0 {
			t.Fatalf("run %d: writes left in flight: %+v\n%s", i, l.InFlight, log)
		}
		ws, err := unknownWrites(eng)
		if err != nil {
			t.Fatal(err)
		}
		sha, _ := decision.ArgsSHA256(map[string]any{"n": float64(i)})
		entries := 0
		for _, w := range ws {
			if w.ArgsSHA256 == sha {
				entries++
			}
		}
		switch {
		case len(ws) != entries || entries > 1:
			t.Fatalf("run %d: the ledger holds %+v; want at most this run's write", i, ws)
		case received && !completed && entries == 0:
			t.Fatalf("run %d (%s): a write was lost: the server received it and never reported it completed, and the ledger has no unknown outcome for it\nproxy log:\n%s", i, gen, log)
		case entries == 1:
			unknown++
		case received:
			settled++
		default:
			unsent++
		}
		if _, err := eng.Writes().Clear("s", "", "next run"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d kills: %d writes settled (completed before the kill), %d unknown outcomes, %d never sent", kills, settled, unknown, unsent)
}

// followTask polls the task the client's call created until it ends (or
// the connection does), then fetches the result as its generation does.
func followTask(c *hostile.Client, gen string) {
	a := c.Try(hostile.IsAnswer("w"), hostile.Wait)
	task, _ := hostile.TaskOf(a)
	if task == "" {
		return
	}
	for i := 0; !c.Finished(); i++ {
		id := fmt.Sprintf("g%d", i)
		c.Sendf(`{"jsonrpc":"2.0","id":%q,"method":"tasks/get","params":{"taskId":%q}}`, id, task)
		g := c.Try(hostile.IsAnswer(id), hostile.Wait)
		status, _ := hostile.Result(g)["status"].(string)
		if g == nil || hostile.ErrorCode(g) != "" || status == "completed" || status == "failed" || status == "cancelled" {
			break
		}
	}
	if gen == "2025-11-25" {
		c.Sendf(`{"jsonrpc":"2.0","id":"res","method":"tasks/result","params":{"taskId":%q}}`, task)
	}
}

// taskEvents reads a killed server's events: whether it received the
// write, and whether it reported the task completed.
func taskEvents(t *testing.T, path string) (received, completed bool) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return false, false
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 3 && f[0] == "call" && f[1] == `"w"`:
			received = true
		case len(f) == 3 && f[0] == "status" && f[2] == "completed":
			completed = true
		}
	}
	return received, completed
}
