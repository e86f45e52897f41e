package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/strictjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestDecodeFrame(t *testing.T) {
	t.Parallel()
	ok := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","Name":"b"}}`, // params are read later, per method
		`{"jsonrpc":"2.0","id":"x","method":"ping"}`,
		`{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping","params":null}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}`, // dropped when passed on, as JSON-RPC defines no other member
	}
	for _, f := range ok {
		if _, err := decodeFrame([]byte(f)); err != nil {
			t.Errorf("decodeFrame(%s) = %v; want it accepted", f, err)
		}
	}
	id7, _ := jsonrpc.MakeID(float64(7))
	cases := []struct {
		frame   string
		id      jsonrpc.ID // the id a refusal can be answered with
		request bool
		want    string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"a","method":"b"}`, id7, true, `duplicate key "method"`},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"p":1,"p":2}}}`, id7, true, `duplicate key "p" (at /params/arguments)`},
		{`{"jsonrpc":"2.0","id":7,"Method":"tools/call"}`, id7, true, `key "Method" is not "method"`},
		{`{"jsonrpc":"2.0","id":7,"method":"x","Params":{}}`, id7, true, `key "Params" is not "params"`},
		{`{"jsonrpc":"2.0","id":7,"method":"x","result":{}}`, id7, true, `a request has no "result"`},
		{`{"jsonrpc":"2.0","id":7,"method":"x","params":[1]}`, id7, true, `"params" must be an object`},
		{`{"jsonrpc":"2.0","id":7,"method":""}`, id7, true, `"method" must not be empty`},
		{`{"jsonrpc":"2.0","id":7,"result":{},"error":{"code":1,"message":"m"}}`, id7, false, `exactly one of "result" and "error"`},
		{`{"jsonrpc":"2.0","id":7}`, id7, false, `exactly one of "result" and "error"`},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1.5,"message":"m"}}`, id7, false, `"code" must be an integer`},
		{`{"jsonrpc":"2.0","id":7,"error":{"Code":1,"code":1,"message":"m"}}`, id7, false, `key "Code" is not "code"`},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1}}`, id7, false, `needs a "code" and a "message"`},
		{`{"id":7,"method":"x"}`, id7, true, `"jsonrpc" must be "2.0"`},
		{`{"jsonrpc":"2.0","id":7,"method":"x"} x`, id7, true, `trailing data`},
		// Ids readers disagree on, or an id given twice, cannot be
		// answered.
		{`{"jsonrpc":"2.0","id":1.5,"method":"x"}`, jsonrpc.ID{}, true, `not an integer`},
		{`{"jsonrpc":"2.0","id":1e2,"method":"x"}`, jsonrpc.ID{}, true, `not an integer`},
		{`{"jsonrpc":"2.0","id":9007199254740992,"method":"x"}`, jsonrpc.ID{}, true, `not an integer`},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, jsonrpc.ID{}, true, `must be a string or an integer`},
		{`{"jsonrpc":"2.0","id":[1],"method":"x"}`, jsonrpc.ID{}, true, `must be a string or an integer`},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, jsonrpc.ID{}, false, `must be a string or an integer`},
		{`{"jsonrpc":"2.0","id":7,"id":8,"method":"x"}`, jsonrpc.ID{}, false, `duplicate key "id"`},
		{`{"jsonrpc":"2.0","id":7,"ID":8,"method":"x"}`, jsonrpc.ID{}, false, `key "ID" is not "id"`},
		{`[{"jsonrpc":"2.0","id":7,"method":"x"}]`, jsonrpc.ID{}, false, `batches are not supported`},
		{`{"jsonrpc":"2.0","id":7,"method":`, jsonrpc.ID{}, false, `unexpected end`},
	}
	for _, c := range cases {
		_, err := decodeFrame([]byte(c.frame))
		var fe *FrameError
		if !errors.As(err, &fe) {
			t.Errorf("decodeFrame(%s) = %v; want a *FrameError", c.frame, err)
			continue
		}
		if fe.ID != c.id || fe.Request != c.request || !strings.Contains(fe.Err.Error(), c.want) {
			t.Errorf("decodeFrame(%s) = {id %v, request %v, %v}; want {id %v, request %v, %q}", c.frame, fe.ID.Raw(), fe.Request, fe.Err, c.id.Raw(), c.request, c.want)
		}
	}
}

