package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mcpx/mcpx-policy/internal/statedir"
	"github.com/mcpx/mcpx-policy/internal/trust"
)

// OverridesPackage is the package every operator override file must be in.
const OverridesPackage = "mcpx.overrides"

// loadOverrides reads the override files and folders: each file must parse
// as Rego v1 in package mcpx.overrides. A folder contributes its *.rego
// files (recursively, *_test.rego left out since tests do not ship). The
// same file named twice is loaded once.
func (out *Compiled) loadOverrides(refs []overrideRef, c *collector) []Warning {
	var warnings []Warning
	seen := map[string]bool{}
	used := map[string]bool{}
	for _, ref := range refs {
		info, err := os.Stat(ref.path)
		if err != nil {
			c.add(ref.at.file, ref.at.line, ref.at.path, "override %s: %v", ref.path, unwrapPathError(err))
			continue
		}
		files := []string{ref.path}
		if info.IsDir() {
			files = files[:0]
			err := filepath.WalkDir(ref.path, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.IsDir() {
					// whoever could write a folder could add a file to it
					if _, err := trust.CheckTrustedDir(p); err != nil {
						var se *statedir.Error
						if errors.As(err, &se) && se.Hint != "" {
							return fmt.Errorf("%w (%s)", se, se.Hint)
						}
						return err
					}
				}
				if !d.IsDir() && strings.HasSuffix(p, ".rego") && !strings.HasSuffix(p, "_test.rego") {
					files = append(files, p)
				}
				return nil
			})
			if err != nil {
				c.add(ref.at.file, ref.at.line, ref.at.path, "override folder %s: %v", ref.path, err)
				continue
			}
			sort.Strings(files)
			if len(files) == 0 {
				warnings = append(warnings, Warning{File: ref.at.file, Line: ref.at.line, Path: ref.at.path,
					Msg: "override folder " + ref.path + " holds no .rego files"})
			}
		}
		for _, f := range files {
			abs, err := filepath.Abs(f)
			if err != nil {
				abs = f
			}
			if seen[abs] {
				continue
			}
			seen[abs] = true
			src, line, err := readFileLimited(f, MaxFileSize)
			if err != nil {
				c.add(ref.at.file, ref.at.line, ref.at.path, "override %s: %v", f, unwrapPathError(err))
				continue
			}
			if line > 0 {
				c.add(ref.at.file, ref.at.line, ref.at.path, "override %s is larger than the limit of %d bytes (2 MiB) for one file (line %d goes past it)", f, MaxFileSize, line)
				continue
			}
			mod, err := ast.ParseModuleWithOpts(f, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1})
			if err != nil {
				c.add(ref.at.file, ref.at.line, ref.at.path, "override %s does not parse as Rego v1: %s", f, regoError(err))
				continue
			}
			if got := strings.TrimPrefix(mod.Package.Path.String(), "data."); got != OverridesPackage {
				c.add(ref.at.file, ref.at.line, ref.at.path, "override %s is package %s, want package %s", f, got, OverridesPackage)
				continue
			}
			out.Modules[moduleName(filepath.Base(f), used)] = string(src)
		}
	}
	return warnings
}

// moduleName is "overrides/<base>", made unique with a number when two
// override files share a base name.
func moduleName(base string, used map[string]bool) string {
	stem := strings.TrimSuffix(base, ".rego")
	name := "overrides/" + stem + ".rego"
	for i := 2; used[name]; i++ {
		name = "overrides/" + stem + "_" + strconv.Itoa(i) + ".rego"
	}
	used[name] = true
	return name
}

// regoError renders OPA parse errors one line each, without the code
// excerpt OPA appends.
func regoError(err error) string {
	var errs ast.Errors
	if !errors.As(err, &errs) {
		return strings.SplitN(err.Error(), "\n", 2)[0]
	}
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Message
		if e.Location != nil {
			parts[i] = fmt.Sprintf("%s:%d: %s", e.Location.File, e.Location.Row, e.Message)
		}
	}
	return strings.Join(parts, "; ")
}
