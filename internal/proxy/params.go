package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcpx/mcpx-policy/internal/strictjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The params and results the proxy reads, each decoded strictly
// (strictjson.Unmarshal): a member spelled like one of these fields in
// another case is refused, since the peer reads the exact name. Members the
// proxy does not read pass.

// callParams are the params of a tools/call as the proxy judges them.
type callParams struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// toolCall is a tools/call read for judging: the tool's name, the
// arguments as decided, and the params' members as sent.
type toolCall struct {
	Name    string
	Args    map[string]any
	hasArgs bool // the params carried an arguments object
	members map[string]json.RawMessage
}

// errArgsNotObject is a tools/call whose arguments are neither an object
// nor null: an InvalidInput decision rather than a refused frame.
var errArgsNotObject = errors.New("the arguments are not a JSON object")

// readToolCall decodes tools/call params strictly. A missing or non-string
// name, a case variant of "name" or "arguments", or a duplicate key
// anywhere (the arguments included) is an error; arguments that are not an
// object (nor null) are errArgsNotObject, with the name read.
//
// params are read strictly once, into their members (strictjson.Members:
// each member's bytes as written, as encoding/json would store them, in
// the same pass as the check); the arguments are
// built from their member in one more pass (strictjson.Parse: the values
// encoding/json would make, numbers as written). Params with a key that
// could be a case variant of "name" or "arguments" (one that is not ASCII
// or folds to either), or a name that is not a string, are read as
// readToolCallStruct reads them, for its exact refusal.
func readToolCall(params json.RawMessage) (toolCall, error) {
	var c toolCall
	c.members = make(map[string]json.RawMessage, 4)
	isObj, err := strictjson.Members(params, func(k string, v []byte) { c.members[k] = v })
	if err != nil || !isObj {
		// not an object (null reads as no members), or its refusal
		c.members = nil
		if err := strictjson.Unmarshal(params, &c.members); err != nil {
			return toolCall{}, err
		}
	}
	for k := range c.members {
		if k != "name" && k != "arguments" && (!ascii(k) || strings.EqualFold(k, "name") || strings.EqualFold(k, "arguments")) {
			return readToolCallStruct(params)
		}
	}
	name := c.members["name"]
	if len(name) > 0 && name[0] != '"' && string(name) != "null" {
		return readToolCallStruct(params)
	}
	if len(name) > 0 && name[0] == '"' {
		plain := true
		if n := plainString(name, &plain); plain && n != nil {
			c.Name = *n
		} else if err := json.Unmarshal(name, &c.Name); err != nil {
			return toolCall{}, err
		}
	}
	if c.Name == "" {
		return toolCall{}, errNoName
	}
	return c, c.readArgs(c.members["arguments"])
}

// errNoName is a tools/call without a tool name.
var errNoName = errors.New(`a tool "name" (a non-empty string) is required`)

// readToolCallStruct is readToolCall through the strict decoding of
// callParams, which refuses a case variant of its fields with the
// decoder's own rule.
func readToolCallStruct(params json.RawMessage) (toolCall, error) {
	var p callParams
	if err := strictjson.Unmarshal(params, &p); err != nil {
		return toolCall{}, err
	}
	if p.Name == nil || *p.Name == "" {
		return toolCall{}, errNoName
	}
	c := toolCall{Name: *p.Name}
	if err := json.Unmarshal(params, &c.members); err != nil {
		return toolCall{}, err
	}
	return c, c.readArgs(p.Arguments)
}

// readArgs reads the arguments member: absent or null is no arguments, an
// object is read as encoding/json reads it (numbers as written), anything
// else is errArgsNotObject.
func (c *toolCall) readArgs(raw json.RawMessage) error {
	c.Args = map[string]any{}
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil
	case raw[0] != '{':
		return errArgsNotObject
	}
	v, err := strictjson.Parse(raw)
	if err != nil {
		return err
	}
	c.Args, c.hasArgs = v.(map[string]any), true
	return nil
}

// ascii reports whether s is ASCII: the keys for which a case-insensitive
// comparison is strings.EqualFold.
func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// wire re-encodes the params from what was judged: the name and the
// arguments as decided (numbers as written), every other member (_meta,
// task…) as sent. Arguments that were null are left out, which servers
// read as no arguments, as the policy did.
func (c toolCall) wire() (json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(c.members))
	for k, v := range c.members {
		out[k] = v
	}
	name, err := encode(c.Name)
	if err != nil {
		return nil, err
	}
	out["name"] = name
	delete(out, "arguments")
	if c.hasArgs {
		if out["arguments"], err = encode(c.Args); err != nil {
			return nil, err
		}
	}
	return encode(out)
}

// encode is json.Marshal without HTML escaping.
func encode(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// initializeParams are what the proxy reads of initialize: whether the
// client can answer elicitation/create with a form.
type initializeParams struct {
	Capabilities struct {
		Elicitation map[string]json.RawMessage `json:"elicitation"`
	} `json:"capabilities"`
}

// noteInitialize records whether the client can answer elicitation/create
// with a form: capabilities.elicitation present, empty (form by default)
// or with "form". Params that do not decode strictly are an error.
func (s *session) noteInitialize(params json.RawMessage) error {
	var p initializeParams
	if len(params) > 0 {
		if err := strictjson.Unmarshal(params, &p); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.elicit = formElicitation(p.Capabilities.Elicitation)
	s.elicitURL = urlElicitation(p.Capabilities.Elicitation)
	s.mu.Unlock()
	return nil
}

// hasCursor reads whether tools/list params ask for a page after the
// first.
func hasCursor(params json.RawMessage) (bool, error) {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if len(params) == 0 {
		return false, nil
	}
	if err := strictjson.Unmarshal(params, &p); err != nil {
		return false, err
	}
	return p.Cursor != nil && *p.Cursor != "", nil
}

// cancelledID reads the requestId of notifications/cancelled.
func cancelledID(params json.RawMessage) (jsonrpc.ID, error) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if err := strictjson.Unmarshal(params, &p); err != nil {
		return jsonrpc.ID{}, err
	}
	id, err := readID(p.RequestID)
	if err == nil && !id.IsValid() {
		err = errors.New(`"requestId" is missing`)
	}
	return id, err
}

// elicitResult is the client's answer to the proxy's elicitation/create.
type elicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

// toolsPage is one page of a tools/list result.
type toolsPage struct {
	Tools      []json.RawMessage `json:"tools"`
	NextCursor *string           `json:"nextCursor"`
}

func readToolsPage(result json.RawMessage) (toolsPage, error) {
	var page toolsPage
	if err := strictjson.Unmarshal(result, &page); err != nil {
		return page, fmt.Errorf("not a tools/list result: %w", err)
	}
	if page.Tools == nil {
		return page, errors.New(`not a tools/list result: "tools" is missing`)
	}
	return page, nil
}
