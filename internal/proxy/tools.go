package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// listTimeout bounds the proxy's own tools/list.
const listTimeout = 30 * time.Second

// catalog is the server's own tool list: what the policy classifies calls
// with (annotations come only from here, never from the client). It holds
// only tools that parsed strictly and whose name the list gives once: a
// tool the proxy cannot read is neither listed nor callable.
//
// Each listing — the proxy's own tools/list, or a complete one the client
// asked for — is numbered when it begins (seq) and remembers when it began
// (at). A list fits a call (fresh) when it began after the last
// notifications/tools/list_changed the proxy read before the call came,
// and within the age the call allows (Options.ToolsMaxAge); a call is
// never judged with a list that does not fit it.
type catalog struct {
	mu      sync.Mutex
	tools   map[string]decision.Tool   // nil until a complete list is known
	outputs map[string]json.RawMessage // their outputSchemas, as sent
	list    []json.RawMessage          // those tools, as sent
	checked []string                   // tool names of the last config check
	rev     string                     // config revision of the last check
	begun   uint64                     // listings begun so far (the last one's seq)
	seq     uint64                     // the kept list's listing
	at      time.Time                  // when the kept list's listing began
	// announced is begun when the server last announced a change: every
	// listing up to it may predate the change.
	announced uint64
	refresh   sync.Mutex // one own tools/list at a time
}

// fit is what a call asks of the list it is judged with: a listing after
// seq after, begun at or after notBefore.
type fit struct {
	after     uint64
	notBefore time.Time
}

// announce notes notifications/tools/list_changed: no listing begun so
// far fits a call that comes after it.
func (c *catalog) announce() {
	c.mu.Lock()
	c.announced = c.begun
	c.mu.Unlock()
}

// begin numbers a listing that begins now.
func (c *catalog) begin(now time.Time) (uint64, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.begun++
	return c.begun, now
}

// need is what a call that comes now asks of the list: begun after the
// last announced change; with perCall (a 2026-07-28 client, no maximum
// age), begun after now; with maxAge > 0, begun at most maxAge ago.
func (c *catalog) need(perCall bool, maxAge time.Duration, now time.Time) fit {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := fit{after: c.announced}
	if perCall {
		f.after = c.begun
	}
	if maxAge > 0 {
		f.notBefore = now.Add(-maxAge)
	}
	return f
}

// fits reports whether the kept list fits f (c.mu held).
func (c *catalog) fits(f fit) bool {
	return c.tools != nil && c.seq > f.after && !c.at.Before(f.notBefore)
}

// get returns the tool by name from the kept list; fresh is false when
// there is none or it does not fit f.
func (c *catalog) get(name string, f fit) (t decision.Tool, ok, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fits(f) {
		return decision.Tool{}, false, false
	}
	t, ok = c.tools[name]
	return t, ok, true
}

// readTools keeps the tools of a list that parse strictly
// (mcpxpolicy.ParseTool) and have a name no other tool of the list has,
// whether that other one parses or not: the server's reading of a tool the
// proxy cannot read, or of a name listed twice, is unknown. refused says
// why each other one was left out.
func readTools(raws []json.RawMessage) (tools []decision.Tool, kept []json.RawMessage, refused []string) {
	count := map[string]int{}
	parsed := make([]decision.Tool, len(raws))
	errs := make([]error, len(raws))
	for i, raw := range raws {
		// Count every name as a server reads it (the exact key), before
		// and whether or not the tool parses.
		var loose map[string]json.RawMessage
		var name string
		if json.Unmarshal(raw, &loose) == nil && json.Unmarshal(loose["name"], &name) == nil {
			count[name]++
		}
		t, err := mcpxpolicy.ParseTool(raw)
		if err == nil && t.Name == "" {
			err = errors.New(`no "name"`)
		}
		parsed[i], errs[i] = t, err
	}
	for i, raw := range raws {
		switch {
		case errs[i] != nil:
			refused = append(refused, fmt.Sprintf("%s: %v", clip(raw), errs[i]))
		case count[parsed[i].Name] > 1:
			refused = append(refused, fmt.Sprintf("%q: the name is listed %d times", parsed[i].Name, count[parsed[i].Name]))
		default:
			tools = append(tools, parsed[i])
			kept = append(kept, raw)
		}
	}
	return tools, kept, refused
}

