package policy_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/decision"
)

// loseWrite records an unknown outcome for a write_file call to fs in the
// ledger of state, as a daemon that lost the answer does.
func loseWrite(t *testing.T, cfg, state string) {
	t.Helper()
	eng, err := mcpxpolicy.New(context.Background(), mcpxpolicy.Options{ConfigPaths: []string{cfg}, Env: []string{}, StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	w, err := eng.Writes().Begin(decision.Call{Server: "fs", Tool: writeFile, Args: map[string]any{"path": "/a"}, Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	w.Sent()
	if err := w.Unknown("server exited"); err != nil {
		t.Fatal(err)
	}
}

// clearReason ends every printed clear command: the --reason an operator
// replaces with what the server showed, so the ledger keeps why it was
// cleared.
const clearReason = " --reason '<what you found on the server>'"

// paste runs a printed command as a person pastes it: in a POSIX shell,
// from another directory, without MCPX_POLICY_* in the environment (env
// adds to it), and returns what it printed. Its default state dir is an
// empty one of its own, not the user's: a command that does not name the
// state dir it should finds nothing there.
func paste(t *testing.T, command string, env ...string) string {
	t.Helper()
	sh := exec.Command("sh", "-c", command)
	sh.Dir = t.TempDir()
	sh.Env = append(append(cleanEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "XDG_STATE_HOME="+t.TempDir()), env...)
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("the printed command %q: %v\n%s", command, err, out)
	}
	return string(out)
}

// reasonOf is the message and details of the reason with code in a
// decision document.
func reasonOf(t *testing.T, doc []byte, code string) (string, map[string]any) {
	t.Helper()
	var d struct {
		Reasons []struct {
			Code    string
			Message string
			Details map[string]any
		}
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatalf("decision %s: %v", doc, err)
	}
	for _, r := range d.Reasons {
		if r.Code == code {
			return r.Message, r.Details
		}
	}
	t.Fatalf("no %s in %s", code, doc)
	return "", nil
}

// commandDetail is details[key] of the reason with code in a decision
// document, checking that its message ends with lead and the same command.
func commandDetail(t *testing.T, doc []byte, code, key, lead string) string {
	t.Helper()
	msg, details := reasonOf(t, doc, code)
	c, _ := details[key].(string)
	if c == "" || !strings.HasSuffix(msg, lead+c) {
		t.Fatalf("details.%s %q is not the command the message names: %s", key, c, msg)
	}
	return c
}

// clearDetail is details.clear of the UnknownOutcomePending reason.
func clearDetail(t *testing.T, doc []byte) string {
	t.Helper()
	return commandDetail(t, doc, "UnknownOutcomePending", "clear", "clears them with: ")
}

// cliIn runs the built binary with args in dir, in an environment without
// MCPX_POLICY_*: its exit code, stdout and stderr.
func cliIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return cliEnvIn(t, dir, nil, args...)
}

// cliEnvIn is cliIn with env added to the environment.
func cliEnvIn(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "mcpx-policy"), args...)
	cmd.Dir = dir
	// mcpx-policy on the PATH, as for a person who installed it: the
	// commands it prints name it so
	cmd.Env = append(append(cleanEnv(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH")), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// stateDirWays are the ways a command (eval, writes, pins, approvals) is
// given the state dir "state dir", relative to where it runs: by
// --state-dir, or by the environment only. name ends its subtests' names.
var stateDirWays = []struct {
	name       string
	env, flags []string
}{
	{"--state-dir relative", nil, []string{"--state-dir", "state dir"}},
	{"state dir from the environment", []string{"MCPX_POLICY_STATE_DIR=state dir"}, nil},
}

// serveStateDirs are the ways serve is given its state dir: by
// --state-dir, or by the environment only.
var serveStateDirs = []struct {
	name  string
	start func(t *testing.T, cfg, state string) *serveProcess
}{
	{"serve", func(t *testing.T, cfg, state string) *serveProcess {
		return runServe(t, nil, "--config", cfg, "--state-dir", state)
	}},
	{"serve, state dir from the environment", func(t *testing.T, cfg, state string) *serveProcess {
		return runServe(t, []string{"MCPX_POLICY_STATE_DIR=" + state}, "--config", cfg)
	}},
}

// TestPrintedClearCommandRuns: the command an UnknownOutcomePending deny
// tells the operator to run is the one that works for the process that
// decided — `eval` (text and JSON) and `serve` given a --state-dir, the
// state dir relative to where they ran, or given it only by
// MCPX_POLICY_STATE_DIR — so pasting it from another directory, in a shell
// without MCPX_POLICY_STATE_DIR, clears the entry. So does the clear
// command `writes` prints for each entry, given the state dir in the same
// two ways, and the list command `writes clear` names when it finds no
// such entry lists the entry.
// The state dirs are Go's temp dirs, whose names look random enough to be
// redacted anywhere else in an output: the command is kept whole.
func TestPrintedClearCommandRuns(t *testing.T) {
	t.Parallel()
	const config = "version: 1\npolicy:\n  write: allow\n"
	const write = `{"server": "fs", "tool": {"name": "write_file", "annotations": {"readOnlyHint": false}}, "args": {"path": "/a"}}`
	cleared := func(t *testing.T, state, out string) {
		t.Helper()
		if !strings.Contains(out, "1 write(s) cleared") {
			t.Fatalf("the printed command cleared nothing:\n%s", out)
		}
		if code, stdout, _ := cli(t, "writes", "--state-dir", state); code != 0 || strings.Contains(stdout, "write_file") {
			t.Fatalf("writes after the clear (exit %d):\n%s", code, stdout)
		}
	}

	for _, how := range stateDirWays {
		t.Run("eval text, "+how.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": config, "write.json": write})
			state := filepath.Join(dir, "state dir")
			loseWrite(t, filepath.Join(dir, "mcpx-policy.yaml"), state)
			args := append(append([]string{"eval", "--config", "mcpx-policy.yaml"}, how.flags...), "write.json")
			code, _, stderr := cliEnvIn(t, dir, how.env, args...)
			clear, ok := lineAfter(stderr, "    clear with: ")
			if code != 2 || !ok {
				t.Fatalf("eval of a write after a lost one: exit %d\n%s", code, stderr)
			}
			if want := "mcpx-policy writes clear fs --seen <seen> --state-dir '" + state + "'" + clearReason; seenRE.ReplaceAllString(clear, "--seen <seen>") != want {
				t.Errorf("eval prints %q; want %q", clear, want)
			}
			cleared(t, state, paste(t, clear+" --reason pasted"))
		})
	}

	t.Run("eval json", func(t *testing.T) {
		t.Parallel()
		dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": config, "write.json": write})
		state := filepath.Join(dir, "state")
		loseWrite(t, filepath.Join(dir, "mcpx-policy.yaml"), state)
		code, stdout, stderr := cliIn(t, dir, "eval", "--config", "mcpx-policy.yaml", "--state-dir", "state", "--format", "json", "write.json")
		if code != 2 {
			t.Fatalf("eval --format json: exit %d\n%s", code, stderr)
		}
		cleared(t, state, paste(t, clearDetail(t, []byte(stdout))))
	})

	for _, how := range serveStateDirs {
		t.Run(how.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": config})
			state := filepath.Join(dir, "state")
			cfg := filepath.Join(dir, "mcpx-policy.yaml")
			loseWrite(t, cfg, state)
			p := how.start(t, cfg, state)
			status, _, body := p.post(t, "/v1/decide", write)
			if status != 200 {
				t.Fatalf("decide: %d %s", status, body)
			}
			clear := clearDetail(t, body)
			if !strings.HasSuffix(clear, " --state-dir "+state+clearReason) {
				t.Errorf("serve's decision names %q, without its state dir", clear)
			}
			cleared(t, state, paste(t, clear))
		})
	}

	for _, how := range stateDirWays {
		t.Run("writes, "+how.name, func(t *testing.T) {
			t.Parallel()
			dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": config})
			state := filepath.Join(dir, "state dir")
			loseWrite(t, filepath.Join(dir, "mcpx-policy.yaml"), state)

			code, _, stderr := cliEnvIn(t, dir, how.env, append([]string{"writes", "clear", "fs", "--id", "nope"}, how.flags...)...)
			list, ok := lineAfter(stderr, "mcpx-policy: hint: list them with: ")
			if code != 1 || !ok {
				t.Fatalf("writes clear of no such entry: exit %d\n%s", code, stderr)
			}
			if want := "mcpx-policy writes --state-dir '" + state + "'"; list != want {
				t.Errorf("writes clear names %q; want %q", list, want)
			}
			if out := paste(t, list); !strings.Contains(out, "\twrite_file\t") {
				t.Errorf("the printed list command does not list the entry:\n%s", out)
			}

			code, stdout, stderr := cliEnvIn(t, dir, how.env, append([]string{"writes"}, how.flags...)...)
			clear, ok := lineAfter(stdout, "clear: ")
			if code != 0 || !ok {
				t.Fatalf("writes: exit %d\n%s%s", code, stdout, stderr)
			}
			if !strings.HasSuffix(clear, " --state-dir '"+state+"'"+clearReason) {
				t.Errorf("writes prints %q, without its state dir, absolute", clear)
			}
			cleared(t, state, paste(t, clear))
		})
	}
}

// seenRE is the --seen of a printed clear command: the token of the
// entries the deny showed (a hash of their ids).
var seenRE = regexp.MustCompile(`--seen [0-9a-f]{16}`)

// lineAfter is the rest of the line of out that follows prefix (a printed
// command after its label), and whether prefix is there.
func lineAfter(out, prefix string) (string, bool) {
	_, rest, ok := strings.Cut(out, prefix)
	line, _, _ := strings.Cut(rest, "\n")
	return line, ok
}
