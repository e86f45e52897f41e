package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/hostile"
	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// The hostile rig joins the kit's client and server (internal/hostile) to
// one proxy session in process.

// taskTools are the tools of the hostile rig's server: a write and a read
// that may run as tasks, and a write that never does.
var taskTools = []json.RawMessage{
	json.RawMessage(`{"name":"deploy","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object","properties":{"n":{"type":"number"}}},"execution":{"taskSupport":"optional"}}`),
	json.RawMessage(`{"name":"report","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","properties":{"n":{"type":"number"}}},"execution":{"taskSupport":"optional"}}`),
	json.RawMessage(`{"name":"note","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object","properties":{"n":{"type":"number"}}}}`),
}

const allowWrites = "version: 1\npolicy: {write: allow}\nservers: {s: {}}\n"

type hostileRig struct {
	eng    *mcpxpolicy.Engine
	state  string
	client *hostile.Client
	server *hostile.Server
	log    *logBuffer
	done   chan error
	// serverEnd is the server's end of its pipe: closing it is the
	// server going away.
	serverEnd net.Conn
	clientEnd net.Conn

	once sync.Once
	err  error
}

// newEngine loads config into an engine with its own state dir.
func newEngine(t testing.TB, config string) (*mcpxpolicy.Engine, string) {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: state, Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return eng, state
}

// newHostileRig runs one proxy session (server "s", opts as given) between
// the kit's client and a kit server playing sc; the client has not
// initialized.
func newHostileRig(t testing.TB, eng *mcpxpolicy.Engine, opts proxy.Options, sc hostile.Script, sopts ...hostile.ServerOption) *hostileRig {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clientEnd, proxyFront := net.Pipe()
	proxyBack, serverEnd := net.Pipe()
	r := &hostileRig{eng: eng, log: &logBuffer{}, done: make(chan error, 1), serverEnd: serverEnd, clientEnd: clientEnd}
	r.server = hostile.NewServer(sc, serverEnd, sopts...)
	go func() {
		r.server.Serve(serverEnd)
		serverEnd.Close()
	}()
	r.client = hostile.NewClient(clientEnd, clientEnd)
	opts.Engine, opts.Server = eng, "s"
	opts.Logger = slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	go func() {
		r.done <- proxy.Run(ctx, opts, proxy.NewStreamConn(proxyFront, proxyFront), proxy.NewStreamConn(proxyBack, proxyBack))
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s", r.log)
		}
		clientEnd.Close()
		r.wait(t)
		cancel()
		serverEnd.Close()
	})
	return r
}

// wait waits for the session to end and returns what Run returned.
func (r *hostileRig) wait(t testing.TB) error {
	t.Helper()
	r.once.Do(func() {
		select {
		case r.err = <-r.done:
		case <-time.After(hostile.Wait):
			t.Error("the proxy session did not end")
		}
	})
	return r.err
}

// call sends a tools/call (with a task parameter when task) and returns
// the proxy's answer.
func (r *hostileRig) call(t testing.TB, id, tool string, n int, task bool) map[string]any {
	t.Helper()
	extra := ""
	if task {
		extra = `,"task":{"ttl":60000}`
	}
	r.client.Sendf(`{"jsonrpc":"2.0","id":%q,"method":"tools/call","params":{"name":%q,"arguments":{"n":%d}%s}}`, id, tool, n, extra)
	return r.client.Answer(t, id)
}

// request sends a request and returns its answer.
func (r *hostileRig) request(t testing.TB, id, method, params string) map[string]any {
	t.Helper()
	r.client.Sendf(`{"jsonrpc":"2.0","id":%q,"method":%q,"params":%s}`, id, method, params)
	return r.client.Answer(t, id)
}

// ledgerFile is what the state dir's ledger.json holds: entries and the
// markers of writes in flight.
type ledgerFile struct {
	Entries []struct {
		Tool  string `json:"tool"`
		Cause string `json:"cause"`
	} `json:"entries"`
	InFlight []struct {
		Tool string `json:"tool"`
	} `json:"in_flight"`
}

func readLedgerFile(t testing.TB, state string) ledgerFile {
	t.Helper()
	var l ledgerFile
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

// until polls cond (a check of state, not of time) until it holds.
func until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hostile.Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func unknownTools(t testing.TB, eng *mcpxpolicy.Engine) []string {
	t.Helper()
	ws, err := unknownWrites(eng)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range ws {
		out = append(out, fmt.Sprintf("%s: %s", w.Tool, w.Cause))
	}
	return out
}
