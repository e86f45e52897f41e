package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpx/mcpx-policy/decision"
	"github.com/mcpx/mcpx-policy/internal/redact"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// RiderKey is the key of the warn rider (docs/surfaces.md, "The warn rider").
const RiderKey = "_ignored_options"

// MetaIgnored is the `_meta` key under which AddRider puts the rider's
// keys on every result it adds the rider to.
const MetaIgnored = "mcpx-policy/ignored_options"

// maxRiderKeys is the most ignored keys a rider lists; more are counted.
const maxRiderKeys = 20

// Ignored returns the argument keys d's IgnoredArguments warnings name, in
// order, unredacted: a top-level key by itself, a nested one by its JSON
// Pointer (details "unknown", as the unknown-args step reports them). nil
// when there are none. Keys the step counted but did not list (details
// "more") are summed up in one last element, "…+N more".
func Ignored(d decision.Decision) []string {
	var out []string
	for _, w := range d.Warnings {
		if w.Code == decision.IgnoredArguments {
			names, _, more := unknownArgs(w.Details)
			out = append(out, names...)
			if more > 0 {
				out = append(out, fmt.Sprintf("…+%d more", more))
			}
		}
	}
	return out
}

// riderKeys returns the keys as the rider shows them: secret-shaped keys
// redacted, each cut to MaxKeyChars, at most 20 and then "…+N more".
func riderKeys(ignored []string) []string {
	out := make([]string, 0, len(ignored))
	for i, k := range ignored {
		if i == maxRiderKeys {
			out = append(out, fmt.Sprintf("…+%d more", len(ignored)-maxRiderKeys))
			break
		}
		out = append(out, redact.Key(k))
	}
	return out
}

// Rider is the rider's object: {"_ignored_options": [keys…]}. It is the
// text of the content item (as compact JSON), and what is merged into
// structuredContent where the tool's outputSchema admits it.
func Rider(ignored []string) map[string]any {
	return map[string]any{RiderKey: riderKeys(ignored)}
}

// RiderContent is the text content item the rider appends:
// {"type":"text","text":"{\"_ignored_options\":[…]}"}.
func RiderContent(ignored []string) Content {
	return Content{Type: "text", Text: jsonText(Rider(ignored))}
}

// AddRider adds the warn rider to a successful tools/call result (its JSON,
// as the server returned it), so that every client can still validate it
// (docs/surfaces.md, "The warn rider"):
//   - the RiderContent item is appended to "content";
//   - the keys are set as _meta["mcpx-policy/ignored_options"] (a _meta
//     that is not an object is left alone);
//   - "_ignored_options" is merged into "structuredContent" only when the
//     result has an object there and the merged object still validates
//     against outputSchema (the tool's, as tools/list gave it; nil or
//     JSON null when the tool declares none). A result without
//     structuredContent does not get one: a client that reads
//     structuredContent in place of content would lose the tool's output.
//
// Every other field is kept byte for byte. A result with "isError": true,
// an input_required result (the server asks its client for input; the call
// has not run yet), or an empty ignored list, is returned unchanged. It
// fails only when result is not a JSON object.
func AddRider(result json.RawMessage, ignored []string, outputSchema json.RawMessage) (json.RawMessage, error) {
	if len(ignored) == 0 {
		return result, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(result, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("render: rider: the result is not a JSON object")
	}
	if raw, ok := obj["isError"]; ok {
		var isErr bool
		if json.Unmarshal(raw, &isErr) != nil || isErr {
			return result, nil
		}
	}
	if raw, ok := obj["resultType"]; ok {
		var rt string
		if json.Unmarshal(raw, &rt) != nil || rt != "complete" {
			return result, nil
		}
	}
	keys := riderKeys(ignored)
	var content []json.RawMessage
	if raw, ok := obj["content"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &content); err != nil {
			return nil, fmt.Errorf("render: rider: content is not an array")
		}
	}
	item, err := json.Marshal(RiderContent(ignored))
	if err != nil {
		return nil, err
	}
	content = append(content, item)
	if obj["content"], err = json.Marshal(content); err != nil {
		return nil, err
	}
	keysJSON, err := json.Marshal(keys)
	if err != nil {
		return nil, err
	}
	if merged, ok := mergeObject(obj["structuredContent"], RiderKey, keysJSON); ok && admits(outputSchema, merged) {
		obj["structuredContent"] = merged
	}
	if raw, ok := obj["_meta"]; !ok || isNull(raw) {
		obj["_meta"], _ = json.Marshal(map[string]json.RawMessage{MetaIgnored: keysJSON})
	} else if merged, ok := mergeObject(raw, MetaIgnored, keysJSON); ok {
		obj["_meta"] = merged
	}
	return json.Marshal(obj)
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// mergeObject returns the JSON object raw with key set to value; false
// when raw is not an object.
func mergeObject(raw json.RawMessage, key string, value json.RawMessage) (json.RawMessage, bool) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, false
	}
	m[key] = value
	out, err := json.Marshal(m)
	return out, err == nil
}

// admits reports whether instance validates against the JSON Schema
// schema (2020-12 unless its $schema says otherwise; no remote
// references). No schema admits everything; a schema that does not
// compile admits nothing.
func admits(schema, instance json.RawMessage) bool {
	if len(bytes.TrimSpace(schema)) == 0 || isNull(schema) {
		return true
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return false
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noRemote{})
	const url = "mcpx-policy:outputSchema"
	if err := c.AddResource(url, doc); err != nil {
		return false
	}
	s, err := c.Compile(url)
	if err != nil {
		return false
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		return false
	}
	return s.Validate(v) == nil
}

// noRemote refuses every reference outside the schema itself.
type noRemote struct{}

func (noRemote) Load(url string) (any, error) {
	return nil, errors.New("render: outputSchema: remote reference " + strings.TrimSpace(url) + " is not loaded")
}