func TestReadToolCallAndWire(t *testing.T) {
	t.Parallel()
	c, err := readToolCall([]byte(`{"name":"w","arguments":{"path":"/a","Path":"/b","n":12345678901234567890.0},"_meta":{"k":[1,2]},"task":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.wire()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"_meta":{"k":[1,2]},"arguments":{"Path":"/b","n":12345678901234567890.0,"path":"/a"},"name":"w","task":{}}`
	if string(raw) != want {
		t.Errorf("wire = %s; want %s", raw, want)
	}
	for params, wantWire := range map[string]string{
		`{"name":"w"}`:                  `{"name":"w"}`,
		`{"name":"w","arguments":null}`: `{"name":"w"}`,
		`{"name":"w","arguments":{}}`:   `{"arguments":{},"name":"w"}`,
		`{"name":"w\u0041","x":"<&>"}`:  `{"name":"wA","x":"<&>"}`,
	} {
		c, err := readToolCall([]byte(params))
		if err != nil {
			t.Errorf("%s: %v", params, err)
			continue
		}
		if raw, _ := c.wire(); string(raw) != wantWire {
			t.Errorf("%s: wire %s; want %s", params, raw, wantWire)
		}
	}
	refused := map[string]string{
		`{"name":"w","Name":"r"}`:                      `key "Name" is not "name"`,
		`{"name":"w","arguments":{},"ARGUMENTS":{}}`:   `key "ARGUMENTS" is not "arguments"`,
		`{"name":"w","arguments":{"a":1,"a":1}}`:       `duplicate key "a"`,
		`{"arguments":{}}`:                             `a tool "name" (a non-empty string) is required`,
		`{"name":""}`:                                  `a tool "name" (a non-empty string) is required`,
		`{"name":5}`:                                   `cannot unmarshal number`,
		`{"name":"w","arguments":{"a":{"b":1,"b":2}}}`: `duplicate key "b"`,
	}
	for params, want := range refused {
		if _, err := readToolCall([]byte(params)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("readToolCall(%s) = %v; want %q", params, err, want)
		}
	}
	if c, err := readToolCall([]byte(`{"name":"w","arguments":[1]}`)); !errors.Is(err, errArgsNotObject) || c.Name != "w" {
		t.Errorf("array arguments: %v %v; want errArgsNotObject with the name", c, err)
	}
}

// TestDecodeFrameAsTheSDK: the message decodeFrame makes from its one
// strict reading is the one jsonrpc.DecodeMessage makes of the frame, and
// is written back the same, over every combination of the members' forms.
func TestDecodeFrameAsTheSDK(t *testing.T) {
	t.Parallel()
	ids := []string{``, `"id":1`, `"id":-7`, `"id":9007199254740991`, `"id":"a"`, `"id":""`, `"id":"\u00e9\n"`, `"id":0`}
	var frames []string
	for _, id := range ids {
		sep := ""
		if id != "" {
			sep = ","
		}
		for _, params := range []string{``, `,"params":null`, `,"params":{}`, `,"params":{"name":"t","arguments":{"a":[1,2.5e3,"\u2028"],"b":null},"_meta":{"x":true}}`} {
			for _, method := range []string{`"tools/call"`, `"notifications/x"`, `"m\u00e9"`} {
				frames = append(frames, `{"jsonrpc":"2.0"`+sep+id+`,"method":`+method+params+`}`)
				frames = append(frames, `{`+id+sep+`"method":`+method+params+`,"jsonrpc":"2.0"}`)
			}
		}
		if id == "" {
			continue
		}
		for _, result := range []string{`null`, `{}`, `[]`, `"x"`, `1`, `{"content":[{"type":"text","text":"a\"b<>&"}],"isError":false}`} {
			frames = append(frames, `{"jsonrpc":"2.0",`+id+`,"result":`+result+`}`)
		}
		for _, e := range []string{`{"code":-32602,"message":"bad"}`, `{"code":1,"message":"","data":null}`, `{"message":"m","code":0,"data":{"k":[1]}}`, `{"code":-32603,"message":"x","data":"s"}`} {
			frames = append(frames, `{"jsonrpc":"2.0",`+id+`,"error":`+e+`}`)
		}
	}
	for _, f := range frames {
		ours, err := decodeFrame([]byte(f))
		sdk, sdkErr := jsonrpc.DecodeMessage([]byte(f))
		if err != nil || sdkErr != nil {
			if err == nil {
				t.Errorf("%s: decodeFrame took it, the SDK refused it: %v", f, sdkErr)
			}
			continue
		}
		a, errA := jsonrpc.EncodeMessage(ours)
		b, errB := jsonrpc.EncodeMessage(sdk)
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Errorf("%s:\n ours %s (%v)\n  sdk %s (%v)", f, a, errA, b, errB)
		}
		if !reflect.DeepEqual(ours, sdk) {
			t.Errorf("%s: decoded\n ours %#v\n  sdk %#v", f, ours, sdk)
		}
	}
}

// FuzzDecodeFrameAsTheSDK: whatever the bytes, a frame decodeFrame takes
// is one jsonrpc.DecodeMessage takes too, decoded to the same message and
// written back the same.
//
//	go test ./internal/proxy/ -run '^$' -fuzz FuzzDecodeFrameAsTheSDK
func FuzzDecodeFrameAsTheSDK(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,"\u00e9"]}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":null}`,
		`{"jsonrpc":"2.0","id":"x","result":null}`,
		`{"jsonrpc":"2.0","id":-3,"error":{"code":-32602,"message":"m","data":{"k":1}}}`,
		`{"id":9007199254740991,"result":{"a":"<&>"},"jsonrpc":"2.0"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		ours, err := decodeFrame(frame)
		if err != nil {
			return
		}
		sdk, err := jsonrpc.DecodeMessage(frame)
		if err != nil {
			t.Fatalf("%s: decodeFrame took it, the SDK refused it: %v", frame, err)
		}
		a, errA := jsonrpc.EncodeMessage(ours)
		b, errB := jsonrpc.EncodeMessage(sdk)
		if errA != nil || errB != nil || string(a) != string(b) {
			t.Fatalf("%s:\n ours %s (%v)\n  sdk %s (%v)", frame, a, errA, b, errB)
		}
		if !reflect.DeepEqual(ours, sdk) {
			t.Fatalf("%s: decoded\n ours %#v\n  sdk %#v", frame, ours, sdk)
		}
	})
}

// TestReadToolCallAsTheStruct: readToolCall reads every params as the
// strict decoding of callParams does (readToolCallStruct) — the same name,
// arguments, members and refusal — over combinations of names, case
// variants (ASCII and not: "ſ" folds to "s", "K" to "k"), argument forms
// and other members.
func TestReadToolCallAsTheStruct(t *testing.T) {
	t.Parallel()
	names := []string{``, `"name":"w"`, `"name":""`, `"name":null`, `"name":5`, `"name":"\u0077"`, `"name":{"a":1}`}
	args := []string{``, `"arguments":null`, `"arguments":{}`, `"arguments":[1]`, `"arguments":"x"`,
		`"arguments":{"path":"/a","Path":"/b","n":1.50,"big":12345678901234567890,"s":"\ud83d\ude00\u00e9","o":{"k":[true,null]}}`,
		`"arguments":{"a":1,"a":2}`}
	others := []string{``, `"Name":"r"`, `"NAME":"r"`, `"ARGUMENTS":{}`, `"argumentſ":{}`, `"nameſ":1`, `"_meta":{"k":[1,2]}`,
		`"task":{"ttl":5}`, `"é":1`, `"na\u006de":"x"`, `"\u004eame":"x"`}
	for _, n := range names {
		for _, a := range args {
			for _, o := range others {
				var parts []string
				for _, p := range []string{n, a, o} {
					if p != "" {
						parts = append(parts, p)
					}
				}
				params := []byte("{" + strings.Join(parts, ",") + "}")
				got, gotErr := readToolCall(params)
				want, wantErr := readToolCallStruct(params)
				if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
					t.Errorf("%s: error %v; the struct's %v", params, gotErr, wantErr)
					continue
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %#v; the struct's %#v", params, got, want)
				}
			}
		}
	}
}

// FuzzReadToolCallAsTheStruct: over any params, readToolCall and the
// strict decoding of callParams agree — both refuse, or both read the same
// name, arguments and members; for params that are a valid object (the
// only params a checked tools/call frame carries), with the same refusal.
func FuzzReadToolCallAsTheStruct(f *testing.F) {
	for _, s := range []string{`{"name":"w","arguments":{"a":[1,2.50,{"b":null}]},"_meta":{"k":"v"}}`, `{"Name":"w"}`,
		`{"name":"w","argumentſ":{}}`, `{"name":5}`, `null`, `{"name":"w","arguments":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		got, gotErr := readToolCall(params)
		want, wantErr := readToolCallStruct(params)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%s: error %v; the struct's %v", params, gotErr, wantErr)
		}
		object := bytes.HasPrefix(bytes.TrimLeft(params, " \t\r\n"), []byte("{")) && strictjson.Valid(params) == nil
		if gotErr != nil && object && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v; the struct's %v", params, gotErr, wantErr)
		}
		if (gotErr == nil || errors.Is(gotErr, errArgsNotObject)) && !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %#v; the struct's %#v", params, got, want)
		}
	})
}

