package mcpxpolicy

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/config"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

func catalogTool(cat *config.Catalog, server, name string) (decision.Tool, bool) {
	raw, ok := cat.Tool(server, name)
	if !ok {
		return decision.Tool{}, false
	}
	t, err := ParseTool(raw)
	return t, err == nil
}

// CallDocument is one call as JSON: the call file of `mcpx-policy eval` and
// the body of serve's POST /v1/decide. Tool is an MCP Tool object, or a
// tool name looked up in the Engine's catalog (ResolveTool).
type CallDocument struct {
	Server    string              `json:"server"`
	Tool      json.RawMessage     `json:"tool"`
	Args      map[string]any      `json:"args"`
	Surface   string              `json:"surface,omitempty"`
	Principal *decision.Principal `json:"principal,omitempty"`
	Mode      string              `json:"mode,omitempty"`
	// Approval is the id of an approval request for this exact call: the
	// decision uses it once (Engine.DecideApproved). Optional.
	Approval string `json:"approval,omitempty"`
	// Time, Decision and Redacted are what a recording adds (serve and
	// proxy --record, docs/rollout.md): when the call was decided, how,
	// and the JSON Pointers of the arguments redacted before it was
	// written. Deciding the call ignores them; `mcpx-policy replay`
	// compares its decision with Decision.
	Time     string            `json:"time,omitempty"`
	Decision *RecordedDecision `json:"decision,omitempty"`
	Redacted []string          `json:"redacted,omitempty"`
}

// Call is the document's call without its tool, which ResolveTool reads.
func (d CallDocument) Call() decision.Call {
	return decision.Call{Server: d.Server, Args: d.Args, Surface: d.Surface, Principal: d.Principal, Mode: d.Mode}
}

// ResolveTool reads the "tool" of a call document: an MCP Tool object, or a
// tool name looked up in the Engine's catalog (Options.Catalog). The error
// says which of the three went wrong: missing, not in the catalog, or
// neither a name nor a Tool.
func (e *Engine) ResolveTool(server string, raw json.RawMessage) (decision.Tool, error) {
	var name string
	switch {
	case len(raw) == 0:
		return decision.Tool{}, errors.New(`"tool" is missing`)
	case json.Unmarshal(raw, &name) == nil:
		t, ok := e.ToolFromCatalog(server, name)
		if !ok {
			return decision.Tool{Name: name}, fmt.Errorf("tool %q of server %q is not in the catalog", name, server)
		}
		return t, nil
	default:
		t, err := ParseTool(raw)
		if err != nil {
			return decision.Tool{}, fmt.Errorf(`"tool" is neither a name nor an MCP Tool: %w`, err)
		}
		return t, nil
	}
}

// ParseTool reads an MCP Tool from JSON strictly (docs/proxy.md, "Strict
// decoding"): a duplicate key anywhere, a key that differs from "name",
// "description", "annotations", "inputSchema", "outputSchema" or a hint's
// name only by case, a hint that
// is not a boolean, invalid UTF-8 or trailing data is an error; so is a
// description that is not a string or an outputSchema that is not an
// object (a pinned definition covers both: ToolSHA256). Fields the policy
// does not read (title, _meta…) pass.
// Numbers in the inputSchema stay exact (json.Number).
func ParseTool(raw []byte) (decision.Tool, error) {
	var t decision.Tool
	err := strictjson.Unmarshal(raw, &t)
	return t, err
}

// ToolError is the error DecodeCall returns when the document's "tool" is
// missing, not in the catalog, or neither a name nor an MCP Tool; adapters
// add their own hint to it.
type ToolError struct{ Err error }

// Error returns the cause's text.
func (e *ToolError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *ToolError) Unwrap() error { return e.Err }

// DecodeCall reads a call document — the call file of `mcpx-policy eval`,
// the body of serve's POST /v1/decide — strictly: exact key names (a case
// variant of a field is refused, as is any field CallDocument does not
// have), no duplicate key anywhere (the arguments included), valid UTF-8,
// nothing after the object; numbers stay as written. The tool is resolved
// with ResolveTool (a *ToolError when that fails). approval is the
// document's "approval" ("" when absent). On error the returned call holds
// the server and tool name when they could be read, for the deny. Safe for
// concurrent use.
func (e *Engine) DecodeCall(raw []byte) (call decision.Call, approval string, err error) {
	call, doc, err := e.DecodeDocument(raw)
	return call, doc.Approval, err
}

// DecodeDocument is DecodeCall that also returns the whole document: a
// recorded call's Time, Decision and Redacted, for replay. On a strict
// decoding error the document is empty.
func (e *Engine) DecodeDocument(raw []byte) (decision.Call, CallDocument, error) {
	var doc CallDocument
	if err := strictjson.UnmarshalKnown(raw, &doc); err != nil {
		return decision.Call{}, CallDocument{}, err
	}
	call := doc.Call()
	t, err := e.ResolveTool(doc.Server, doc.Tool)
	call.Tool = t
	if err != nil {
		return call, doc, &ToolError{Err: err}
	}
	return call, doc, nil
}
