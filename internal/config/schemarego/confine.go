package schemarego

import (
	"fmt"
	"maps"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/message"

	"github.com/mcpx/mcpx-policy/internal/confine"
)

// The keywords pathWithin and urlWithin (docs/argument-rules.md#paths-and-urls):
// a value must be a path inside the given roots, or a URL inside the given
// schemes, hosts and ports (or an array of such strings). They are a
// vocabulary of their own, registered with santhosh v6 for every schema
// this package compiles, so that the Go check of a rule (Validator, which
// the embedded engine runs) enforces them as the generated Rego does:
// internal/confine holds both forms and the tests that tie them.

// vocabURL names the vocabulary; it is never fetched.
const vocabURL = "https://mcpx.invalid/vocab/confine"

// confineVocab is the vocabulary, built once. Registering any vocabulary
// makes santhosh validate a schema against the metaschemas of the active
// vocabularies (core, applicator, unevaluated, validation) instead of the
// whole 2020-12 metaschema; this one's metaschema is the whole 2020-12
// metaschema, so a schema is validated exactly as it was (meta-data,
// format and content keywords included).
var confineVocab = sync.OnceValues(func() (*jsonschema.Vocabulary, error) {
	meta, err := jsonschema.NewCompiler().Compile("https://json-schema.org/draft/2020-12/schema")
	if err != nil {
		return nil, err
	}
	return &jsonschema.Vocabulary{URL: vocabURL, Schema: meta, Compile: compileConfine}, nil
})

// confineExt is a schema's pathWithin and urlWithin, compiled. A value
// that does not compile keeps its error: Compile refuses the schema at
// load with it, and Validate fails closed on it.
type confineExt struct {
	path    *confine.Roots
	pathErr error
	url     *confine.URLs
	urlErr  error
}

func compileConfine(_ *jsonschema.CompilerContext, obj map[string]any) (jsonschema.SchemaExt, error) {
	var ext confineExt
	p, hasPath := obj[confine.PathKeyword]
	u, hasURL := obj[confine.URLKeyword]
	if !hasPath && !hasURL {
		return nil, nil
	}
	if hasPath {
		r, err := confine.ParseRoots(p)
		ext.path, ext.pathErr = &r, err
	}
	if hasURL {
		a, err := confine.ParseURLs(u)
		ext.url, ext.urlErr = &a, err
	}
	return &ext, nil
}

// Validate adds an error for each keyword v fails: v is a string the
// check accepts, or an array of such strings.
func (e *confineExt) Validate(ctx *jsonschema.ValidatorContext, v any) {
	if e.path != nil && (e.pathErr != nil || !each(v, e.path.Check)) {
		ctx.AddError(&confineKind{keyword: confine.PathKeyword})
	}
	if e.url != nil && (e.urlErr != nil || !each(v, e.url.Check)) {
		ctx.AddError(&confineKind{keyword: confine.URLKeyword})
	}
}

func each(v any, check func(string) (bool, string)) bool {
	switch x := v.(type) {
	case string:
		ok, _ := check(x)
		return ok
	case []any:
		for _, item := range x {
			s, isString := item.(string)
			if !isString {
				return false
			}
			if ok, _ := check(s); !ok {
				return false
			}
		}
		return true
	}
	return false
}

// confineKind is santhosh's error kind for a failed keyword.
type confineKind struct{ keyword string }

func (k *confineKind) KeywordPath() []string { return []string{k.keyword} }

func (k *confineKind) LocalizedString(p *message.Printer) string {
	return p.Sprintf("%s: the value is outside what it allows", k.keyword)
}

// confineOf returns s's compiled keywords, or nil.
func confineOf(s *jsonschema.Schema) *confineExt {
	for _, x := range s.Extensions {
		if e, ok := x.(*confineExt); ok {
			return e
		}
	}
	return nil
}

// confineErr is the load error of s's keywords, if any.
func confineErr(s *jsonschema.Schema) error {
	e := confineOf(s)
	switch {
	case e == nil:
		return nil
	case e.pathErr != nil:
		return errAt(s, confine.PathKeyword, fmt.Sprintf("pathWithin: %v", e.pathErr))
	case e.urlErr != nil:
		return errAt(s, confine.URLKeyword, fmt.Sprintf("urlWithin: %v", e.urlErr))
	}
	return nil
}

// validConfine is the conditions of s's keywords on v, for its validity
// predicate.
func (g *gen) validConfine(s *jsonschema.Schema) []string {
	e := confineOf(s)
	if e == nil {
		return nil
	}
	var cs []string
	if e.path != nil {
		g.helper("_path_ok")
		cs = append(cs, fmt.Sprintf("_path_ok(v, %s)", g.c(e.path.Data())))
	}
	if e.url != nil {
		g.helper("_url_ok")
		cs = append(cs, fmt.Sprintf("_url_ok(v, %s)", g.c(e.url.Data())))
	}
	return cs
}

// confineParts is the violations of s's keywords, as array expressions.
func (g *gen) confineParts(s *jsonschema.Schema, raw map[string]any) []string {
	e := confineOf(s)
	if e == nil {
		return nil
	}
	var parts []string
	if e.path != nil {
		g.helper("_path_viols")
		parts = append(parts, fmt.Sprintf("_path_viols(v, p, %s, %s)", g.c(e.path.Data()), g.expected(raw, confine.PathKeyword, nil)))
	}
	if e.url != nil {
		g.helper("_url_viols")
		parts = append(parts, fmt.Sprintf("_url_viols(v, p, %s, %s)", g.c(e.url.Data()), g.expected(raw, confine.URLKeyword, nil)))
	}
	return parts
}

// The helpers of both keywords join the generator's fixed helpers.
func init() {
	helpers, deps := confine.Rego()
	maps.Copy(helperSrc, helpers)
	maps.Copy(helperDeps, deps)
}