// clip shortens a raw tool for a log line.
func clip(raw []byte) string {
	if len(raw) > 200 {
		return string(raw[:200]) + "…"
	}
	return string(raw)
}

// set stores a complete list (as readTools keeps it) of listing seq, begun
// at, unless a later listing's is kept already, and reports whether the
// config needs a check against it: its tool names differ from the last
// checked list's, or the config (revision rev) changed since.
func (c *catalog) set(tools []decision.Tool, raws []json.RawMessage, rev string, seq uint64, at time.Time) (changed bool) {
	m := make(map[string]decision.Tool, len(tools))
	outputs := map[string]json.RawMessage{}
	names := make([]string, 0, len(tools))
	for i, t := range tools {
		m[t.Name] = t
		names = append(names, t.Name)
		var fields struct {
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if json.Unmarshal(raws[i], &fields) == nil && len(fields.OutputSchema) > 0 {
			outputs[t.Name] = fields.OutputSchema
		}
	}
	slices.Sort(names)
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq < c.seq {
		return false // a later listing ended first
	}
	c.tools = m
	c.outputs = outputs
	c.list = raws
	c.seq, c.at = seq, at
	if slices.Equal(names, c.checked) && c.checked != nil && rev == c.rev {
		return false
	}
	c.checked, c.rev = names, rev
	return true
}

// outputSchema returns the outputSchema the server lists for a tool, as
// sent; nil when it declares none or the list is not known.
func (c *catalog) outputSchema(name string) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outputs[name]
}

// stale returns the known list when the config changed since it was last
// checked against it, and notes it as checked against revision rev.
func (c *catalog) stale(rev string) ([]json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tools == nil || c.rev == rev {
		return nil, false
	}
	c.rev = rev
	return c.list, true
}

// tool returns the server's Tool by name from a list that fits a call that
// comes now (catalog.need; perCall for a 2026-07-28 client), listing the
// tools first when the kept list does not. known is false when the server
// does not list it, or lists it in a form the proxy cannot read. err is
// set only when such a list could not be had: the call must then be
// refused, never decided without the tool's definition.
func (s *session) tool(ctx context.Context, name string, perCall bool) (t decision.Tool, known bool, err error) {
	f := s.cat.need(perCall && s.opts.ToolsMaxAge <= 0, s.opts.ToolsMaxAge, s.now())
	t, ok, fresh := s.cat.get(name, f)
	if !fresh {
		if err := s.listTools(ctx, f); err != nil {
			return decision.Tool{Name: name}, false, err
		}
		if t, ok, fresh = s.cat.get(name, f); !fresh {
			return decision.Tool{Name: name}, false, errors.New("the server's tool list changed while it was read")
		}
	}
	if !ok {
		return decision.Tool{Name: name}, false, nil
	}
	return t, true, nil
}

// listTools fetches the server's whole tool list (every page) with the
// proxy's own tools/list and stores it, unless the kept list fits f
// (another caller just listed). A page that does not decode strictly
// fails the listing.
func (s *session) listTools(ctx context.Context, f fit) error {
	s.cat.refresh.Lock()
	defer s.cat.refresh.Unlock()
	s.cat.mu.Lock()
	fits := s.cat.fits(f)
	s.cat.mu.Unlock()
	if fits {
		return nil
	}
	seq, at := s.cat.begin(s.now())
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var all []json.RawMessage
	cursor := ""
	size := 0
	for pages := 1; ; pages++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		if meta := s.ownMeta(); meta != nil {
			params["_meta"] = meta
		}
		r, err := s.request(ctx, s.server, "tools/list", params)
		if err != nil {
			return err
		}
		page, err := readToolsPage(r.Result)
		if err != nil {
			return err
		}
		all = append(all, page.Tools...)
		for _, t := range page.Tools {
			size += len(t)
		}
		switch {
		case len(all) > maxListTools:
			return fmt.Errorf("the server lists more than %d tools", maxListTools)
		case size > maxListBytes:
			return fmt.Errorf("the server's tools take more than %d bytes", maxListBytes)
		case page.NextCursor == nil || *page.NextCursor == "":
			s.storeOwnList(all, seq, at)
			return nil
		case pages >= maxListPages:
			return fmt.Errorf("the server's tool list has more than %d pages", maxListPages)
		}
		cursor = *page.NextCursor
	}
}

