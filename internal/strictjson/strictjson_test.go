package strictjson_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/strictjson"
)

func TestValid(t *testing.T) {
	t.Parallel()
	ok := []string{
		`{}`, `[]`, `0`, `-0.5e+3`, `"x"`, `true`, `null`, ` {"a":1} `,
		`{"a":{"a":1},"b":[{"a":1},{"a":2}]}`, // the same key in different objects
		`{"path":1,"Path":2}`,                 // case variants are distinct keys outside structs
		`"\ud83d\ude00"`, `"é\u00e9"`, `{"a":"\/"}`,
		`12345678901234567890123456789`,
	}
	for _, s := range ok {
		if err := strictjson.Valid([]byte(s)); err != nil {
			t.Errorf("Valid(%s) = %v; want nil", s, err)
		}
	}
	bad := map[string]string{
		`{"a":1,"a":2}`:                `duplicate key "a"`,
		`{"a":1,"\u0061":2}`:           `duplicate key "a"`,
		`{"x":{"args":{"p":1,"p":2}}}`: `duplicate key "p" (at /x/args)`,
		`[{"a":[{"k":1,"k":1}]}]`:      `duplicate key "k" (at /0/a/0)`,
		`{"a\"b":{"x":1,"x":2}}`:       `duplicate key "x" (at /a"b)`,
		`{"a\u002fb":[{"~":1,"~":2}]}`: `duplicate key "~" (at /a~1b/0)`,
		`{"a":1} {"a":2}`:              `trailing data`,
		`{"a":1}x`:                     `trailing data`,
		"\"a\xffb\"":                   `invalid UTF-8`,
		"{\"a\xc0\":1}":                `invalid UTF-8`,
		`"\ud800"`:                     `lone surrogate \ud800`,
		`"\udc00\ud800"`:               `lone surrogate \udc00`,
		`"\ud800\u0041"`:               `lone surrogate \ud800`,
		"\"a\nb\"":                     `control character 0x0a`,
		`01`:                           `trailing data`,
		`1.`:                           `invalid number`,
		`-`:                            `invalid number`,
		`+1`:                           `invalid character`,
		`{"a" 1}`:                      `want ':'`,
		`{"a":1,}`:                     `want a string key`,
		`[1,]`:                         `invalid character ']'`,
		`"\x"`:                         `invalid escape`,
		`"\u12"`:                       `invalid \u escape`,
		``:                             `unexpected end`,
		`tru`:                          `invalid literal`,
		"\xef\xbb\xbf{}":               `invalid character byte 0xef`,
		strings.Repeat("[", 1001) + strings.Repeat("]", 1001): `nesting deeper than 1000`,
	}
	for s, want := range bad {
		err := strictjson.Valid([]byte(s))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "json: ") {
			t.Errorf("Valid(%q) = %v; want an error with %q", s, err, want)
		}
	}
}

