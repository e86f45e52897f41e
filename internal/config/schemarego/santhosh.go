package schemarego

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// baseURL is the retrieval URI the schema document is compiled under. It is
// never fetched: the compiler has no loader, so every reference that leaves
// the document (other than to the built-in metaschemas) fails to load.
const baseURL = "https://mcpx.invalid/schema.json"

type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("remote reference %q: schemas are never fetched", u)
}

// compileSchema validates doc with santhosh v6 (default draft 2020-12) and
// returns the compiled root and an index of the raw document.
func compileSchema(doc any) (*jsonschema.Schema, *rawIndex, error) {
	vocab, err := confineVocab()
	if err != nil {
		return nil, nil, &Error{Msg: "internal error: " + err.Error()}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.RegisterVocabulary(vocab)
	c.AssertVocabs()
	if err := c.AddResource(baseURL, doc); err != nil {
		return nil, nil, &Error{Msg: err.Error()}
	}
	sch, err := c.Compile(baseURL)
	if err != nil {
		return nil, nil, mapSanthoshError(doc, err)
	}
	return sch, newRawIndex(doc), nil
}

// mapSanthoshError turns a santhosh compile error into an *Error.
func mapSanthoshError(doc any, err error) error {
	var (
		sve *jsonschema.SchemaValidationError
		rxe *jsonschema.InvalidRegexError
		lue *jsonschema.LoadURLError
		use *jsonschema.UnsupportedURLSchemeError
		anf *jsonschema.AnchorNotFoundError
		pnf *jsonschema.JSONPointerNotFoundError
	)
	switch {
	case errors.As(err, &rxe):
		ptr := pointerOf(rxe.URL)
		kw := "pattern"
		if strings.Contains(ptr, "/patternProperties/") {
			kw = "patternProperties"
		}
		return &Error{Keyword: kw, Pointer: ptr, Msg: fmt.Sprintf("pattern %q is not RE2: %v", rxe.Regex, rxe.Err)}
	case errors.As(err, &sve):
		e := &Error{Pointer: pointerOf(sve.URL), Msg: "invalid JSON Schema 2020-12: " + sve.Err.Error()}
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			// the deepest located cause names the keyword at fault
			var loc []string
			for c := ve; c != nil; {
				if len(c.InstanceLocation) > 0 {
					loc = c.InstanceLocation
				}
				if len(c.Causes) == 0 {
					break
				}
				c = c.Causes[0]
			}
			if len(loc) > 0 {
				e.Pointer = "/" + strings.Join(escapeAll(loc), "/")
				e.Keyword = loc[len(loc)-1]
			}
		}
		return e
	case errors.As(err, &anf):
		return &Error{Keyword: "$ref", Pointer: pointerOf(anf.URL), Msg: "reference to a missing anchor: " + err.Error()}
	case errors.As(err, &pnf):
		return &Error{Keyword: "$ref", Pointer: pointerOf(pnf.URL), Msg: "reference to a missing location: " + err.Error()}
	case errors.As(err, &lue):
		return refError(doc, lue.URL, err)
	case errors.As(err, &use):
		return &Error{Keyword: "$ref", Msg: "reference with an unsupported URL scheme: " + use.Error()}
	}
	return &Error{Msg: err.Error()}
}

func refError(doc any, u string, err error) error {
	if m, ok := doc.(map[string]any); ok {
		if s, ok := m["$schema"].(string); ok && strings.TrimSuffix(s, "#") == strings.TrimSuffix(u, "#") {
			return &Error{Keyword: "$schema", Msg: fmt.Sprintf("metaschema %q is not JSON Schema 2020-12 and is never fetched", u)}
		}
	}
	return &Error{Keyword: "$ref", Msg: fmt.Sprintf("remote reference %q is not supported: only references inside the schema document are resolved", u)}
}

func escapeAll(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = escapeToken(t)
	}
	return out
}

func escapeToken(t string) string {
	return strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
}

// pointerOf returns the fragment of a schema location "url#/ptr", or the
// whole location when it is not in the schema document itself.
func pointerOf(loc string) string {
	u, frag, ok := strings.Cut(loc, "#")
	if !ok {
		return ""
	}
	if u != baseURL {
		return loc
	}
	return frag
}

// rawIndex finds the raw JSON of a compiled schema from its location, so the
// generated violations can carry each keyword's value exactly as written.
type rawIndex struct {
	doc any
	ids map[string]any // absolute $id (without fragment) -> raw resource
}

func newRawIndex(doc any) *rawIndex {
	ri := &rawIndex{doc: doc, ids: map[string]any{baseURL: doc}}
	base, _ := url.Parse(baseURL)
	ri.scan(doc, base)
	return ri
}

func (ri *rawIndex) scan(v any, base *url.URL) {
	switch v := v.(type) {
	case map[string]any:
		if id, ok := v["$id"].(string); ok {
			if ref, err := url.Parse(id); err == nil {
				nb := base.ResolveReference(ref)
				nb.Fragment, nb.RawFragment = "", ""
				if _, dup := ri.ids[nb.String()]; !dup {
					ri.ids[nb.String()] = v
				}
				base = nb
			}
		}
		for k, e := range v {
			if k == "enum" || k == "const" || k == "default" || k == "examples" {
				continue
			}
			ri.scan(e, base)
		}
	case []any:
		for _, e := range v {
			ri.scan(e, base)
		}
	}
}

// lookup returns the raw JSON at location "url#/ptr", and whether found.
func (ri *rawIndex) lookup(loc string) (any, bool) {
	u, frag, _ := strings.Cut(loc, "#")
	v, ok := ri.ids[u]
	if !ok {
		return nil, false
	}
	if frag == "" {
		return v, true
	}
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := v.(type) {
		case map[string]any:
			if v, ok = n[tok]; !ok {
				return nil, false
			}
		case []any:
			i := 0
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(n) {
				return nil, false
			}
			v = n[i]
		default:
			return nil, false
		}
	}
	return v, true
}
