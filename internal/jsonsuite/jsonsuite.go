// Package jsonsuite reads the official JSON-Schema-Test-Suite (draft
// 2020-12) for tests. The suite comes through the Go module proxy, pinned:
// the module github.com/google/jsonschema-go at Version ships the draft
// 2020-12 files of the suite at commit SuiteCommit under
// jsonschema/testdata/draft2020-12 (its README there names the commit and
// the files it left out: content.json, format.json, vocabulary.json and
// the optional folder). The go command fetches the module into its module
// cache (`go mod download`, which `make test` and .ci/run run); the suite
// is never copied into this repository.
package jsonsuite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// Module and Version name the module the suite comes in; go.sum holds its
// checksum, so the bytes are the ones pinned.
const (
	Module  = "github.com/google/jsonschema-go"
	Version = "v0.4.3"
)

// SuiteCommit is the JSON-Schema-Test-Suite commit Module@Version copied
// its draft 2020-12 files from
// (https://github.com/json-schema-org/JSON-Schema-Test-Suite/tree/83e866b46c9f9e7082fd51e83a61c5f2145a1ab7/tests/draft2020-12).
const SuiteCommit = "83e866b46c9f9e7082fd51e83a61c5f2145a1ab7"

// Group is one schema of a suite file with its cases.
type Group struct {
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Tests       []struct {
		Description string          `json:"description"`
		Data        json.RawMessage `json:"data"`
		Valid       bool            `json:"valid"`
	} `json:"tests"`
}

// File is one suite file: its base name, its bytes and its groups.
type File struct {
	Name   string
	Raw    []byte
	Groups []Group
}

var located struct {
	once sync.Once
	dir  string
	err  error
}

// Dir is the suite's draft 2020-12 folder in the module cache: the go
// command downloads Module@Version there when it is missing (once per
// process) and says where it is.
func Dir() (string, error) {
	located.once.Do(func() {
		located.dir, located.err = download()
	})
	return located.dir, located.err
}

func download() (string, error) {
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gocmd); err != nil {
		gocmd = "go"
	}
	cmd := exec.Command(gocmd, "mod", "download", "-json", Module+"@"+Version)
	cmd.Dir = moduleRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); jerr == nil && mod.Error != "" {
		err = fmt.Errorf("%s", mod.Error)
	}
	if err != nil || mod.Dir == "" {
		return "", fmt.Errorf("cannot fetch the JSON Schema suite (go mod download %s@%s: %v %s); it comes from the Go module proxy, so the first run needs the network or GOPROXY",
			Module, Version, err, strings.TrimSpace(stderr.String()))
	}
	return filepath.Join(mod.Dir, "jsonschema", "testdata", "draft2020-12"), nil
}

// moduleRoot is the folder of this repository's go.mod.
func moduleRoot() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "..", "..")
}

// Files reads every file of the suite, in name order; tb fails when the
// suite cannot be fetched, holds no file or one cannot be read.
func Files(tb testing.TB) []File {
	tb.Helper()
	dir, err := Dir()
	if err != nil {
		tb.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no suite files under %s: %v", dir, err)
	}
	files := make([]File, len(names))
	for i, name := range names {
		raw, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		files[i] = File{Name: filepath.Base(name), Raw: raw}
		if err := json.Unmarshal(raw, &files[i].Groups); err != nil {
			tb.Fatalf("%s: %v", files[i].Name, err)
		}
	}
	return files
}

// RuleHeader is the config text before a list of Rule items: one server
// "s" whose argument rules they are.
const RuleHeader = "version: 1\npolicy:\n  write: allow\n  unknownArgs: off\nservers:\n  s:\n    argumentRules:\n"

// Rule is one suite group as an argument rule of server "s": the rule's
// YAML list item (under RuleHeader), the tool it applies to (named after
// the file and the group's index), and the group's cases as calls' values
// of the rule's argument "v".
type Rule struct {
	YAML  string
	Tool  string
	Cases []Case
}

// Case is one case of a suite group: its name (file/group/case), its data
// decoded with json.Number for numbers (so 1.0 and 1 stay as written),
// and whether the suite holds it valid.
type Case struct {
	Name  string
	Data  any
	Valid bool
}

// Rules is every group of the suite as an argument rule (Files' order);
// tb fails when the suite cannot be read.
func Rules(tb testing.TB) []Rule {
	tb.Helper()
	var rules []Rule
	for _, f := range Files(tb) {
		for gi, g := range f.Groups {
			tool := strings.NewReplacer("-", "_", ".", "_").Replace(fmt.Sprintf("g%d_%s", gi, strings.TrimSuffix(f.Name, ".json")))
			r := Rule{YAML: fmt.Sprintf("      - id: %s\n        tools: [%q]\n        argument: v\n        schema: %s\n", tool, tool, g.Schema), Tool: tool}
			for _, c := range g.Tests {
				var v any
				dec := json.NewDecoder(bytes.NewReader(c.Data))
				dec.UseNumber()
				if err := dec.Decode(&v); err != nil {
					tb.Fatalf("%s/%s/%s: %v", f.Name, g.Description, c.Description, err)
				}
				r.Cases = append(r.Cases, Case{Name: f.Name + "/" + g.Description + "/" + c.Description, Data: v, Valid: c.Valid})
			}
			rules = append(rules, r)
		}
	}
	return rules
}
