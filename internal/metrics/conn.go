package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Connection is a JSON-RPC connection to an MCP server: the proxy's, or an
// MCP SDK connection.
type Connection interface {
	Read(context.Context) (jsonrpc.Message, error)
	Write(context.Context, jsonrpc.Message) error
	Close() error
}

// Upstream wraps the proxy's connection to the MCP server so that m sees
// each tools/call: a request written starts it (upstream_calls_in_flight),
// the response read with its id ends it (upstream_call_duration_seconds).
// Calls still unanswered when the connection fails or closes end as lost.
// Every message passes through untouched.
func (m *Metrics) Upstream(c Connection) *UpstreamConn {
	return &UpstreamConn{c: c, m: m, calls: map[jsonrpc.ID]time.Time{}}
}

// UpstreamConn is a Connection that m watches. Its methods are safe for
// the concurrent use the wrapped connection allows.
type UpstreamConn struct {
	c Connection
	m *Metrics

	mu     sync.Mutex
	calls  map[jsonrpc.ID]time.Time
	closed bool
}

// Write writes msg, counting a tools/call request.
func (c *UpstreamConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.IsCall() {
		return c.c.Write(ctx, msg)
	}
	c.mu.Lock()
	if _, dup := c.calls[req.ID]; !dup && !c.closed {
		c.calls[req.ID] = time.Now()
		c.m.UpstreamStarted()
	}
	c.mu.Unlock()
	err := c.c.Write(ctx, msg)
	if err != nil {
		// Close follows a failed write (mcp.Connection's contract) and
		// ends every call still counted, this one included.
		c.lose()
	}
	return err
}

// Read reads the next message, ending the call a response answers.
func (c *UpstreamConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.c.Read(ctx)
	if err != nil {
		c.lose()
		return msg, err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		start, found := c.calls[resp.ID]
		delete(c.calls, resp.ID)
		c.mu.Unlock()
		if found {
			result := UpstreamResult
			if resp.Error != nil {
				result = UpstreamError
			}
			c.m.UpstreamDone(result, time.Since(start))
		}
	}
	return msg, nil
}

// Close closes the connection; unanswered calls end as lost.
func (c *UpstreamConn) Close() error {
	c.lose()
	return c.c.Close()
}

// lose ends every call still counted as lost; later calls are not counted.
func (c *UpstreamConn) lose() {
	c.mu.Lock()
	calls := c.calls
	c.calls = map[jsonrpc.ID]time.Time{}
	c.closed = true
	c.mu.Unlock()
	for _, start := range calls {
		c.m.UpstreamDone(UpstreamLost, time.Since(start))
	}
}
