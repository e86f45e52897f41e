package proxy

import (
	"encoding/json"
	"testing"
)

func TestCloseTool(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"top level and nested objects closed",
			`{"name":"w","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"opts":{"type":"object","properties":{"force":{"type":"boolean"}}}}},"x-extra":1}`,
			`{"inputSchema":{"additionalProperties":false,"properties":{"opts":{"additionalProperties":false,"properties":{"force":{"type":"boolean"}},"type":"object"},"path":{"type":"string"}},"type":"object"},"name":"w","x-extra":1}`},
		{"a position taken is kept",
			`{"name":"w","inputSchema":{"type":"object","properties":{"a":{}},"additionalProperties":true}}`,
			`{"name":"w","inputSchema":{"type":"object","properties":{"a":{}},"additionalProperties":true}}`},
		{"patternProperties is a position",
			`{"name":"w","inputSchema":{"type":"object","properties":{"a":{}},"patternProperties":{"^x":{}}}}`,
			`{"name":"w","inputSchema":{"type":"object","properties":{"a":{}},"patternProperties":{"^x":{}}}}`},
		{"no properties, nothing to close",
			`{"name":"w","inputSchema":{"type":"object"}}`,
			`{"name":"w","inputSchema":{"type":"object"}}`},
		{"big numbers stay exact",
			`{"name":"w","inputSchema":{"type":"object","properties":{"n":{"maximum":12345678901234567890}}}}`,
			`{"inputSchema":{"additionalProperties":false,"properties":{"n":{"maximum":12345678901234567890}},"type":"object"},"name":"w"}`},
	}
	for _, c := range cases {
		got, err := closeTool(json.RawMessage(c.in))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestNoteInitialize(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		`{"capabilities":{}}`:                                   false,
		`{"capabilities":{"elicitation":{}}}`:                   true,
		`{"capabilities":{"elicitation":{"form":{}}}}`:          true,
		`{"capabilities":{"elicitation":{"url":{}}}}`:           false,
		`{"capabilities":{"elicitation":{"form":{},"url":{}}}}`: true,
	}
	for params, want := range cases {
		s := &session{}
		s.noteInitialize(json.RawMessage(params))
		if s.elicit != want {
			t.Errorf("%s: elicit %v; want %v", params, s.elicit, want)
		}
	}
}
