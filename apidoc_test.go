package mcpxpolicy_test

import (
	"go/ast"
	"go/doc"
	"strings"
	"testing"
)

// TestEveryExportedNameIsDocumented: `go doc` of the SDK's packages
// (sdkDirs) reads as a complete API — every
// exported type, function, method, constant and variable (or its group)
// has a doc comment, and so does each package.
func TestEveryExportedNameIsDocumented(t *testing.T) {
	t.Parallel()
	for _, dir := range sdkDirs {
		{
			d := docOf(t, dir)
			need := func(what, text string) {
				if strings.TrimSpace(text) == "" {
					t.Errorf("%s: %s has no doc comment", dir, what)
				}
			}
			need("package "+d.Name, d.Doc)
			values := func(vs []*doc.Value) {
				for _, v := range vs {
					need(strings.Join(v.Names, ", "), v.Doc)
				}
			}
			funcs := func(prefix string, fs []*doc.Func) {
				for _, f := range fs {
					need(prefix+f.Name, f.Doc)
				}
			}
			values(d.Consts)
			values(d.Vars)
			funcs("", d.Funcs)
			for _, typ := range d.Types {
				need("type "+typ.Name, typ.Doc)
				values(typ.Consts)
				values(typ.Vars)
				funcs("", typ.Funcs)
				funcs(typ.Name+".", typ.Methods)
				if it, ok := typ.Decl.Specs[0].(*ast.TypeSpec).Type.(*ast.InterfaceType); ok {
					for _, m := range it.Methods.List {
						if len(m.Names) > 0 && m.Names[0].IsExported() {
							need(typ.Name+"."+m.Names[0].Name, m.Doc.Text())
						}
					}
				}
			}
		}
	}
}