// storeOwnList keeps the tools of the proxy's own tools/list (listing
// seq, begun at) that parse. No client sees that list, so each tool is
// screened as a listing would (which pins a tool seen first and records a
// changed definition for acceptance, when the server pins them).
func (s *session) storeOwnList(raws []json.RawMessage, seq uint64, at time.Time) {
	tools, kept, refused := readTools(raws)
	for _, r := range refused {
		s.log.Warn("a tool of the server's list cannot be read; it is neither listed nor callable", "tool", r)
	}
	for _, t := range tools {
		s.listed(t)
	}
	s.storeList(tools, kept, seq, at)
}

// storeList keeps a complete list of listing seq, begun at, and re-checks
// the config against it when its tools changed.
func (s *session) storeList(tools []decision.Tool, kept []json.RawMessage, seq uint64, at time.Time) {
	if !s.cat.set(tools, kept, s.opts.Engine.Revision(), seq, at) {
		return
	}
	s.checkTools(kept)
}

// checkTools checks the config against the tools and logs the warnings.
func (s *session) checkTools(tools []json.RawMessage) {
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
		s.checkTools(list)
	}
}

// recheck lists the tools again after notifications/tools/list_changed.
func (s *session) recheck() {
	if err := s.listTools(s.ctx, s.cat.need(false, 0, s.now())); err != nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("listing the tools after list_changed failed", "err", err)
	}
}

// filterToolsList drops from a tools/list answer the tools the policy
// hides, those whose definition is not the pinned one, and those the proxy
// cannot read (readTools) and, with PublishClosedSchemas, closes the input
// schemas, with PublishRules adds the argument rules to them. A complete answer (no
// cursor asked, none given) to the client's request p also becomes the
// catalog, as the listing p began. Everything else in
// the answer is kept as the server sent it. A result that does not decode
// strictly is an error: it is never passed on unfiltered.
func (s *session) filterToolsList(m *jsonrpc.Response, p *pending) (*jsonrpc.Response, error) {
	page, err := readToolsPage(m.Result)
	if err != nil {
		return nil, err
	}
	var res map[string]json.RawMessage
	if err := strictjson.Unmarshal(m.Result, &res); err != nil {
		return nil, err
	}
	tools, raws, refused := readTools(page.Tools)
	for _, r := range refused {
		s.log.Warn("a tool of the server's list cannot be read; it is neither listed nor callable", "tool", r)
	}
	if p.complete && (page.NextCursor == nil || *page.NextCursor == "") {
		s.storeList(tools, raws, p.listSeq, p.listAt)
	}
	kept := make([]json.RawMessage, 0, len(tools))
	for i, t := range tools {
		if !s.listed(t) {
			continue
		}
		raw := raws[i]
		if s.opts.PublishClosedSchemas {
			if closed, err := closeTool(raw); err == nil {
				raw = closed
			}
		}
		if s.opts.PublishRules {
			raw = s.withRules(t.Name, raw)
		}
		kept = append(kept, raw)
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	res["tools"] = out
	result, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	return &jsonrpc.Response{ID: m.ID, Result: result}, nil
}

// listed asks the policy whether a tool may be listed: not when it is
// hidden (step 1), nor when its definition is not the pinned one (the pin
// check, ToolDefinitionChanged, whether it denies or asks), so the list and
// the gate never disagree. Deciding it pins a tool seen first, when the
// server pins tool definitions.
func (s *session) listed(t decision.Tool) bool {
	ok, why := s.opts.Engine.Listable(s.ctx, s.opts.Server, t)
	if !ok && why != "" {
		s.log.Warn("tool left out of tools/list: its definition is not the pinned one", "tool", t.Name, "why", why)
	}
	return ok
}

// withRules is raw with the argument rules of tool name in its inputSchema
// (publishRules); each rule that cannot be placed is logged. On error the
// tool is listed as the server sent it.
func (s *session) withRules(name string, raw json.RawMessage) json.RawMessage {
	rules := s.opts.Engine.ArgumentRules(s.opts.Server, name)
	if len(rules) == 0 {
		return raw
	}
	out, left, err := publishRules(raw, rules)
	if err != nil {
		s.log.Warn("the argument rules cannot be added to the tool's inputSchema; listed as the server sent it", "tool", name, "err", err)
		return raw
	}
	for _, l := range left {
		s.log.Warn("argument rule left out of the published inputSchema", "tool", name, "rule", l.rule, "why", l.why)
	}
	return out
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
// the unknown-arguments step reads them (docs/check-order.md). It reports whether it
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
