package policy_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// binDir holds the mcpx-policy binary built once for the CLI scripts.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpx-policy-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "mcpx-policy"), "../cmd/mcpx-policy")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mcpx-policy:", err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// TestCLI runs the testscript files in testdata/script against the built
// binary. `mcpx N args…` runs mcpx-policy and requires exit status N.
func TestCLI(t *testing.T) {
	t.Parallel()
	root, _ := filepath.Abs("..")
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", binDir+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("ROOT", root)
			env.Setenv("MCPX_POLICY_STATE_DIR", filepath.Join(env.WorkDir, "state"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"mcpx": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) < 1 {
					ts.Fatalf("usage: mcpx EXITCODE args…")
				}
				want, err := strconv.Atoi(args[0])
				if err != nil {
					ts.Fatalf("mcpx: exit code %q: %v", args[0], err)
				}
				err = ts.Exec("mcpx-policy", args[1:]...)
				got := 0
				var ee *exec.ExitError
				switch {
				case errors.As(err, &ee):
					got = ee.ExitCode()
				case err != nil:
					ts.Fatalf("mcpx-policy: %v", err)
				}
				if got != want {
					ts.Fatalf("mcpx-policy exited %d, want %d", got, want)
				}
			},
			// grab NAME REGEXP sets $NAME to the first group of REGEXP's
			// first match (multi-line) in the last command's stdout, then
			// stderr: an id the CLI printed, for the next commands.
			"grab": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: grab NAME REGEXP")
				}
				re := regexp.MustCompile("(?m)" + args[1])
				for _, name := range []string{"stdout", "stderr"} {
					if m := re.FindStringSubmatch(ts.ReadFile(name)); len(m) > 1 {
						ts.Setenv(args[0], m[1])
						return
					}
				}
				ts.Fatalf("grab: no match for %q", args[1])
			},
		},
		Condition: func(cond string) (bool, error) {
			return cond == runtime.GOOS, nil
		},
	})
}
