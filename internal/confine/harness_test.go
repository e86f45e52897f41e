package confine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/mcpx/mcpx-policy/internal/confine"
)

// regoForm evaluates the Rego helpers as a generated package holds them:
// every helper in one module, strict builtin errors, the keyword's data
// as an argument.
type regoForm struct {
	pathWhy, urlWhy, pathOK, urlOK rego.PreparedEvalQuery
}

var regoOnce = sync.OnceValues(func() (*regoForm, error) {
	var src strings.Builder
	src.WriteString("package h\n\n")
	helpers, _ := confine.Rego()
	for _, h := range helpers {
		src.WriteString(h)
		src.WriteString("\n\n")
	}
	prep := func(q string) (rego.PreparedEvalQuery, error) {
		return rego.New(
			rego.Query(q),
			rego.Module("h.rego", src.String()),
			rego.StrictBuiltinErrors(true),
			rego.SetRegoVersion(ast.RegoV1),
		).PrepareForEval(context.Background())
	}
	var f regoForm
	var err error
	for _, x := range []struct {
		q  string
		pq *rego.PreparedEvalQuery
	}{
		{"x := data.h._path_why(input.s, input.r)", &f.pathWhy},
		{"x := data.h._url_why(input.s, input.r)", &f.urlWhy},
		{"x := data.h._path_ok(input.s, input.r)", &f.pathOK},
		{"x := data.h._url_ok(input.s, input.r)", &f.urlOK},
	} {
		if *x.pq, err = prep(x.q); err != nil {
			return nil, err
		}
	}
	return &f, nil
})

func harness(t testing.TB) *regoForm {
	t.Helper()
	f, err := regoOnce()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// eval returns x of the query, or (nil, false) when it is undefined.
func eval(t testing.TB, pq rego.PreparedEvalQuery, s any, data map[string]any) (any, bool) {
	t.Helper()
	rs, err := pq.Eval(context.Background(), rego.EvalInput(map[string]any{"s": s, "r": data}))
	if err != nil {
		t.Fatalf("rego on %q: %v", s, err)
	}
	if len(rs) == 0 {
		return nil, false
	}
	return rs[0].Bindings["x"], true
}

// regoPath is the Rego verdict on a path string: ok and the detail.
func (f *regoForm) path(t testing.TB, s string, r confine.Roots) (bool, string) {
	t.Helper()
	why, ok := eval(t, f.pathWhy, s, r.Data())
	if !ok {
		t.Fatalf("rego _path_why(%q) is undefined", s)
	}
	w, _ := why.(string)
	_, valid := eval(t, f.pathOK, s, r.Data())
	if valid != (w == "") {
		t.Fatalf("rego _path_ok(%q) = %v but _path_why = %q", s, valid, w)
	}
	return w == "", w
}

func (f *regoForm) url(t testing.TB, s string, u confine.URLs) (bool, string) {
	t.Helper()
	why, ok := eval(t, f.urlWhy, s, u.Data())
	if !ok {
		t.Fatalf("rego _url_why(%q) is undefined", s)
	}
	w, _ := why.(string)
	_, valid := eval(t, f.urlOK, s, u.Data())
	if valid != (w == "") {
		t.Fatalf("rego _url_ok(%q) = %v but _url_why = %q", s, valid, w)
	}
	return w == "", w
}

// BenchmarkRegoPathWhy is the Rego form's cost on a path inside, one
// outside, and one with "..", whose detail resolves it:
//
//	go test -run '^$' -bench RegoPathWhy -benchmem ./internal/confine/
func BenchmarkRegoPathWhy(b *testing.B) {
	f := harness(b)
	r := roots(b, "/workspace", "/tmp")
	for _, p := range []string{"/workspace/project3/src/file_3.go", "/etc/conf3", "/workspace/a/../../etc/passwd3"} {
		b.Run(p, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				eval(b, f.pathWhy, p, r.Data())
			}
		})
	}
}
