package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Unmarshal decodes data into v (a non-nil pointer) strictly: data must be
// Valid, and an object that decodes into a struct may not carry a key that
// matches a field only case-insensitively. Keys that are no field are
// ignored. Numbers decoded into interface values are json.Number. The
// decoding itself is encoding/json's, so tags, pointers and types behave as
// there; once the checks passed, its case-insensitive matching has nothing
// left to match.
func Unmarshal(data []byte, v any) error {
	return unmarshal(data, v, false)
}

// UnmarshalKnown is Unmarshal that also refuses, in an object that decodes
// into a struct, a key that is no field of it.
func UnmarshalKnown(data []byte, v any) error {
	return unmarshal(data, v, true)
}

func unmarshal(data []byte, v any, known bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictjson: Unmarshal needs a non-nil pointer, not %T", v)
	}
	p := parser{data: data}
	if err := p.document(shapeOf(rv.Type().Elem()), known); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if known {
		dec.DisallowUnknownFields()
	}
	return dec.Decode(v)
}

// shape is what the parser needs to know of a Go type: the exact field
// names of a struct, and the shapes below it.
type shape struct {
	kind   int
	fields map[string]*shape // kindStruct: exact JSON name -> field shape
	names  []string          // kindStruct: the JSON names, for the case check
	sub    *shape            // kindMap, kindSlice: the element's shape
}

const (
	kindOther  = iota // anything the parser need not look into
	kindStruct        // keys are field names, matched exactly
	kindMap           // keys are data: any key, each value of sub's shape
	kindSlice         // each element of sub's shape
)

// member returns the shape of key's value in an object of shape s and
// whether key may stand there: known is false for a key that is no field of
// a struct (with strict fields, an error). A case variant of a field is an
// error. A nil shape (no struct anywhere below) checks nothing.
func (s *shape) member(key string, strictFields bool) (*shape, error) {
	if s == nil {
		return nil, nil
	}
	switch s.kind {
	case kindMap:
		return s.sub, nil
	case kindStruct:
		if f, ok := s.fields[key]; ok {
			return f, nil
		}
		for _, name := range s.names {
			if sameFold(key, name) {
				return nil, fmt.Errorf("key %q is not %q: keys are case-sensitive", key, name)
			}
		}
		if strictFields {
			return nil, fmt.Errorf("unknown field %q", key)
		}
	}
	return nil, nil
}

func (s *shape) elem() *shape {
	if s == nil || s.kind != kindSlice {
		return nil
	}
	return s.sub
}

// sameFold reports whether Go's encoding/json would match a and b as a key
// and a field name: simple Unicode case folding, and its own folding
// (upper of lower) for the characters where the two differ.
func sameFold(a, b string) bool {
	return strings.EqualFold(a, b) || goFold(a) == goFold(b)
}

func goFold(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < utf8.RuneSelf {
			b.WriteRune(unicode.ToUpper(r))
			continue
		}
		b.WriteRune(unicode.ToUpper(unicode.ToLower(r)))
	}
	return b.String()
}

var (
	shapes     sync.Map // reflect.Type -> *shape
	unmarshalT = reflect.TypeFor[json.Unmarshaler]()
	textT      = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// shapeOf returns t's shape; nil when nothing below t is a struct, so the
// parser checks nothing but syntax there.
func shapeOf(t reflect.Type) *shape {
	if s, ok := shapes.Load(t); ok {
		return s.(*shape)
	}
	s := build(t, map[reflect.Type]*shape{})
	shapes.Store(t, s)
	return s
}

func build(t reflect.Type, building map[reflect.Type]*shape) *shape {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s, ok := building[t]; ok {
		return s // a recursive type: the shape being built
	}
	// A type that decodes itself (json.RawMessage, json.Number, time.Time)
	// is checked for syntax only.
	if t.Implements(unmarshalT) || reflect.PointerTo(t).Implements(unmarshalT) ||
		t.Implements(textT) || reflect.PointerTo(t).Implements(textT) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &shape{kind: kindStruct, fields: map[string]*shape{}}
		building[t] = s
		addFields(s, t, building)
		return s
	case reflect.Map:
		s := &shape{kind: kindMap}
		building[t] = s
		s.sub = build(t.Elem(), building)
		if s.sub == nil {
			delete(building, t)
			return nil
		}
		return s
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string
		}
		s := &shape{kind: kindSlice}
		building[t] = s
		s.sub = build(t.Elem(), building)
		if s.sub == nil {
			delete(building, t)
			return nil
		}
		return s
	}
	return nil
}

// addFields adds t's JSON fields to s as encoding/json names them: the tag
// name, else the Go name; "-" skipped; untagged embedded structs flattened.
func addFields(s *shape, t reflect.Type, building map[reflect.Type]*shape) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft, building)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.fields[name] = build(f.Type, building)
		s.names = append(s.names, name)
	}
}
