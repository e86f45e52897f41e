package policy_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrintedApproveCommandRuns: the commands eval prints for an ask it put
// on hold — approve, decline and "then", the eval that runs the call with
// the approval — are the ones that work for the eval that printed them,
// given the state dir "state dir" relative to where it ran, by --state-dir
// or only by MCPX_POLICY_STATE_DIR, and its config and call file
// relative: pasted from another directory, in a shell without
// MCPX_POLICY_STATE_DIR, approve answers the request and "then" runs the
// call once; decline declines it. `approvals`, given the state dir the
// same way, lists the request with the same commands, and the list
// command `approve` names for an unknown request lists it.
func TestPrintedApproveCommandRuns(t *testing.T) {
	t.Parallel()
	const config = "version: 1\npolicy:\n  write: ask\n"
	const call = `{"server": "fs", "tool": {"name": "write_file", "annotations": {"readOnlyHint": false}}, "args": {"path": "/a"}}`
	// printed runs eval in dir as how says and returns the three commands
	// it prints for the ask.
	printed := func(t *testing.T, dir string, env, flags []string) (approve, decline, then string) {
		t.Helper()
		args := append(append([]string{"eval", "--config", "mcpx-policy.yaml"}, flags...), "call.json")
		code, _, stderr := cliEnvIn(t, dir, env, args...)
		line := func(lead string) string {
			c, ok := lineAfter(stderr, "\n"+lead)
			if code != 3 || !ok {
				t.Fatalf("eval of an ask: exit %d, no %q line\n%s", code, lead, stderr)
			}
			return c
		}
		return line("  approve: "), line("  decline: "), line("  then:    ")
	}

	for _, how := range stateDirWays {
		t.Run("eval, "+how.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": config, "call.json": call})
			state := " --state-dir '" + filepath.Join(dir, "state dir") + "'"

			approve, decline, then := printed(t, dir, how.env, how.flags)
			for _, c := range []string{approve, decline} {
				if !strings.HasSuffix(c, state) {
					t.Errorf("eval prints %q, without its state dir", c)
				}
			}
			if want := "mcpx-policy eval --config " + filepath.Join(dir, "mcpx-policy.yaml") + state + " --approval "; !strings.HasPrefix(then, want) ||
				!strings.HasSuffix(then, " "+filepath.Join(dir, "call.json")) {
				t.Errorf("eval prints %q; want %s… and the call file, absolute", then, want)
			}
			if out := paste(t, approve); !strings.HasPrefix(out, "approved ") {
				t.Fatalf("the printed approve command approved nothing:\n%s", out)
			}
			if out := paste(t, then); !strings.Contains(out, filepath.Join(dir, "call.json")+": allow\n") {
				t.Fatalf("the printed then command did not run the approved call:\n%s", out)
			}

			approve, decline, then = printed(t, dir, how.env, how.flags)
			code, stdout, stderr := cliEnvIn(t, dir, how.env, append([]string{"approvals"}, how.flags...)...)
			if want := "  approve: " + approve + "\n  decline: " + decline + "\n"; code != 0 || !strings.Contains(stdout, want) {
				t.Errorf("approvals (exit %d) does not list\n%s\n%s%s", code, want, stdout, stderr)
			}
			code, _, stderr = cliEnvIn(t, dir, how.env, append([]string{"approve", "0123456789abcdef0123456789abcdef", "--decline"}, how.flags...)...)
			list, ok := lineAfter(stderr, "mcpx-policy: hint: list the waiting requests with: ")
			if code != 1 || !ok {
				t.Fatalf("approve of no such request: exit %d\n%s", code, stderr)
			}
			if want := "mcpx-policy approvals" + state; list != want {
				t.Errorf("approve names %q; want %q", list, want)
			}
			if out := paste(t, list); !strings.Contains(out, "\n  decline: "+decline+"\n") {
				t.Errorf("the printed list command does not list the request:\n%s", out)
			}
			if out := paste(t, decline); !strings.HasPrefix(out, "declined approval ") {
				t.Fatalf("the printed decline command declined nothing:\n%s", out)
			}
			id := then[strings.Index(then, " --approval ")+len(" --approval "):]
			id, _, _ = strings.Cut(id, " ")
			args := append(append([]string{"eval", "--config", "mcpx-policy.yaml"}, how.flags...), "--approval", id, "call.json")
			if code, _, stderr := cliEnvIn(t, dir, how.env, args...); code != 2 || !strings.Contains(stderr, "ConfirmationDeclined") {
				t.Fatalf("eval with the declined approval: exit %d; want 2 (ConfirmationDeclined)\n%s", code, stderr)
			}
		})
	}
}

// TestDemoPrintsCommandsThatRun: eval run by a path — bin/mcpx-policy, as
// make demo runs it before anything is installed — prints approval
// commands that name the binary by that path, made absolute, so that
// they run as printed from another directory in a shell that has no
// mcpx-policy on its PATH.
func TestDemoPrintsCommandsThatRun(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(filepath.Join(binDir, "mcpx-policy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "mcpx-policy"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	noBin := "PATH=/usr/bin:/bin" // no mcpx-policy on it
	eval := exec.Command("bin/mcpx-policy", "eval", "--config", filepath.Join(root, "examples", "mcpx-policy.yaml"),
		"--state-dir", "tmp/demo", filepath.Join(root, "examples", "calls", "2-write-asks.json"))
	eval.Dir = dir
	eval.Env = append(cleanEnv(), noBin)
	var stderr strings.Builder
	eval.Stderr = &stderr
	err = eval.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("eval of an ask: %v\n%s", err, stderr.String())
	}
	approve, ok1 := lineAfter(stderr.String(), "\n  approve: ")
	then, ok2 := lineAfter(stderr.String(), "\n  then:    ")
	if !ok1 || !ok2 {
		t.Fatalf("no approve and then lines:\n%s", stderr.String())
	}
	self := filepath.Join(dir, "bin", "mcpx-policy") + " "
	if !strings.HasPrefix(approve, self) || !strings.HasPrefix(then, self) {
		t.Errorf("eval run as bin/mcpx-policy prints\n%s\n%s\nwant each to start with %s", approve, then, self)
	}
	run := func(command string) string {
		sh := exec.Command("sh", "-c", command)
		sh.Dir = t.TempDir()
		sh.Env = append(cleanEnv(), noBin)
		out, err := sh.CombinedOutput()
		if err != nil {
			t.Fatalf("the printed command %q: %v\n%s", command, err, out)
		}
		return string(out)
	}
	if out := run(approve); !strings.HasPrefix(out, "approved ") {
		t.Fatalf("the printed approve command approved nothing:\n%s", out)
	}
	if out := run(then); !strings.Contains(out, ": allow\n") {
		t.Errorf("the printed then command did not run the approved call:\n%s", out)
	}
}
