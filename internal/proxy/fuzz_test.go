package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/proxy"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

// FuzzProxy feeds JSON-RPC frames from both sides through a proxy session
// (proxy.Run over stream connections) in front of a recording server, and
// holds one property: every tools/call the server received is one the
// policy does not deny. Each received call is decided again, independently,
// by a second engine with the same config (and no ledger, whose entries
// only ever tighten); a call it asks for must have been approved by the
// client through an elicitation the proxy sent, once per approval.
//
// An input is lines, each an action:
//
//	t[TOOLS]  first line only: the server's tool list for this run
//	c FRAME   the client sends FRAME
//	s FRAME   the server sends FRAME
//	a / d     the client approves / declines the proxy's elicitations
//	h / r     the client holds them unanswered / answers those held
//	H / R     the server holds its tools/list answers / sends those held
//	w         wait until both sides are quiet
//
// In a FRAME, $E is the id of the last elicitation the client got and $L
// that of the last tools/list the server got (JSON strings), so forged
// answers to the proxy's own requests can be tried from either side.
// Seeds are in testdata/fuzz/FuzzProxy (they run as plain tests); fuzz with
//
//	go test ./internal/proxy/ -run '^$' -fuzz FuzzProxy -parallel 1
func FuzzProxy(f *testing.F) {
	dir := f.TempDir()
	conf := filepath.Join(dir, "mcpx-policy.yaml")
	if err := os.WriteFile(conf, []byte(fuzzConfig), 0o644); err != nil {
		f.Fatal(err)
	}
	newEngine := func(state string) *mcpxpolicy.Engine {
		eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{conf}, StateDir: filepath.Join(dir, state), Env: []string{}})
		if err != nil {
			f.Fatal(err)
		}
		return eng
	}
	gate, judge := newEngine("gate"), newEngine("judge")
	f.Fuzz(func(t *testing.T, data []byte) {
		run := newFuzzRun(t, gate, data)
		run.play()
		run.finish()
		run.check(judge)
		// Writes lost in this run (cancelled, cut off) would refuse every
		// write of the next ones.
		gate.Writes().Clear("s", "", "fuzz run ended")
	})
}

const fuzzConfig = `version: 1
policy: {write: ask, unknownArgs: reject}
servers:
  s:
    hiddenTools: ["move_file"]
    argumentRules:
      - id: in-ws
        tools: ["write_file", "/^edit/"]
        schema: {properties: {path: {type: string, pattern: "^/ws/"}}}
`

// fuzzTools is the server's tool list unless the input gives one: tools
// the proxy reads, a hidden one, and three it cannot read.
const fuzzTools = `[
{"name":"read_file","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object","properties":{"path":{"type":"string"},"Path":{"type":"string"},"n":{"type":"number"}},"additionalProperties":false}},
{"name":"write_file","annotations":{"readOnlyHint":false},"inputSchema":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"additionalProperties":false}},
{"name":"edit_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array"}}}},
{"name":"move_file","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}},
{"name":"odd","annotations":{"readOnlyHint":"yes"},"inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}},
{"name":"twice","annotations":{"readOnlyHint":true}},
{"name":"twice","annotations":{"readOnlyHint":false}}
]`

type fuzzRun struct {
	t     *testing.T
	lines [][]byte
	tools []json.RawMessage

	client, server net.Conn
	done           chan error
	cancel         context.CancelFunc
	activity       chan struct{}

	mu        sync.Mutex
	approve   bool              // the client approves elicitations
	holdE     bool              // the client holds them
	heldE     []map[string]any  // elicitations held
	holdL     bool              // the server holds its tools/list answers
	heldL     []json.RawMessage // ids of the tools/list held
	lastE     string            // id of the last elicitation the client got
	lastL     string            // id of the last tools/list the server got
	approvals map[string]int    // call sha256 -> approvals the client gave
	elicited  map[string]string // id of an elicitation of the proxy -> the call's sha256
	answered  map[string]bool   // elicitations the client answered
	received  [][]byte          // every line the server received
	clientOut *outbox
	serverOut *outbox
}

