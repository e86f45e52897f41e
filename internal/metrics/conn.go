package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Conn wraps the proxy's connection to the MCP server so that m sees each
// tools/call: a request written starts it (upstream_calls_in_flight), the
// response read with its id ends it (upstream_call_duration_seconds). Calls
// still unanswered when the connection fails or closes end as lost. Other
// messages pass through untouched.
func (m *Metrics) Conn(c mcp.Connection) mcp.Connection {
	return &conn{Connection: c, m: m, calls: map[jsonrpc.ID]time.Time{}}
}

type conn struct {
	mcp.Connection
	m *Metrics

	mu     sync.Mutex
	calls  map[jsonrpc.ID]time.Time
	closed bool
}

func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/call" || !req.IsCall() {
		return c.Connection.Write(ctx, msg)
	}
	c.mu.Lock()
	if _, dup := c.calls[req.ID]; !dup && !c.closed {
		c.calls[req.ID] = time.Now()
		c.m.UpstreamStarted()
	}
	c.mu.Unlock()
	err := c.Connection.Write(ctx, msg)
	if err != nil {
		// Close follows a failed write (mcp.Connection's contract) and
		// ends every call still counted, this one included.
		c.lose()
	}
	return err
}

func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
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

func (c *conn) Close() error {
	c.lose()
	return c.Connection.Close()
}

// lose ends every call still counted as lost; later calls are not counted.
func (c *conn) lose() {
	c.mu.Lock()
	calls := c.calls
	c.calls = map[jsonrpc.ID]time.Time{}
	c.closed = true
	c.mu.Unlock()
	for _, start := range calls {
		c.m.UpstreamDone(UpstreamLost, time.Since(start))
	}
}
