package policy_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The adapters whose goroutines, timers and processes the footprint
// inventory of docs/security.md accounts for.
var inventoried = []string{"internal/proxy", "internal/netcap", "internal/server", "cmd/mcpx-policy"}

// footprintSection is the section of docs/security.md that holds the
// inventory.
func footprintSection(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "### Every peer's footprint is bounded")
	if start < 0 {
		t.Fatal(`docs/security.md has no section "Every peer's footprint is bounded"`)
	}
	end := strings.Index(doc[start+1:], "\n## ")
	if end < 0 {
		t.Fatal("the footprint section has no end")
	}
	return doc[start : start+1+end]
}

// spawnSites lists every go statement, time.AfterFunc and process start
// (exec.Command, exec.CommandContext, os.StartProcess) in the non-test Go
// files of dirs, each as "KIND FILE:FUNC" (FUNC with its receiver type),
// once per site.
func spawnSites(t *testing.T, dirs []string) []string {
	t.Helper()
	var sites []string
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			rel := filepath.ToSlash(filepath.Join(dir, filepath.Base(path)))
			for _, decl := range file.Decls {
				fd, ok := decl.(*ast.FuncDecl)
				if !ok {
					continue
				}
				site := rel + ":" + funcName(fd)
				ast.Inspect(fd, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.GoStmt:
						sites = append(sites, "go "+site)
					case *ast.CallExpr:
						sel, ok := x.Fun.(*ast.SelectorExpr)
						if !ok {
							break
						}
						pkg, ok := sel.X.(*ast.Ident)
						if !ok {
							break
						}
						switch pkg.Name + "." + sel.Sel.Name {
						case "time.AfterFunc":
							sites = append(sites, "AfterFunc "+site)
						case "exec.Command", "exec.CommandContext", "os.StartProcess":
							sites = append(sites, "exec "+site)
						}
					}
					return true
				})
			}
		}
	}
	slices.Sort(sites)
	return sites
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

// inventoryRow is a row of the goroutines table: | kind | `site` | … |.
var inventoryRow = regexp.MustCompile("(?m)^\\| (go|AfterFunc|exec) \\| `([^`]+)` \\|")

// TestFootprintInventory: every go statement, time.AfterFunc and process
// start of the adapters is a row of the inventory in docs/security.md
// ("Every peer's footprint is bounded"), which says what bounds how many
// there are, and every row is such a site: a goroutine per message cannot
// come in unaccounted for.
func TestFootprintInventory(t *testing.T) {
	t.Parallel()
	section := footprintSection(t)
	var listed []string
	for _, m := range inventoryRow.FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1]+" "+m[2])
	}
	slices.Sort(listed)
	found := spawnSites(t, inventoried)
	if len(found) == 0 {
		t.Fatal("no site found: the scan is broken")
	}
	missing, stale := diff(found, listed), diff(listed, found)
	for _, s := range missing {
		t.Errorf("%s starts a goroutine, a timer or a process that docs/security.md's footprint inventory does not list: add a row saying what bounds it", s)
	}
	for _, s := range stale {
		t.Errorf("docs/security.md's footprint inventory lists %s, which the code does not have (any more)", s)
	}
}

// diff is the multiset a minus b (both sorted).
func diff(a, b []string) []string {
	count := map[string]int{}
	for _, s := range b {
		count[s]++
	}
	var out []string
	for _, s := range a {
		if count[s] > 0 {
			count[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

// TestFootprintTestsExist: every test the footprint section names is a
// test of the repository.
func TestFootprintTestsExist(t *testing.T) {
	t.Parallel()
	section := footprintSection(t)
	names := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(section, -1)
	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(raw), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !defined[n[1]] {
			t.Errorf("docs/security.md's footprint section names %s, which is no test of the repository", n[1])
		}
	}
	if len(names) < 10 {
		t.Fatal(fmt.Sprintf("only %d tests named: the scan is broken", len(names)))
	}
}
