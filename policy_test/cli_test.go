package policy_test

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// binDir holds the binaries the tests run, mcpx-policy and the Go test
// servers (goServer): all built once per test process by cachedBuild.
var binDir string

// testBinaries are the Go packages TestMain builds, by the name each gets
// in binDir: mcpx-policy and every Go MCP server of e2e/ a test runs
// (goServer).
var testBinaries = map[string]string{
	"../cmd/mcpx-policy":   "mcpx-policy",
	"../e2e/exitserver":    "server-exitserver",
	"../e2e/hostileserver": "server-hostileserver",
	"../e2e/notesserver":   "server-notesserver",
	"../e2e/scriptserver":  "server-scriptserver",
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcpx-policy-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	if err := cachedBuild(testBinaries); err != nil {
		fmt.Fprintln(os.Stderr, "building the test binaries:", err)
		os.Exit(1)
	}
	waitersOverlap()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// waitersOverlap runs twice as many parallel tests as go test would
// (-parallel defaults to GOMAXPROCS), unless -parallel was given. This
// package's tests spend most of their time waiting — for the processes
// they start (proxies, servers, node, chromium, stock OPA), for a server
// to listen, for an approval to expire, for a deadline to stop a runaway
// decision — and a test that waits holds its slot: with two slots on two
// cores, a core often sat idle while tests that had work queued behind
// the waiting ones.
func waitersOverlap() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(2*runtime.GOMAXPROCS(0)))
	}
}

// cachedBuild builds the Go packages of binaries (package → name) into
// the repository's ignored bin/test/ with one go command, and copies each
// binary to binDir under its name. The go command finds a binary left by
// an earlier run up to date and skips the link (4 s of CPU for
// mcpx-policy), and one command checks them all (each go command spends
// half a second of CPU before it builds anything); the copies keep a
// later run's relink from writing a file this run executes. Test
// processes of one checkout build one at a time (a lock file beside the
// binaries).
func cachedBuild(binaries map[string]string) error {
	cache, err := filepath.Abs(filepath.Join("..", "bin", "test"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(cache, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	// go build -o DIR/ names each binary after its package's folder
	args := []string{"build", "-o", cache + string(filepath.Separator)}
	for _, pkg := range slices.Sorted(maps.Keys(binaries)) {
		args = append(args, pkg)
	}
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%v\n%s", err, out)
	}
	for pkg, name := range binaries {
		b, err := os.ReadFile(filepath.Join(cache, filepath.Base(pkg)))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(binDir, name), b, 0o755); err != nil {
			return err
		}
	}
	return nil
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
