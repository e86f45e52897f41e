package engine_test

import (
	"encoding/json"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// TestFaceNamesNoOPAType: no exported name of the package (a function, a
// method of an exported type, a field, a variable, a type) takes, returns
// or holds a type of OPA (github.com/open-policy-agent/…), so OPA stays an
// implementation detail of this adapter
// (docs/decisions/0001-rego-layout.md). It reads the package as the rest of
// the module compiles against it, its test files left out: the export data
// `go list -export` builds. Test-only names (export_test.go) are not part
// of it.
func TestFaceNamesNoOPAType(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	var self string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		self = p.ImportPath // -deps lists the package itself last
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	pkg, err := imp.Import(self)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		w := faceWalker{self: pkg, seen: map[types.Type]bool{}, found: map[string]bool{}}
		w.walk(obj.Type())
		for opa := range w.found {
			bad = append(bad, name+" → "+opa)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("exported names of %s that mention an OPA type (move measurement hooks to export_test.go):\n  %s", self, strings.Join(bad, "\n  "))
	}
	if scope.Lookup("Prepare") == nil {
		t.Fatalf("the export data of %s has no Prepare: the walk read the wrong package", self)
	}
}

// faceWalker collects the OPA types reachable from an exported name through
// what a caller outside the package can see: signatures, exported fields
// and exported methods of the package's own types, element types.
type faceWalker struct {
	self  *types.Package
	seen  map[types.Type]bool
	found map[string]bool
}

func (w *faceWalker) walk(t types.Type) {
	if t == nil || w.seen[t] {
		return
	}
	w.seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		w.walk(types.Unalias(t))
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && strings.HasPrefix(p.Path(), "github.com/open-policy-agent/") {
			w.found[p.Path()+"."+t.Obj().Name()] = true
			return
		}
		for i := 0; i < t.TypeArgs().Len(); i++ {
			w.walk(t.TypeArgs().At(i))
		}
		if t.Obj().Pkg() != w.self {
			return // another package's face is its own
		}
		w.walk(t.Underlying())
		ms := types.NewMethodSet(types.NewPointer(t))
		for i := 0; i < ms.Len(); i++ {
			if m := ms.At(i).Obj(); m.Exported() {
				w.walk(m.Type())
			}
		}
	case *types.Pointer:
		w.walk(t.Elem())
	case *types.Slice:
		w.walk(t.Elem())
	case *types.Array:
		w.walk(t.Elem())
	case *types.Chan:
		w.walk(t.Elem())
	case *types.Map:
		w.walk(t.Key())
		w.walk(t.Elem())
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := 0; i < tup.Len(); i++ {
				w.walk(tup.At(i).Type())
			}
		}
	case *types.Struct:
		for i := 0; i < t.NumFields(); i++ {
			if f := t.Field(i); f.Exported() {
				w.walk(f.Type())
			}
		}
	case *types.Interface:
		for i := 0; i < t.NumMethods(); i++ {
			if m := t.Method(i); m.Exported() {
				w.walk(m.Type())
			}
		}
	}
}
