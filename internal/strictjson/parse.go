// Package strictjson decodes JSON that crosses a trust boundary so that
// every reader agrees on what it says. Parsers disagree on a duplicate key
// (first wins, last wins, error), on keys that differ from a field name
// only by case (Go's encoding/json matches them, Node and Python do not),
// on invalid UTF-8 and lone surrogates (replaced, kept, refused) and on
// what follows the value. Here all of those are refused:
//
//   - a duplicate key in any object, at any depth (after unescaping, so
//     "a" and "\u0061" are the same key);
//   - in an object decoded into a struct, a key that is not a field's
//     exact name but matches one case-insensitively (as Go's encoding/json
//     would match it: "Name", "NAME", "ſerver" for "server");
//   - bytes that are not UTF-8, control characters in strings, and \u
//     escapes of lone surrogates;
//   - anything after the value but whitespace;
//   - nesting deeper than MaxDepth.
//
// Numbers are kept as written (json.Number). Inside a map (an MCP tool's
// arguments, a JSON Schema) keys that differ only by case are distinct keys
// and pass: readers of those maps read keys exactly.
//
// Errors are *Error values whose text starts with "json: ". Every function
// is safe for concurrent use.
package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcpx/mcpx-policy/internal/jsonptr"
)

// MaxDepth is the deepest nesting of arrays and objects accepted.
const MaxDepth = 1000

// Error is a refusal: what is wrong and where. Path is a JSON Pointer to the
// value concerned ("" for the whole document); Offset is the byte offset in
// the input where it was found.
type Error struct {
	Path   string
	Offset int
	Msg    string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "json: " + e.Msg
	}
	return fmt.Sprintf("json: %s (at %s)", e.Msg, e.Path)
}

// Valid checks that data is one strict JSON value: no duplicate keys,
// valid UTF-8 without lone surrogates, nothing after the value, nesting at
// most MaxDepth. It builds nothing.
func Valid(data []byte) error {
	p := parser{data: data}
	return p.document(nil, false)
}

// Members checks data as Valid does and, when it is an object, gives fn
// each of its members in order: the key (unescaped) and the value's bytes
// as written, a sub-slice of data (what encoding/json stores in a
// json.RawMessage). Keys are unique (a duplicate is an error). fn is called
// only while the check goes on, so a later error may follow calls already
// made; the caller uses what it was given only once Members returns nil.
// It reports whether data is an object; for any other value fn is never
// called.
func Members(data []byte, fn func(key string, value []byte)) (isObject bool, err error) {
	p := parser{data: data, member: fn}
	if err := p.document(nil, false); err != nil {
		return false, err
	}
	p.pos = 0
	p.space()
	return p.data[p.pos] == '{', nil
}

// Parse decodes data, checked as Valid does, into plain values:
// map[string]any, []any, string, json.Number, bool and nil.
func Parse(data []byte) (any, error) {
	p := parser{data: data, build: true}
	var v any
	p.out = &v
	if err := p.document(nil, false); err != nil {
		return nil, err
	}
	return v, nil
}

// parser is a one-pass recursive-descent JSON reader. With build set it
// stores the value in *out; with a shape it checks the keys of the objects
// that decode into structs.
type parser struct {
	data  []byte
	pos   int
	depth int
	build bool
	out   *any
	known bool  // refuse keys that are not a struct's fields
	path  []seg // where the value being read is
	// member, when set, is given each member of the top-level object:
	// its key and its value's bytes as written (Members).
	member func(key string, value []byte)
}

// seg is a segment of the path to a value: an object's key (unescaped) or
// an array's index. A key is a sub-slice of the data unless it had
// escapes: keys are made strings only where they are kept (a built map,
// a member handed out, an error).
type seg struct {
	key   []byte
	index int // -1 for a key
}