// unmarshalEnvelope is the envelope as strictjson.Unmarshal reads it: what
// readEnvelope must read.
func unmarshalEnvelope(raw []byte) (envelope, error) {
	var env envelope
	err := strictjson.Unmarshal(raw, &env)
	return env, err
}

// TestReadEnvelopeAsUnmarshal: readEnvelope reads every frame as
// strictjson.Unmarshal reads it into the envelope — the same members
// (their bytes as written), the same refusal — over combinations of the
// members' forms: strings escaped or not, null, other types, case variants
// (ASCII and not: "ſ" folds to "s", "K" to "k"), other members, and
// frames that are no object or not strict.
func TestReadEnvelopeAsUnmarshal(t *testing.T) {
	t.Parallel()
	versions := []string{``, `"jsonrpc":"2.0"`, `"jsonrpc":"2\u002e0"`, `"jsonrpc":null`, `"jsonrpc":2`, `"jsonrpc":"1.0"`, `"jsonrpc" : "2.0" `}
	ids := []string{``, `"id":1`, `"id":"a\"b"`, `"id":null`, `"id":1.5`, `"id":[1]`}
	bodies := []string{``, `"method":"tools/call"`, `"method":"m\u00e9"`, `"method":null`, `"method":{}`, `"method":""`,
		`"params":{"name":"t","arguments":{"a":[1,2.5e3]}}`, `"params":null`, `"params":[ 1 ]`,
		`"result":{"content":[{"type":"text","text":"x"}]}`, `"result":null`, `"error":{"code":1,"message":"m"}`,
		`"method":"x","params":{}`, `"result":1,"error":null`}
	others := []string{``, `"ID":2`, `"Method":"x"`, `"jsonRPC":"2.0"`, `"paramſ":{}`, `"resulK":1`, `"é":1`, `"extra":{"k":[1]}`,
		`"\u0069d":3`, `"id":4`}
	var frames []string
	for _, v := range versions {
		for _, id := range ids {
			for _, b := range bodies {
				for _, o := range others {
					var parts []string
					for _, p := range []string{v, id, b, o} {
						if p != "" {
							parts = append(parts, p)
						}
					}
					frames = append(frames, "{"+strings.Join(parts, ",")+"}")
				}
			}
		}
	}
	frames = append(frames, ``, ` `, `null`, `[]`, `[{"jsonrpc":"2.0"}]`, `"x"`, `1`, `{"jsonrpc":"2.0"} x`, `{"jsonrpc":"2.0",}`,
		`{"a":"\ud800"}`, "{\"a\":\"\xff\"}", ` {"jsonrpc":"2.0","id":1,"result":{}} `, `{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}`)
	for _, f := range frames {
		got, gotErr := readEnvelope([]byte(f))
		want, wantErr := unmarshalEnvelope([]byte(f))
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: error %v; Unmarshal's %v", f, gotErr, wantErr)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %s; Unmarshal's %s", f, showEnvelope(got), showEnvelope(want))
		}
	}
}