func newFuzzRun(t *testing.T, eng *mcpxpolicy.Engine, data []byte) *fuzzRun {
	r := &fuzzRun{t: t, approvals: map[string]int{}, elicited: map[string]string{}, answered: map[string]bool{}, activity: make(chan struct{}, 1), done: make(chan error, 1)}
	r.lines = bytes.Split(data, []byte("\n"))
	if len(r.lines) > 0 && len(r.lines[0]) > 0 && r.lines[0][0] == 't' {
		if json.Unmarshal(r.lines[0][1:], &r.tools) != nil {
			r.tools = nil
		}
		r.lines = r.lines[1:]
	}
	if r.tools == nil {
		json.Unmarshal([]byte(fuzzTools), &r.tools)
	}
	clientEnd, front := net.Pipe()
	back, serverEnd := net.Pipe()
	r.client, r.server = clientEnd, serverEnd
	r.clientOut, r.serverOut = newOutbox(clientEnd), newOutbox(serverEnd)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	opts := proxy.Options{Engine: eng, Server: "s", Logger: slog.New(slog.DiscardHandler)}
	go func() {
		r.done <- proxy.Run(ctx, opts, proxy.NewStreamConn(front, front), proxy.NewStreamConn(back, back))
	}()
	go r.serverLoop()
	go r.clientLoop()
	r.sendClient([]byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"fuzz","version":"1"}}}`))
	r.sendClient([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	return r
}

func (r *fuzzRun) poke() {
	select {
	case r.activity <- struct{}{}:
	default:
	}
}

// sendClient and sendServer queue a line for a side's writer: net.Pipe
// has no buffer, and a reader loop blocked on a write could deadlock with
// the proxy, as no OS pipe would.
func (r *fuzzRun) sendClient(b []byte) { r.clientOut.push(append(b, '\n')) }

func (r *fuzzRun) sendServer(b []byte) { r.serverOut.push(append(b, '\n')) }

// outbox is an unbounded queue of lines with one writer.
type outbox struct {
	mu     sync.Mutex
	lines  [][]byte
	wake   chan struct{}
	closed bool
}

func newOutbox(conn net.Conn) *outbox {
	o := &outbox{wake: make(chan struct{}, 1)}
	go func() {
		for range o.wake {
			for {
				o.mu.Lock()
				if len(o.lines) == 0 {
					o.mu.Unlock()
					break
				}
				line := o.lines[0]
				o.lines = o.lines[1:]
				o.mu.Unlock()
				if _, err := conn.Write(line); err != nil {
					return
				}
			}
		}
	}()
	return o
}

func (o *outbox) push(line []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	o.lines = append(o.lines, line)
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.closed = true
		close(o.wake)
	}
}

// substitute puts the ids seen into a frame of the input.
func (r *fuzzRun) substitute(b []byte) []byte {
	r.mu.Lock()
	e, l := r.lastE, r.lastL
	r.mu.Unlock()
	q := func(s string) []byte {
		if s == "" {
			s = "mcpx-policy/none"
		}
		out, _ := json.Marshal(s)
		return out
	}
	b = bytes.ReplaceAll(b, []byte("$E"), q(e))
	return bytes.ReplaceAll(b, []byte("$L"), q(l))
}

func (r *fuzzRun) play() {
	for _, line := range r.lines {
		if len(line) == 0 {
			continue
		}
		switch line[0] {
		case 'c':
			frame := r.substitute(line[1:])
			r.creditRawAnswer(frame)
			r.sendClient(frame)
		case 's':
			r.sendServer(r.substitute(line[1:]))
		case 'a', 'd':
			r.mu.Lock()
			r.approve = line[0] == 'a'
			r.mu.Unlock()
		case 'h':
			r.mu.Lock()
			r.holdE = true
			r.mu.Unlock()
		case 'H':
			r.mu.Lock()
			r.holdL = true
			r.mu.Unlock()
		case 'r':
			r.releaseE()
		case 'R':
			r.releaseL()
		case 'w':
			r.quiet(20*time.Millisecond, time.Second)
		}
	}
}

// finish answers everything held, lets the session settle, and ends it.
func (r *fuzzRun) finish() {
	r.releaseE()
	r.releaseL()
	r.quiet(25*time.Millisecond, 2*time.Second)
	r.clientOut.close()
	r.client.Close()
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.t.Fatal("the proxy did not end after the client left")
	}
	r.cancel()
	r.serverOut.close()
	r.server.Close()
}

// quiet waits until neither side saw a frame for idle, at most max.
func (r *fuzzRun) quiet(idle, max time.Duration) {
	deadline := time.After(max)
	for {
		select {
		case <-r.activity:
		case <-time.After(idle):
			return
		case <-deadline:
			return
		}
	}
}

var shaInPrompt = regexp.MustCompile(`sha256 ([0-9a-f]{64})`)

// clientLoop reads what the proxy sends the client: it answers the
// proxy's elicitations (approving or declining, or holding them) and the
// server's requests ({}).
func (r *fuzzRun) clientLoop() {
	br := bufio.NewReaderSize(r.client, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			r.poke()
			var m map[string]any
			if json.Unmarshal(line, &m) == nil {
				if _, isReq := m["method"]; isReq && m["id"] != nil {
					id, _ := m["id"].(string)
					if m["method"] == "elicitation/create" && strings.HasPrefix(id, "mcpx-policy/") {
						b, _ := json.Marshal(m["params"])
						sha := shaInPrompt.FindSubmatch(b)
						if sha == nil {
							r.t.Errorf("an elicitation of the proxy without the call's sha256: %s", b)
						}
						r.mu.Lock()
						if sha != nil {
							r.elicited[id] = string(sha[1])
						}
						r.lastE = id
						hold := r.holdE
						if hold {
							r.heldE = append(r.heldE, m)
						}
						r.mu.Unlock()
						if !hold {
							r.answerE(m)
						}
					} else {
						idj, _ := json.Marshal(m["id"])
						r.sendClient([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, idj)))
					}
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// answerE answers one of the proxy's elicitations as the person would,
// and counts an approval for the exact call it shows; one the input
// answered already gets a second answer, which counts for nothing.
func (r *fuzzRun) answerE(m map[string]any) {
	id, _ := m["id"].(string)
	idj, _ := json.Marshal(id)
	r.mu.Lock()
	approve, first := r.approve, !r.answered[id]
	r.answered[id] = true
	sha, ok := r.elicited[id]
	if approve && first && ok {
		r.approvals[sha]++
	}
	r.mu.Unlock()
	if !approve {
		r.sendClient([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"decline"}}`, idj)))
		return
	}
	r.sendClient([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"approve":true}}}`, idj)))
}

// creditRawAnswer counts an approval the input itself sends as the client:
// the first answer to an elicitation of the proxy that approves when read
// strictly, as the proxy reads it, is the person's.
func (r *fuzzRun) creditRawAnswer(frame []byte) {
	var env struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	var res struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	var id string
	approves := strictjson.Unmarshal(frame, &env) == nil && env.JSONRPC == "2.0" && env.Method == nil && env.Error == nil &&
		env.Result != nil && json.Unmarshal(env.ID, &id) == nil && strictjson.Unmarshal(env.Result, &res) == nil
	if ok, _ := res.Content["approve"].(bool); !ok || res.Action != "accept" {
		approves = false
	}
	if !approves {
		// A refused answer still ends the elicitation (as declined) when
		// the proxy can read its id: one "id", none in another case.
		id = soleID(frame)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sha, ok := r.elicited[id]
	if !ok || r.answered[id] {
		return
	}
	r.answered[id] = true
	if approves {
		r.approvals[sha]++
	}
}

// soleID is the string id of an answer with exactly one "id" member and
// none spelled so in another case, else "".
func soleID(frame []byte) string {
	dec := json.NewDecoder(bytes.NewReader(frame))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	var ids []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		key, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return ""
		}
		switch {
		case key == "id":
			ids = append(ids, v)
		case strings.EqualFold(key, "id"), strings.EqualFold(key, "method"):
			return "" // no id, or a request: not an answer
		}
	}
	var id string
	if len(ids) != 1 || json.Unmarshal(ids[0], &id) != nil {
		return ""
	}
	return id
}

func (r *fuzzRun) releaseE() {
	r.mu.Lock()
	held := r.heldE
	r.heldE, r.holdE = nil, false
	r.mu.Unlock()
	for _, m := range held {
		r.answerE(m)
	}
}

func (r *fuzzRun) releaseL() {
	r.mu.Lock()
	held := r.heldL
	r.heldL, r.holdL = nil, false
	r.mu.Unlock()
	for _, id := range held {
		r.answerList(id)
	}
}

func (r *fuzzRun) answerList(id json.RawMessage) {
	tools, _ := json.Marshal(r.tools)
	r.sendServer([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}`, id, tools)))
}