func (p *parser) fail(msg string, args ...any) error {
	segs := make([]string, len(p.path))
	for i, s := range p.path {
		if s.index >= 0 {
			segs[i] = strconv.Itoa(s.index)
		} else {
			segs[i] = string(s.key)
		}
	}
	return &Error{Path: pointer(segs), Offset: p.pos, Msg: fmt.Sprintf(msg, args...)}
}

// pointer renders path segments as a JSON Pointer.
func pointer(segs []string) string { return jsonptr.Join(segs...) }

func (p *parser) document(s *shape, known bool) error {
	p.known = known
	p.space()
	v, err := p.value(s)
	if err != nil {
		return err
	}
	p.space()
	if p.pos < len(p.data) {
		return p.fail("trailing data after the JSON value")
	}
	if p.build {
		*p.out = v
	}
	return nil
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(s *shape) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of JSON input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(s)
	case c == '[':
		return p.array(s)
	case c == '"':
		if !p.build {
			return nil, p.skipStr()
		}
		str, err := p.str()
		if err != nil {
			return nil, err
		}
		return str, nil
	case c == '-' || ('0' <= c && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		return nil, p.fail("invalid character %s looking for a value", quoteByte(c))
	}
}

func quoteByte(c byte) string {
	if c < utf8.RuneSelf {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

func (p *parser) literal(lit string) error {
	if len(p.data)-p.pos < len(lit) || string(p.data[p.pos:p.pos+len(lit)]) != lit {
		return p.fail("invalid literal (want %s)", lit)
	}
	p.pos += len(lit)
	return nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return p.fail("nesting deeper than %d", MaxDepth)
	}
	return nil
}

func (p *parser) object(s *shape) (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // {
	var obj map[string]any
	if p.build {
		obj = map[string]any{}
	}
	var keys keySet
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return obj, nil
	}
	for {
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("want a string key in an object")
		}
		keyAt := p.pos
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		if !keys.add(key) {
			p.pos = keyAt
			return nil, p.fail("duplicate key %q", key)
		}
		var child *shape
		if s != nil {
			if child, err = s.member(string(key), p.known); err != nil {
				p.pos = keyAt
				return nil, p.fail("%v", err)
			}
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("want ':' after an object key")
		}
		p.pos++
		p.space()
		p.path = append(p.path, seg{key: key, index: -1})
		valueAt := p.pos
		v, err := p.value(child)
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		if p.member != nil && p.depth == 1 {
			p.member(string(key), p.data[valueAt:p.pos:p.pos])
		}
		if p.build {
			obj[string(key)] = v
		}
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of JSON input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.depth--
			return obj, nil
		default:
			return nil, p.fail("want ',' or '}' in an object, found %s", quoteByte(p.data[p.pos]))
		}
	}
}

func (p *parser) array(s *shape) (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // [
	var arr []any
	if p.build {
		arr = []any{}
	}
	elem := s.elem()
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return arr, nil
	}
	for i := 0; ; i++ {
		p.space()
		p.path = append(p.path, seg{index: i})
		v, err := p.value(elem)
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		if p.build {
			arr = append(arr, v)
		}
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of JSON input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.depth--
			return arr, nil
		default:
			return nil, p.fail("want ',' or ']' in an array, found %s", quoteByte(p.data[p.pos]))
		}
	}
}

// keySet holds the keys of one object: a short list in place (no
// allocation for the objects of most documents), a map past 16.
type keySet struct {
	n    int
	few  [16][]byte
	many map[string]struct{}
}

// add adds k and reports whether it was new.
func (ks *keySet) add(k []byte) bool {
	if ks.many != nil {
		if _, ok := ks.many[string(k)]; ok {
			return false
		}
		ks.many[string(k)] = struct{}{}
		return true
	}
	for _, f := range ks.few[:ks.n] {
		if string(f) == string(k) {
			return false
		}
	}
	if ks.n < len(ks.few) {
		ks.few[ks.n] = k
		ks.n++
		return true
	}
	ks.many = make(map[string]struct{}, 32)
	for _, f := range ks.few {
		ks.many[string(f)] = struct{}{}
	}
	ks.many[string(k)] = struct{}{}
	return true
}