// FuzzReadEnvelopeAsUnmarshal: whatever the bytes, readEnvelope and
// strictjson.Unmarshal into the envelope agree: the same members, or the
// same refusal.
//
//	go test ./internal/proxy/ -run '^$' -fuzz FuzzReadEnvelopeAsUnmarshal
func FuzzReadEnvelopeAsUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,"\u00e9"]}}}`,
		`{"jsonrpc":"2\u002e0","method":null,"ID":1}`,
		`{"jsonrpc":2,"id":"x","result":null,"paramſ":1}`,
		`{"id":9007199254740991,"result":{"a":"<&>"},"jsonrpc":"2.0"}`,
		`[1]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		got, gotErr := readEnvelope(frame)
		want, wantErr := unmarshalEnvelope(frame)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%s: error %v; Unmarshal's %v", frame, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %s; Unmarshal's %s", frame, showEnvelope(got), showEnvelope(want))
		}
	})
}

func showEnvelope(e envelope) string {
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return strconv.Quote(*p)
	}
	raw := func(r json.RawMessage) string {
		if r == nil {
			return "<nil>"
		}
		return string(r)
	}
	return fmt.Sprintf("{jsonrpc %s id %s method %s params %s result %s error %s}",
		str(e.JSONRPC), raw(e.ID), str(e.Method), raw(e.Params), raw(e.Result), raw(e.Error))
}

