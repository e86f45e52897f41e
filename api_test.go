package mcpxpolicy_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
	"testing"
)

// sdkDirs are the SDK's packages, the door first (door_test.go's sdk).
var sdkDirs = []string{".", "decision", "mcpgate", "opabundle"}

// The door's size (docs/decisions/0013-a-thin-door.md): what a newcomer
// reads in `go doc -all .`.
const (
	maxRootNames     = 100
	maxEngineMethods = 20
)

// TestTheDoorIsThin: the root package exports at most maxRootNames names
// — functions, methods, types, constants and variables, as `go doc -all .`
// lists them — and Engine has at most maxEngineMethods methods; and no
// exported type of the SDK's packages is an alias, so `go doc` shows the
// fields and methods of every type a user handles from the package the
// user imports.
func TestTheDoorIsThin(t *testing.T) {
	t.Parallel()
	for _, dir := range sdkDirs {
		d := docOf(t, dir)
		names, methods := 0, map[string]int{}
		values := func(vs []*doc.Value) {
			for _, v := range vs {
				names += len(v.Names)
			}
		}
		values(d.Consts)
		values(d.Vars)
		names += len(d.Funcs)
		for _, typ := range d.Types {
			names++
			if typ.Decl.Specs[0].(*ast.TypeSpec).Assign.IsValid() {
				t.Errorf("%s: type %s is an alias: go doc shows none of its fields or methods", dir, typ.Name)
			}
			values(typ.Consts)
			values(typ.Vars)
			names += len(typ.Funcs) + len(typ.Methods)
			methods[typ.Name] = len(typ.Methods)
		}
		if dir != "." {
			continue
		}
		if names > maxRootNames {
			t.Errorf("the root package exports %d names; the door holds at most %d", names, maxRootNames)
		}
		if methods["Engine"] > maxEngineMethods {
			t.Errorf("Engine has %d methods; at most %d", methods["Engine"], maxEngineMethods)
		}
		t.Logf("root: %d names, Engine %d methods", names, methods["Engine"])
	}
}

func docOf(t *testing.T, dir string) *doc.Package {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		return doc.New(p, dir, 0)
	}
	t.Fatalf("no package in %s", dir)
	return nil
}