// serverLoop records every line the server receives and answers as an
// MCP server reading exact keys (the last of duplicates) would.
func (r *fuzzRun) serverLoop() {
	br := bufio.NewReaderSize(r.server, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			r.poke()
			r.mu.Lock()
			r.received = append(r.received, bytes.TrimSpace(line))
			r.mu.Unlock()
			var m map[string]json.RawMessage
			var method string
			if json.Unmarshal(line, &m) == nil && json.Unmarshal(m["method"], &method) == nil && m["id"] != nil {
				switch method {
				case "tools/list":
					var id string
					json.Unmarshal(m["id"], &id)
					r.mu.Lock()
					if strings.HasPrefix(id, "mcpx-policy/") {
						r.lastL = id
					}
					hold := r.holdL
					if hold {
						r.heldL = append(r.heldL, m["id"])
					}
					r.mu.Unlock()
					if !hold {
						r.answerList(m["id"])
					}
				case "initialize":
					r.sendServer([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fuzz","version":"1"}}}`, m["id"])))
				case "tools/call":
					r.sendServer([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ran"}]}}`, m["id"])))
				default:
					r.sendServer([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m["id"])))
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// check decides every tools/call the server received, as the server read
// it, with the judge engine: none may be denied, and each ask must use up
// an approval the client gave for that exact call.
func (r *fuzzRun) check(judge *mcpxpolicy.Engine) {
	// The server's tools as the truth: a name it lists once in a form
	// that parses, else a call to it is not one the policy could judge.
	count := map[string]int{}
	parsed := map[string]decision.Tool{}
	for _, raw := range r.tools {
		var probe map[string]json.RawMessage
		var name string
		json.Unmarshal(raw, &probe)
		json.Unmarshal(probe["name"], &name)
		count[name]++
		if tool, err := mcpxpolicy.ParseTool(raw); err == nil && tool.Name == name {
			parsed[name] = tool
		}
	}
	r.mu.Lock()
	received := append([][]byte(nil), r.received...)
	approvals := r.approvals
	r.mu.Unlock()
	for _, line := range received {
		var m map[string]json.RawMessage
		var method string
		if json.Unmarshal(line, &m) != nil || json.Unmarshal(m["method"], &method) != nil || method != "tools/call" {
			continue
		}
		// Read as the server does: exact keys (a map, not a struct, whose
		// fields encoding/json would match in any case), the last of
		// duplicates.
		dec := json.NewDecoder(bytes.NewReader(m["params"]))
		dec.UseNumber()
		var p map[string]any
		if err := dec.Decode(&p); err != nil {
			r.t.Fatalf("the server received a tools/call it cannot read: %s (%v)", line, err)
		}
		name, _ := p["name"].(string)
		tool, ok := parsed[name]
		if !ok || count[name] != 1 {
			r.t.Fatalf("the server received a call to a tool the proxy cannot have judged: %s", line)
		}
		args, _ := p["arguments"].(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		call := decision.Call{Surface: mcpxpolicy.SurfaceMCP, Server: "s", Tool: tool, Args: args}
		d, err := judge.Decide(context.Background(), call)
		switch {
		case err != nil || d.Outcome == decision.Deny:
			r.t.Fatalf("the server received a call the policy denies (%s %s, %v): %s", d.Outcome, d.First().Code, err, line)
		case d.Outcome == decision.Ask:
			if approvals[d.Call.SHA256] == 0 {
				r.t.Fatalf("the server received an ask (%s) the person did not approve: %s", d.First().Code, line)
			}
			approvals[d.Call.SHA256]--
		}
	}
}