// TestReadTaskHandleAsTheStruct: readTaskHandle reads every tools/call
// result as the strict decoding of taskHandle does — the same task, or
// none, or the same refusal — over combinations of resultType and task
// forms, case variants (ASCII and not: "ſ" folds to "s", "K" to "k") and
// other members, and results that are no object or not strict.
func TestReadTaskHandleAsTheStruct(t *testing.T) {
	t.Parallel()
	task := `{"taskId":"t1","status":"working","ttl":60000}`
	types := []string{``, `"resultType":"task"`, `"resultType":"t\u0061sk"`, `"resultType":"complete"`, `"resultType":null`, `"resultType":5`,
		`"resultType":"task","taskId":"t2","status":"working"`, `"resultType":"task","taskId":""`}
	tasks := []string{``, `"task":` + task, `"task":null`, `"task":{"taskId":"t1"}`, `"task":{"taskId":"t1","TaskId":"t2","status":"x"}`, `"task":"x"`}
	others := []string{``, `"content":[{"type":"text","text":"a\nb"}],"isError":false`, `"ResultType":"task"`, `"TASK":{}`,
		`"tasK":1`, `"resultTypeſ":1`, `"é":1`, `"structuredContent":{"task":{"taskId":"no"}}`}
	var results []string
	for _, ty := range types {
		for _, tk := range tasks {
			for _, o := range others {
				var parts []string
				for _, p := range []string{ty, tk, o} {
					if p != "" {
						parts = append(parts, p)
					}
				}
				results = append(results, "{"+strings.Join(parts, ",")+"}")
			}
		}
	}
	results = append(results, `null`, `[]`, `"x"`, `{"task":1,"task":2}`, `{"a":"\ud800"}`, ` {"task":`+task+`} `)
	for _, r := range results {
		st, isTask, err := readTaskHandle([]byte(r))
		wst, wantTask, wantErr := readTaskHandleStruct([]byte(r))
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Errorf("%s: error %v; the struct's %v", r, err, wantErr)
			continue
		}
		if isTask != wantTask || !reflect.DeepEqual(st, wst) {
			t.Errorf("%s: task %v %+v; the struct's %v %+v", r, isTask, st, wantTask, wst)
		}
	}
}
