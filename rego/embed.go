// Package rego embeds the static policy so the engine and the bundle writer
// ship exactly the files `opa test rego/` runs. Tests (_test.rego) and test
// fixtures (mcpx/testdata) are excluded.
package rego

import (
	"embed"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed mcpx/*.rego mcpx/lib/*.rego mcpx/steps/*.rego
var files embed.FS

// Modules returns the static policy as file name → Rego source, with names
// relative to rego/ (for example "mcpx/steps/rules.rego").
func Modules() map[string]string {
	out := map[string]string{}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "_test.rego") || path.Ext(p) != ".rego" {
			return err
		}
		b, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = string(b)
		return nil
	})
	if err != nil {
		panic("rego: embedded policy unreadable: " + err.Error()) // cannot happen: embed.FS is in memory
	}
	return out
}

// Names returns the module names of Modules in lexical order.
func Names() []string {
	m := Modules()
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CompileGuardFile is the module that keeps OPA's type checker linear in
// the size of a bundle (its comment says how): the policy ships it, and
// every other compile of Rego in this module (the engine's, the rule
// examples') adds the same file, never a copy of it.
const CompileGuardFile = "mcpx/lib/compile_guard.rego"

// CompileGuard returns the source of CompileGuardFile.
func CompileGuard() string {
	b, err := files.ReadFile(CompileGuardFile)
	if err != nil {
		panic("rego: embedded compile guard unreadable: " + err.Error()) // cannot happen: embed.FS is in memory
	}
	return string(b)
}
