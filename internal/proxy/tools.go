package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// listTimeout bounds the proxy's own tools/list.
const listTimeout = 30 * time.Second

// catalog is the server's own tool list: what the policy classifies calls
// with (annotations come only from here, never from the client).
type catalog struct {
	mu      sync.Mutex
	tools   map[string]json.RawMessage // nil until a complete list is known
	list    []json.RawMessage          // the complete list, as sent
	checked []string                   // tool names of the last config check
	rev     string                     // config revision of the last check
	refresh sync.Mutex                 // one own tools/list at a time
}

// invalidate forgets the list (notifications/tools/list_changed).
func (c *catalog) invalidate() {
	c.mu.Lock()
	c.tools = nil
	c.mu.Unlock()
}

func (c *catalog) get(name string) (json.RawMessage, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tools == nil {
		return nil, false, false
	}
	raw, ok := c.tools[name]
	return raw, ok, true
}

// set stores a complete list and reports whether the config needs a check
// against it: its tool names differ from the last checked list's, or the
// config (revision rev) changed since.
func (c *catalog) set(tools []json.RawMessage, rev string) (changed bool) {
	m := make(map[string]json.RawMessage, len(tools))
	names := make([]string, 0, len(tools))
	for _, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name != "" {
			m[t.Name] = raw
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools = m
	c.list = tools
	if slices.Equal(names, c.checked) && c.checked != nil && rev == c.rev {
		return false
	}
	c.checked, c.rev = names, rev
	return true
}

// stale returns the known list when the config changed since it was last
// checked against it.
func (c *catalog) stale(rev string) ([]json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tools == nil || c.rev == rev {
		return nil, false
	}
	return c.list, true
}

// tool returns the server's Tool by name, listing the tools first when the
// list is not known. known is false when the server does not list it.
func (s *session) tool(ctx context.Context, name string) (t mcpxpolicy.Tool, known bool, err error) {
	raw, ok, valid := s.cat.get(name)
	if !valid {
		if err := s.listTools(ctx); err != nil {
			return mcpxpolicy.Tool{Name: name}, false, err
		}
		raw, ok, _ = s.cat.get(name)
	}
	if !ok {
		return mcpxpolicy.Tool{Name: name}, false, nil
	}
	t, err = mcpxpolicy.ParseTool(raw)
	if err != nil {
		return mcpxpolicy.Tool{Name: name}, true, err
	}
	return t, true, nil
}

// listTools fetches the server's whole tool list (every page) with the
// proxy's own tools/list and stores it.
func (s *session) listTools(ctx context.Context) error {
	s.cat.refresh.Lock()
	defer s.cat.refresh.Unlock()
	if _, _, valid := s.cat.get(""); valid {
		return nil // another caller just listed
	}
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var all []json.RawMessage
	cursor := ""
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		r, err := s.request(ctx, s.server, "tools/list", params)
		if err != nil {
			return err
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(r.Result, &page); err != nil {
			return err
		}
		all = append(all, page.Tools...)
		if page.NextCursor == "" || len(all) > 100000 {
			break
		}
		cursor = page.NextCursor
	}
	s.storeTools(all)
	return nil
}

// storeTools keeps a complete list and re-checks the config against it
// when its tools changed.
func (s *session) storeTools(tools []json.RawMessage) {
	if !s.cat.set(tools, s.opts.Engine.Revision()) {
		return
	}
	ws, err := s.opts.Engine.CheckTools(s.opts.Server, tools)
	if err != nil {
		s.log.Warn("the server's tool list is not a valid catalog", "err", err)
		return
	}
	for _, w := range ws {
		s.log.Warn("config warning against the server's tool list", "warning", w)
	}
	s.log.Info("tool list checked", "tools", len(tools), "warnings", len(ws))
}

// recheckConfig checks a reloaded config against the known tool list.
func (s *session) recheckConfig() {
	if list, ok := s.cat.stale(s.opts.Engine.Revision()); ok {
		s.storeTools(list)
	}
}

// recheck lists the tools again after notifications/tools/list_changed.
func (s *session) recheck() {
	if err := s.listTools(s.ctx); err != nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("listing the tools after list_changed failed", "err", err)
	}
}

// filterToolsList drops hidden tools from a tools/list answer and, with
// PublishClosedSchemas, closes the input schemas. A complete answer (no
// cursor asked, none given) also becomes the catalog. Everything else in
// the answer is kept as the server sent it.
func (s *session) filterToolsList(m *jsonrpc.Response, complete bool) *jsonrpc.Response {
	var res map[string]json.RawMessage
	if err := json.Unmarshal(m.Result, &res); err != nil {
		return m
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(res["tools"], &tools); err != nil {
		return m
	}
	if complete {
		if nc, ok := res["nextCursor"]; !ok || bytes.Equal(nc, []byte(`""`)) || bytes.Equal(nc, []byte("null")) {
			s.storeTools(tools)
		}
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for _, raw := range tools {
		t, err := mcpxpolicy.ParseTool(raw)
		if err != nil {
			// Never publish what cannot be gated.
			s.log.Warn("dropping a tool the policy cannot read from tools/list", "tool", string(raw[:min(len(raw), 200)]), "err", err)
			continue
		}
		if s.hidden(t) {
			continue
		}
		if s.opts.PublishClosedSchemas {
			if closed, err := closeTool(raw); err == nil {
				raw = closed
			}
		}
		kept = append(kept, raw)
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return m
	}
	res["tools"] = out
	result, err := json.Marshal(res)
	if err != nil {
		return m
	}
	return &jsonrpc.Response{ID: m.ID, Result: result}
}

// hidden asks the policy whether a tool is hidden: step 1 of every
// decision, so the list and the gate never disagree.
func (s *session) hidden(t mcpxpolicy.Tool) bool {
	d, _ := s.opts.Engine.Decide(s.ctx, mcpxpolicy.Call{Surface: mcpxpolicy.SurfaceMCP, Server: s.opts.Server, Tool: t, Args: map[string]any{}})
	return d.Outcome == mcpxpolicy.Deny && d.First().Code == mcpxpolicy.HiddenTool
}

// closeTool stamps additionalProperties: false into a tool's inputSchema
// (closeSchema); every other field of the tool is kept as sent.
func closeTool(raw json.RawMessage) (json.RawMessage, error) {
	var t map[string]json.RawMessage
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	in, ok := t["inputSchema"]
	if !ok {
		return raw, nil
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var schema any
	if err := dec.Decode(&schema); err != nil {
		return nil, err
	}
	if !closeSchema(schema) {
		return raw, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	t["inputSchema"] = b
	return json.Marshal(t)
}

// closeSchema sets additionalProperties: false on an object schema with
// properties that says nothing about other keys (no additionalProperties,
// no patternProperties), and on the object schemas of its properties, as
// the unknown-arguments step reads them (SPEC §3). It reports whether it
// changed anything.
func closeSchema(v any) bool {
	s, ok := v.(map[string]any)
	if !ok {
		return false
	}
	props, ok := s["properties"].(map[string]any)
	if !ok {
		return false
	}
	changed := false
	_, ap := s["additionalProperties"]
	_, pp := s["patternProperties"]
	if !ap && !pp {
		s["additionalProperties"] = false
		changed = true
	}
	for _, p := range props {
		if closeSchema(p) {
			changed = true
		}
	}
	return changed
}