func TestParseKeepsNumbersAsWritten(t *testing.T) {
	t.Parallel()
	v, err := strictjson.Parse([]byte(`{"big":12345678901234567890,"f":1.10,"e":1E400,"a":[0,-0]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"big": json.Number("12345678901234567890"), "f": json.Number("1.10"), "e": json.Number("1E400"),
		"a": []any{json.Number("0"), json.Number("-0")},
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("Parse = %#v; want %#v", v, want)
	}
}

type annotations struct {
	ReadOnly *bool `json:"readOnlyHint,omitempty"`
}

type tool struct {
	Name        string          `json:"name"`
	Annotations *annotations    `json:"annotations,omitempty"`
	Schema      map[string]any  `json:"inputSchema,omitempty"`
	Raw         json.RawMessage `json:"raw,omitempty"`
	Skip        string          `json:"-"`
	Untagged    int
}

type page struct {
	Tools  []tool          `json:"tools"`
	ByName map[string]tool `json:"byName"`
	embedded
}

type embedded struct {
	Cursor string `json:"nextCursor"`
}

func TestUnmarshalRefusesCaseVariants(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		`{"name":"a","Name":"b"}`: `key "Name" is not "name"`,
		`{"NAME":"b"}`:            `key "NAME" is not "name"`,
		`{"name":"a","annotations":{"ReadOnlyHint":true}}`:  `key "ReadOnlyHint" is not "readOnlyHint": keys are case-sensitive (at /annotations)`,
		`{"name":"a","inputschema":{}}`:                     `key "inputschema" is not "inputSchema"`,
		`{"name":"a","untagged":1}`:                         `key "untagged" is not "Untagged"`,
		`{"name":"a","inputSchema":{"p":1,"p":2}}`:          `duplicate key "p" (at /inputSchema)`,
		`{"name":"a","raw":{"x":1,"x":1}}`:                  `duplicate key "x" (at /raw)`,
		`{"name":"a","annotations":{"readOnlyHint":"yes"}}`: `cannot unmarshal string`,
		`{"name":"a"} 1`:                                    `trailing data`,
	}
	for s, want := range bad {
		var v tool
		err := strictjson.Unmarshal([]byte(s), &v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Unmarshal(%s) = %v; want an error with %q", s, err, want)
		}
	}
	// Through slices, maps of structs and embedded structs.
	for s, want := range map[string]string{
		`{"tools":[{"name":"a"},{"Name":"b"}]}`: `key "Name" is not "name": keys are case-sensitive (at /tools/1)`,
		`{"byName":{"x":{"NAME":"b"}}}`:         `key "NAME" is not "name": keys are case-sensitive (at /byName/x)`,
		`{"NextCursor":"c"}`:                    `key "NextCursor" is not "nextCursor"`,
		`{"Tools":[]}`:                          `key "Tools" is not "tools"`,
	} {
		var v page
		err := strictjson.Unmarshal([]byte(s), &v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Unmarshal(%s) into page = %v; want an error with %q", s, err, want)
		}
	}
	// Go's own folding: U+017F (long s) and U+212A (Kelvin) match s and k.
	type server struct {
		Server string `json:"server"`
		Kind   string `json:"kind"`
	}
	for _, s := range []string{`{"ſerver":"x"}`, `{"\u212aind":"x"}`} {
		var probe server
		if json.Unmarshal([]byte(s), &probe) != nil || (probe.Server == "" && probe.Kind == "") {
			t.Fatalf("encoding/json no longer matches %s: the test needs another example", s)
		}
		var v server
		if err := strictjson.Unmarshal([]byte(s), &v); err == nil || !strings.Contains(err.Error(), "case-sensitive") {
			t.Errorf("Unmarshal(%s) = %v; want a case-variant refusal", s, err)
		}
	}
}

func TestUnmarshalExact(t *testing.T) {
	t.Parallel()
	var v tool
	in := `{"name":"w","title":"other fields pass","inputSchema":{"Properties":1,"properties":{"n":{"maximum":12345678901234567890}}},"raw":{"Name":1}}`
	if err := strictjson.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	props := v.Schema["properties"].(map[string]any)["n"].(map[string]any)
	if v.Name != "w" || props["maximum"] != json.Number("12345678901234567890") || v.Schema["Properties"] != json.Number("1") {
		t.Fatalf("decoded %+v", v)
	}
	if err := strictjson.UnmarshalKnown([]byte(in), &v); err == nil || !strings.Contains(err.Error(), `unknown field "title"`) {
		t.Errorf("UnmarshalKnown with an unknown field: %v", err)
	}
	var m map[string]any
	if err := strictjson.Unmarshal([]byte(`{"path":"/a","Path":"/b"}`), &m); err != nil || m["path"] != "/a" || m["Path"] != "/b" {
		t.Errorf("map keys differing by case: %v %v; want both kept", m, err)
	}
	if err := strictjson.Unmarshal([]byte(`{}`), v); err == nil {
		t.Error("Unmarshal into a non-pointer succeeded")
	}
}

// FuzzParse holds the parser to encoding/json: whatever it accepts,
// encoding/json accepts too, with the same value; and Valid (which builds
// nothing) accepts exactly what Parse does.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e3,"x\u00e9\ud83d\ude00"],"b":{"c":null,"d":true}}`, `[]`, `"\\\"\/"`, `-0.0E-0`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := strictjson.Parse(data)
		if verr := strictjson.Valid(data); (err == nil) != (verr == nil) {
			t.Fatalf("Parse and Valid disagree on %q: %v, %v", data, err, verr)
		}
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("Parse accepted %q; encoding/json refused: %v", data, err)
		}
		if dec.More() {
			t.Fatalf("Parse accepted %q with more after it", data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(%q) = %#v; encoding/json: %#v", data, got, want)
		}
	})
}

// benchFrame is a tools/call frame of about 1 KiB.
var benchFrame = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/workspace/src/main.go","content":"` +
	strings.Repeat("package main\\n\\nfunc main() {}\\n", 30) + `","options":{"mode":420,"create":true,"tags":["a","b","c"]}},"_meta":{"progressToken":7}}}`)

type benchEnvelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// BenchmarkUnmarshal compares the strict decoding of a frame's envelope
// with encoding/json's.
func BenchmarkUnmarshal(b *testing.B) {
	b.Run("strictjson", func(b *testing.B) {
		b.SetBytes(int64(len(benchFrame)))
		for b.Loop() {
			var env benchEnvelope
			if err := strictjson.Unmarshal(benchFrame, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(benchFrame)))
		for b.Loop() {
			var env benchEnvelope
			if err := json.Unmarshal(benchFrame, &env); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestMembers: Members checks as Valid does and gives the top-level
// object's members as encoding/json stores them in a
// map[string]json.RawMessage: keys unescaped, values as written (nested
// objects' members are not members), in order; nothing for a value that
// is no object.
func TestMembers(t *testing.T) {
	for _, doc := range []string{
		`{}`, ` { "a" : 1 , "b":[ {"c":2} ], "\u0064":"x\"y", "e":{"f":{"g":null}} } `,
		`{"a":"é","B":true,"b":false,"n":-1.5e+3}`,
		`[]`, `null`, `"s"`, `1`, `[{"a":1}]`,
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `{"a":1} x`, `{"a":"\ud800"}`, `{"a":1,}`, ``,
	} {
		var keys []string
		got := map[string]json.RawMessage{}
		isObject, err := strictjson.Members([]byte(doc), func(k string, v []byte) {
			keys = append(keys, k)
			got[k] = v
		})
		if validErr := strictjson.Valid([]byte(doc)); (err == nil) != (validErr == nil) || err != nil && err.Error() != validErr.Error() {
			t.Errorf("%s: error %v; Valid's %v", doc, err, validErr)
			continue
		}
		if err != nil {
			continue
		}
		var want map[string]json.RawMessage
		if !strings.HasPrefix(strings.TrimSpace(doc), "{") {
			if isObject || len(keys) > 0 {
				t.Errorf("%s: an object (%v) with members %q; want none", doc, isObject, keys)
			}
			continue
		}
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			t.Fatal(err)
		}
		if !isObject || !reflect.DeepEqual(got, want) || len(keys) != len(want) {
			t.Errorf("%s: object %v, members %q; want %q", doc, isObject, got, want)
		}
	}
}
