package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpx/mcpx-policy/internal/strictjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FrameError is a frame refused by the strict check (docs/proxy.md,
// "Strict decoding"). ID is the frame's id when it could be read without
// ambiguity, else the zero ID; Request says the frame is a request (one
// "method" was read), which the proxy answers with an error.
type FrameError struct {
	ID      jsonrpc.ID
	Request bool
	Err     error
}

func (e *FrameError) Error() string { return "refused a JSON-RPC frame: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *FrameError) Unwrap() error { return e.Err }

// envelope is a JSON-RPC 2.0 message as the strict check reads it. Other
// members are dropped when the message is passed on (the SDK re-encodes
// the envelope), as JSON-RPC defines none.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// wireError is a JSON-RPC error object.
type wireError struct {
	Code    *json.Number    `json:"code"`
	Message *string         `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// maxSafeID bounds integer ids: every JSON reader (JavaScript's numbers,
// Go's float64 in the SDK) reads integers up to 2^53-1 exactly.
const maxSafeID = 1<<53 - 1

// decodeFrame checks one frame strictly and decodes it. The whole frame
// must be strict JSON (strictjson.Valid: no duplicate key anywhere, valid
// UTF-8, nothing after it); the envelope's members must be spelled exactly
// ("jsonrpc", "id", "method", "params", "result", "error") and well formed:
// version "2.0"; an id a string or an integer of at most 2^53-1; a request
// with a non-empty method, params an object (or null) and no result or
// error; a response with an id and exactly one of result and error. A
// batch (an array) is refused. The message is made from that one strict
// reading, as jsonrpc.DecodeMessage would make it (TestDecodeFrameAsTheSDK):
// a second decoding of every frame cost more than the first.
//
// The message's params, result and error data are sub-slices of raw.
func decodeFrame(raw []byte) (jsonrpc.Message, error) {
	env, err := readEnvelope(raw)
	if err != nil {
		fe := looseFrame(raw)
		fe.Err = err
		if bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
			fe.Err = errors.New("JSON-RPC batches are not supported")
		}
		return nil, fe
	}
	id, idErr := readID(env.ID)
	fe := &FrameError{}
	if idErr == nil {
		fe.ID = id
	}
	fe.Request = env.Method != nil
	refuse := func(format string, args ...any) error {
		fe.Err = fmt.Errorf(format, args...)
		return fe
	}
	switch {
	case env.JSONRPC == nil || *env.JSONRPC != "2.0":
		return nil, refuse(`"jsonrpc" must be "2.0"`)
	case idErr != nil:
		return nil, refuse("%v", idErr)
	case env.Method != nil && *env.Method == "":
		return nil, refuse(`"method" must not be empty`)
	case env.Method != nil && (env.Result != nil || env.Error != nil):
		return nil, refuse(`a request has no "result" or "error"`)
	case env.Method != nil && env.Params != nil && !isObject(env.Params) && string(env.Params) != "null":
		return nil, refuse(`"params" must be an object`)
	case env.Method == nil && !id.IsValid():
		return nil, refuse(`a response needs an "id" (a string or an integer)`)
	case env.Method == nil && (env.Result == nil) == (env.Error == nil):
		return nil, refuse(`a response has exactly one of "result" and "error"`)
	case env.Method != nil:
		return &jsonrpc.Request{ID: id, Method: *env.Method, Params: env.Params}, nil
	case env.Error != nil:
		var we wireError
		if err := strictjson.UnmarshalKnown(env.Error, &we); err != nil {
			return nil, refuse(`"error": %v`, err)
		}
		if we.Code == nil || we.Message == nil {
			return nil, refuse(`"error" needs a "code" and a "message"`)
		}
		code, err := strconv.ParseInt(we.Code.String(), 10, 32)
		if err != nil {
			return nil, refuse(`"error": "code" must be an integer`)
		}
		return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: *we.Message, Data: we.Data}}, nil
	}
	return &jsonrpc.Response{ID: id, Result: env.Result}, nil
}

// readEnvelope reads a frame's envelope in its one strict reading
// (strictjson.Members): the members as strictjson.Unmarshal would store
// them, without encoding/json's two more passes over the frame (the
// result of a call, a file's content, is most of it). A frame the fast
// reading does not take as it is — not an object, not strict, a member
// spelled like an envelope's in another case or not ASCII, a "jsonrpc" or
// "method" that is neither a string nor null — is decoded by
// strictjson.Unmarshal, for the same envelope or its exact refusal
// (TestReadEnvelopeAsUnmarshal).
func readEnvelope(raw []byte) (envelope, error) {
	var env envelope
	plain := true
	isObj, err := strictjson.Members(raw, func(key string, v []byte) {
		switch key {
		case "jsonrpc":
			env.JSONRPC = plainString(v, &plain)
		case "method":
			env.Method = plainString(v, &plain)
		case "id":
			env.ID = v
		case "params":
			env.Params = v
		case "result":
			env.Result = v
		case "error":
			env.Error = v
		default:
			if !ascii(key) || foldsToEnvelope(key) {
				plain = false
			}
		}
	})
	if err != nil || !isObj || !plain {
		env = envelope{}
		err = strictjson.Unmarshal(raw, &env)
		return env, err
	}
	return env, nil
}

// envelopeNames are the JSON names of envelope's fields.
var envelopeNames = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// foldsToEnvelope reports whether an ASCII key that is no envelope name
// matches one case-insensitively (as encoding/json would).
func foldsToEnvelope(key string) bool {
	for _, n := range envelopeNames {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}

// plainString is a strict JSON value read into a *string as
// encoding/json reads it: null is nil, a string its value; anything else
// clears *plain (encoding/json refuses it).
func plainString(v []byte, plain *bool) *string {
	switch {
	case string(v) == "null":
		return nil
	case len(v) >= 2 && v[0] == '"' && bytes.IndexByte(v, '\\') < 0:
		s := string(v[1 : len(v)-1])
		return &s
	case len(v) >= 2 && v[0] == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return &s
		}
	}
	*plain = false
	return nil
}

func isObject(raw json.RawMessage) bool {
	return len(raw) > 0 && raw[0] == '{'
}

// readID reads an id: absent (the zero ID), a string, or an integer
// written without fraction or exponent within ±(2^53-1). null, other
// numbers and other types are refused: readers disagree on them (the SDK
// takes id null for a notification and 1.5 for 1).
func readID(raw json.RawMessage) (jsonrpc.ID, error) {
	if raw == nil {
		return jsonrpc.ID{}, nil
	}
	switch {
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return jsonrpc.ID{}, fmt.Errorf(`"id": %v`, err)
		}
		return jsonrpc.MakeID(s)
	case raw[0] == '-' || ('0' <= raw[0] && raw[0] <= '9'):
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n > maxSafeID || n < -maxSafeID {
			return jsonrpc.ID{}, fmt.Errorf(`"id" %s is not an integer within ±(2^53-1)`, raw)
		}
		return jsonrpc.MakeID(float64(n))
	}
	return jsonrpc.ID{}, fmt.Errorf(`"id" must be a string or an integer, not %s`, strings.TrimSpace(string(raw[:min(len(raw), 20)])))
}

// looseFrame reads what it safely can of a frame that failed the strict
// check: its id, when the top level is an object with exactly one "id" and
// no member spelled like it in another case, and whether it is a request
// (it has a "method", in any case). Anything else leaves the FrameError
// without an id: such a frame cannot be answered.
func looseFrame(raw []byte) *FrameError {
	fe := &FrameError{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fe
	}
	var ids, methods []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fe
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fe
		}
		switch {
		case key == "id":
			ids = append(ids, v)
		case strings.EqualFold(key, "id"):
			return fe
		case strings.EqualFold(key, "method"):
			methods = append(methods, v)
		}
	}
	if len(ids) != 1 {
		return fe
	}
	if id, err := readID(ids[0]); err == nil {
		fe.ID = id
	}
	fe.Request = len(methods) > 0
	return fe
}
