package hostile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// Wait is how long Client.Next waits for a frame before it fails the
// test: long, so that a loaded machine does not fail a test that would
// pass; no test asserts on how long anything took.
const Wait = 30 * time.Second

// Client is a raw MCP client: it writes whatever lines a test gives it and
// keeps every frame it reads.
type Client struct {
	w   io.Writer
	wmu sync.Mutex

	mu       sync.Mutex
	frames   []map[string]any // nil once Next returned it
	changed  chan struct{}
	finished bool
}

// NewClient returns a client writing to w and reading r (until r ends).
func NewClient(r io.Reader, w io.Writer) *Client {
	c := &Client{w: w, changed: make(chan struct{}, 1)}
	go c.read(r)
	return c
}

func (c *Client) read(r io.Reader) {
	defer func() {
		c.mu.Lock()
		c.finished = true
		c.mu.Unlock()
		c.poke()
	}()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if m, derr := Decode(line); derr == nil {
			c.mu.Lock()
			c.frames = append(c.frames, m)
			c.mu.Unlock()
			c.poke()
		}
		if err != nil {
			return
		}
	}
}

func (c *Client) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Decode reads one frame with numbers as json.Number.
func Decode(line []byte) (map[string]any, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, io.EOF
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	err := dec.Decode(&m)
	return m, err
}

// Send writes one line.
func (c *Client) Send(line string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := io.WriteString(c.w, line+"\n")
	return err
}

// Sendf writes one line made with fmt.Sprintf.
func (c *Client) Sendf(format string, args ...any) error { return c.Send(fmt.Sprintf(format, args...)) }

// Initialize initializes the session with caps (a JSON object) as the
// client's capabilities and waits for the answer.
func (c *Client) Initialize(t testing.TB, protocol, caps string) map[string]any {
	t.Helper()
	c.Sendf(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":%q,"capabilities":%s,"clientInfo":{"name":"hostile","version":"1"}}}`, protocol, caps)
	a := c.Answer(t, `init`)
	c.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return a
}

// Next returns the first frame not returned before for which ok holds,
// waiting up to Wait for it.
func (c *Client) Next(t testing.TB, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	m, err := c.next(what, ok, Wait)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Try is Next without failing: nil when no such frame came within wait
// (or the connection ended first).
func (c *Client) Try(ok func(map[string]any) bool, wait time.Duration) map[string]any {
	m, _ := c.next("", ok, wait)
	return m
}

func (c *Client) next(what string, ok func(map[string]any) bool, wait time.Duration) (map[string]any, error) {
	deadline := time.After(wait)
	for {
		c.mu.Lock()
		for i, m := range c.frames {
			if m != nil && ok(m) {
				c.frames[i] = nil // returned once; the client keeps it no more
				c.mu.Unlock()
				return m, nil
			}
		}
		finished := c.finished
		c.mu.Unlock()
		if finished {
			return nil, fmt.Errorf("the connection ended before %s", what)
		}
		select {
		case <-c.changed:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			return nil, fmt.Errorf("never got %s", what)
		}
	}
}

// Answer waits for the answer to the request with this id (as the frame
// writes it, without quotes for a string).
func (c *Client) Answer(t testing.TB, id string) map[string]any {
	t.Helper()
	return c.Next(t, "the answer to id "+id, IsAnswer(id))
}

// IsAnswer matches the answer to the request with this id.
func IsAnswer(id string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		_, isReq := m["method"]
		return !isReq && fmt.Sprint(m["id"]) == id
	}
}

// IsMethod matches a request or notification of method.
func IsMethod(method string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["method"] == method }
}

// Finished reports whether the connection has ended.
func (c *Client) Finished() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.finished
}

// Count is how many frames the client has read.
func (c *Client) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}

// ErrorCode is the JSON-RPC error code of an answer, "" for a result.
func ErrorCode(m map[string]any) string {
	e, ok := m["error"].(map[string]any)
	if !ok {
		return ""
	}
	return fmt.Sprint(e["code"])
}

// ErrorMessage is the JSON-RPC error message of an answer.
func ErrorMessage(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// Result is the result object of an answer (nil for an error).
func Result(m map[string]any) map[string]any {
	r, _ := m["result"].(map[string]any)
	return r
}

// Text is the text content of a CallToolResult answer, joined.
func Text(m map[string]any) string {
	content, _ := Result(m)["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		if tc, ok := c.(map[string]any); ok {
			s, _ := tc["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// TaskOf is the task a tools/call answer created: its id and status, from
// either generation's handle; "" when the answer is no task handle.
func TaskOf(m map[string]any) (id, status string) {
	r := Result(m)
	if r == nil {
		return "", ""
	}
	if r["resultType"] == "task" {
		id, _ = r["taskId"].(string)
		status, _ = r["status"].(string)
		return id, status
	}
	tk, _ := r["task"].(map[string]any)
	id, _ = tk["taskId"].(string)
	status, _ = tk["status"].(string)
	return id, status
}