// key reads an object's key at p.pos (an opening quote) as str does and
// returns its value's bytes: a sub-slice of the data when it has no
// escape, so that a key costs no allocation where it is not kept.
func (p *parser) key() ([]byte, error) {
	start := p.pos
	if p.skipStr() == nil {
		if raw := p.data[start+1 : p.pos-1]; bytes.IndexByte(raw, '\\') < 0 {
			return raw, nil
		}
	}
	p.pos = start
	s, err := p.str()
	return []byte(s), err
}

// skipStr checks a string at p.pos (an opening quote) as str does,
// without building its value.
func (p *parser) skipStr() error {
	p.pos++ // "
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return nil
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return p.fail("unterminated string")
			}
			e := p.data[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, err := p.escapedRune(); err != nil {
					return err
				}
			default:
				return p.fail("invalid escape %s in a string", quoteByte(e))
			}
		case c < 0x20:
			return p.fail("control character 0x%02x in a string", c)
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return p.fail("invalid UTF-8 in a string")
			}
			p.pos += n
		}
	}
	return p.fail("unterminated string")
}

// escapedRune reads the four hex digits after \u (p.pos is past the u),
// and the low half after a high surrogate.
func (p *parser) escapedRune() (rune, error) {
	r, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	// A high surrogate must be followed by \u and a low one.
	if r >= 0xDC00 || p.pos+1 >= len(p.data) || p.data[p.pos] != '\\' || p.data[p.pos+1] != 'u' {
		return 0, p.fail(`lone surrogate \u%04x in a string`, r)
	}
	p.pos += 2
	r2, err := p.hex4()
	if err != nil {
		return 0, err
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, p.fail(`lone surrogate \u%04x in a string`, r)
	}
	return utf16.DecodeRune(r, r2), nil
}

// str reads a string at p.pos (an opening quote) and returns its value.
func (p *parser) str() (string, error) {
	p.pos++ // "
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		case c == '\\':
			return p.slowStr(start)
		case c < 0x20:
			return "", p.fail("control character 0x%02x in a string", c)
		case c < utf8.RuneSelf:
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.fail("invalid UTF-8 in a string")
			}
			p.pos += n
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) slowStr(start int) (string, error) {
	buf := make([]byte, 0, p.pos-start+16)
	buf = append(buf, p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return "", p.fail("unterminated string")
			}
			e := p.data[p.pos+1]
			p.pos += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, err := p.escapedRune()
				if err != nil {
					return "", err
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", p.fail("invalid escape %s in a string", quoteByte(e))
			}
		case c < 0x20:
			return "", p.fail("control character 0x%02x in a string", c)
		case c < utf8.RuneSelf:
			// A run of plain ASCII at once.
			end := p.pos + 1
			for end < len(p.data) && p.data[end] >= 0x20 && p.data[end] < utf8.RuneSelf && p.data[end] != '"' && p.data[end] != '\\' {
				end++
			}
			buf = append(buf, p.data[p.pos:end]...)
			p.pos = end
		default:
			r, n := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && n <= 1 {
				return "", p.fail("invalid UTF-8 in a string")
			}
			buf = append(buf, p.data[p.pos:p.pos+n]...)
			p.pos += n
		}
	}
	return "", p.fail("unterminated string")
}

func (p *parser) hex4() (rune, error) {
	if len(p.data)-p.pos < 4 {
		return 0, p.fail(`invalid \u escape in a string`)
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, p.fail(`invalid \u escape in a string`)
		}
	}
	p.pos += 4
	return r, nil
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? as written.
func (p *parser) number() (any, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	switch {
	case p.pos < len(p.data) && p.data[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return nil, p.fail("invalid number")
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.fail("invalid number")
		}
	}
	if !p.build {
		return nil, nil
	}
	return json.Number(p.data[start:p.pos]), nil
}
