package render

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcpx/mcpx-policy/internal/decision"
)

// RiderKey is the key of the warn rider (SPEC §3).
const RiderKey = "_ignored_options"

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
	r := newRedactor()
	out := make([]string, 0, len(ignored))
	for i, k := range ignored {
		if i == maxRiderKeys {
			out = append(out, fmt.Sprintf("…+%d more", len(ignored)-maxRiderKeys))
			break
		}
		out = append(out, r.key(k))
	}
	return out
}

// Rider is the rider's object: {"_ignored_options": [keys…]}. It is both
// the text of the content item (as compact JSON) and what is merged into
// structuredContent.
func Rider(ignored []string) map[string]any {
	return map[string]any{RiderKey: riderKeys(ignored)}
}

// RiderContent is the text content item the rider appends:
// {"type":"text","text":"{\"_ignored_options\":[…]}"}.
func RiderContent(ignored []string) Content {
	return Content{Type: "text", Text: jsonText(Rider(ignored))}
}

// AddRider adds the warn rider to a successful tools/call result (its JSON,
// as the server returned it): the RiderContent item appended to "content",
// and "_ignored_options" set in "structuredContent" — created as
// {"_ignored_options": […]} when absent or null, added to it when it is an
// object (replacing a key of that name), left alone when it is anything
// else. Every other field is kept byte for byte. A result with
// "isError": true, or an empty ignored list, is returned unchanged. It
// fails only when result is not a JSON object.
func AddRider(result json.RawMessage, ignored []string) (json.RawMessage, error) {
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
	keys := riderKeys(ignored)
	var content []json.RawMessage
	if raw, ok := obj["content"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
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
	sc, ok := obj["structuredContent"]
	switch trimmed := bytes.TrimSpace(sc); {
	case !ok || bytes.Equal(trimmed, []byte("null")):
		obj["structuredContent"], _ = json.Marshal(map[string]json.RawMessage{RiderKey: keysJSON})
	case len(trimmed) > 0 && trimmed[0] == '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &m); err != nil {
			return nil, fmt.Errorf("render: rider: structuredContent: %w", err)
		}
		m[RiderKey] = keysJSON
		obj["structuredContent"], _ = json.Marshal(m)
	}
	return json.Marshal(obj)
}
