package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestDocs runs the commands shown in README.md and docs/**/*.md and checks
// what they print against what the page shows, so the docs cannot drift
// from the code. The rules (which blocks run, the <!-- doc-test: … -->
// markers, /tmp/, long-running commands) are in docs/contributing.md.
func TestDocs(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	err = filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := testNames(t, root)
	// The pages whose commands write only in their own tmp/ (writesOnlyTmp)
	// share one copy of the repository, each through a folder of links
	// with a tmp/ of its own: 814 files copied once, not once per page
	// (a quarter of a second of CPU each).
	sharedDir := filepath.Join(t.TempDir(), "repo")
	shared := sync.OnceValues(func() (string, error) { return sharedDir, copyRepo(root, sharedDir) })
	for _, page := range pages {
		src, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseDocBlocks(string(src))
		if err != nil {
			t.Errorf("%s: %v", page, err)
			continue
		}
		if !runsAnything(blocks) {
			for _, b := range blocks {
				checkSee(t, page, b, tests)
			}
			continue
		}
		t.Run(page, func(t *testing.T) {
			t.Parallel()
			runDocPage(t, root, page, blocks, tests, shared)
		})
	}
}

// docBlock is one fenced block of a page with the doc-test markers above it.
type docBlock struct {
	line    int    // 1-based line of the opening fence
	info    string // the fence's info string: sh, console, json, text…
	body    string // the content, the fence's indentation removed
	exit    int    // expected exit status of a command block
	role    string // "" (run if sh or console), "stdout", "stderr", "file"
	file    string // for role "file": where to write body
	skip    string // why the block is not run
	see     []string
	except  []string // commands of the block that are not run (with a reason)
	bg      bool     // a server the next blocks talk to: started, not waited for
	markers bool     // whether any marker was given
}

var (
	fenceRE  = regexp.MustCompile("^(\\s*)(```+)\\s*([A-Za-z0-9_+-]*)\\s*$")
	markerRE = regexp.MustCompile(`^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$`)
	// commandLike is the start of an unlabelled block that holds commands:
	// such a block must say sh or console, or it would not be run.
	commandLike = regexp.MustCompile(`^(\$ |(mcpx-policy|go|make|curl|npx|opa|jq) )`)
)

// parseDocBlocks returns the fenced blocks of a Markdown page, each with
// the markers written on the lines right above its fence.
func parseDocBlocks(src string) ([]docBlock, error) {
	lines := strings.Split(src, "\n")
	var out []docBlock
	var pending []string
	for i := 0; i < len(lines); i++ {
		if m := markerRE.FindStringSubmatch(lines[i]); m != nil {
			pending = append(pending, m[1])
			continue
		}
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			if len(pending) > 0 && strings.TrimSpace(lines[i]) != "" {
				return nil, fmt.Errorf("line %d: a doc-test marker must be right above a fenced block", i)
			}
			continue
		}
		indent, fence := m[1], m[2]
		b := docBlock{line: i + 1, info: m[3]}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if strings.TrimSpace(lines[j]) == fence {
				break
			}
			body = append(body, strings.TrimPrefix(lines[j], indent))
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: fenced block never closed", i+1)
		}
		b.body = strings.Join(body, "\n")
		for _, mk := range pending {
			if err := b.mark(mk); err != nil {
				return nil, fmt.Errorf("line %d: marker %q: %v", i, mk, err)
			}
		}
		pending = nil
		if err := b.checkTmp(); err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		switch b.info {
		case "sh", "console":
		case "bash", "shell", "shell-session":
			return nil, fmt.Errorf("line %d: write commands in a ```sh block (a script) or a ```console block ($ lines and their output), not ```%s", i+1, b.info)
		case "":
			if b.role == "" && len(body) > 0 && commandLike.MatchString(body[0]) {
				return nil, fmt.Errorf("line %d: this block starts with a command: label it ```sh or ```console so it is run", i+1)
			}
		}
		out = append(out, b)
		i = j
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("doc-test markers %q at the end of the page belong to no block", pending)
	}
	return out, nil
}

// mark applies one marker (see docs/contributing.md).
func (b *docBlock) mark(m string) error {
	b.markers = true
	key, arg, _ := strings.Cut(m, " ")
	arg = strings.TrimSpace(arg)
	switch key {
	case "exit":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return fmt.Errorf("want exit N")
		}
		b.exit = n
	case "stdout", "stderr":
		b.role = key
	case "file":
		if arg == "" {
			return fmt.Errorf("want file PATH")
		}
		b.role, b.file = "file", arg
	case "skip":
		if arg == "" {
			return fmt.Errorf("a skip says why")
		}
		b.skip = arg
	case "see":
		b.see = strings.Fields(arg)
		if len(b.see) == 0 {
			return fmt.Errorf("want see TestName…")
		}
	case "setup":
		return fmt.Errorf("a hidden setup: show the command in the block, the reader has to run it too")
	case "background":
		b.bg = true
	case "except":
		// except "COMMAND" REASON
		if !strings.HasPrefix(arg, `"`) {
			return fmt.Errorf(`want except "COMMAND" REASON`)
		}
		cmd, reason, ok := strings.Cut(arg[1:], `"`)
		if !ok || cmd == "" || strings.TrimSpace(reason) == "" {
			return fmt.Errorf(`want except "COMMAND" REASON`)
		}
		b.except = append(b.except, cmd)
	default:
		return fmt.Errorf("unknown marker (exit, stdout, stderr, file, skip, see, background, except)")
	}
	return nil
}

// checkTmp refuses a command block (run or not) or a file marker that
// names a fixed path under /tmp/: a reader running the page would write
// it in the temp folder every user of the machine shares, where another
// user's file of that name, or a link planted there, would be used
// instead. Pages use ./tmp/ (ignored by git) or a mktemp -d folder.
func (b docBlock) checkTmp() error {
	const why = "names a fixed path in the shared temp folder /tmp/: use ./tmp/ (ignored by git) or a folder of mktemp -d"
	if b.role == "file" && strings.HasPrefix(b.file, "/tmp/") {
		return fmt.Errorf("file %s %s", b.file, why)
	}
	if (b.info == "sh" || b.info == "console") && b.role == "" {
		cont := false
		for _, l := range strings.Split(b.body, "\n") {
			command := b.info == "sh" || cont || strings.HasPrefix(l, "$ ")
			cont = command && strings.HasSuffix(l, "\\")
			if !command {
				continue // what a command printed
			}
			if tmpRE.MatchString(l) {
				return fmt.Errorf("%q %s", strings.TrimSpace(l), why)
			}
		}
	}
	return nil
}

func (b docBlock) isCommand() bool {
	return (b.info == "sh" || b.info == "console") && b.role == ""
}

func runsAnything(blocks []docBlock) bool {
	for _, b := range blocks {
		if b.isCommand() && b.skip == "" && b.see == nil {
			return true
		}
	}
	return false
}

// testNames lists the Test, Benchmark, Fuzz and Example functions of the
// repository, for the see marker.
func testNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func ((Test|Benchmark|Fuzz|Example)\w*)\(`)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, "_test.go") {
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllStringSubmatch(string(src), -1) {
				names[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func checkSee(t *testing.T, page string, b docBlock, tests map[string]bool) {
	t.Helper()
	for _, name := range b.see {
		if !tests[name] {
			t.Errorf("%s:%d: see %s: no such test, benchmark or fuzz function in the repository", page, b.line, name)
		}
	}
}

// docRun is the state one page's blocks share: a copy of the repository to
// run in, its own /tmp, and the last command's output.
type docRun struct {
	t       *testing.T
	page    string
	repo    string // the copy the commands run in
	tmp     string // stands for /tmp/ in the page
	port    string // stands for the page's port 8181
	env     []string
	last    *docBlock
	skipped bool   // the last command block was not run (skip, see)
	lastOut string // the last command's stdout (console: stdout and stderr)
	lastErr string
}

func runDocPage(t *testing.T, root, page string, blocks []docBlock, tests map[string]bool, shared func() (string, error)) {
	work := t.TempDir()
	r := &docRun{t: t, page: page, repo: filepath.Join(work, "repo"), tmp: filepath.Join(work, "tmp"), port: freePort(t)}
	if writesOnlyTmp(blocks) {
		src, err := shared()
		if err != nil {
			t.Fatal(err)
		}
		if err := linkRepo(src, r.repo); err != nil {
			t.Fatal(err)
		}
		t.Log("writes only in its tmp/: runs in links to the shared copy of the repository")
	} else if err := copyRepo(root, r.repo); err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(work, "gobin")
	for _, d := range []string{r.tmp, gobin, filepath.Join(work, "state")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// Only a page that builds a binary gets one seeded: a seed the page
	// does not rebuild would run stale.
	seeds := map[string]string{}
	for _, b := range blocks {
		if b.isCommand() && strings.Contains(b.body, "make demo") {
			seeds["docs-make-build"] = filepath.Join(r.repo, "bin", "mcpx-policy")
		}
		if b.isCommand() && strings.Contains(b.body, "go install ./cmd/mcpx-policy") {
			seeds["docs-go-install"] = filepath.Join(gobin, "mcpx-policy")
		}
	}
	seedPageBinaries(t, seeds)
	// A page's `go tool opa` runs the OPA go.mod pins, the binary `go tool
	// -n opa` names: asked once per test binary (opaPath), not by each
	// command, where the go command spends 1½ s of CPU finding it built.
	shim := ""
	for _, b := range blocks {
		if b.isCommand() && b.skip == "" && b.see == nil && strings.Contains(b.body, "go tool opa ") {
			shim = goToolOPAShim(t, filepath.Join(work, "goshim"))
			break
		}
	}
	// The page's own binary (README's go install) comes first, then the
	// one TestMain built; the default state dir and TMPDIR are the page's.
	r.env = append(os.Environ(),
		"PATH="+shim+gobin+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GOBIN="+gobin,
		// README's go install builds in a copy of the repository: with
		// -trimpath its packages' cache keys do not name the copy's folder,
		// so they are built once per cache, not once per run (15 s of CPU).
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -trimpath"),
		"TMPDIR="+r.tmp,
		"MCPX_POLICY_STATE_DIR="+filepath.Join(work, "state"),
		"NO_COLOR=1",
	)
	for i := range blocks {
		b := &blocks[i]
		where := fmt.Sprintf("%s:%d", page, b.line)
		checkSee(t, page, *b, tests)
		switch {
		case b.skip != "" || b.see != nil:
			if b.isCommand() {
				r.last, r.skipped = nil, true
			}
		case b.role == "file":
			p := r.path(b.file)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(b.body+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		case b.role == "stdout" || b.role == "stderr":
			if r.last == nil && r.skipped {
				continue // the output of a command not run here
			}
			if r.last == nil {
				t.Errorf("%s: a %s block must follow a command block that runs", where, b.role)
				continue
			}
			got := r.lastOut
			if b.role == "stderr" {
				got = r.lastErr
			}
			if msg := matchOutput(b.info, b.body, got); msg != "" {
				t.Errorf("%s: the %s of the command at line %d differs from the page: %s\n--- got:\n%s", where, b.role, r.last.line, msg, got)
			}
		case b.info == "sh":
			r.runSh(b, where)
		case b.info == "console":
			r.runConsole(b, where)
		}
	}
}

// path resolves a page path: /tmp/… is the page's tmp, others are relative
// to the repository copy.
func (r *docRun) path(p string) string {
	if strings.HasPrefix(p, "/tmp/") {
		return filepath.Join(r.tmp, p[len("/tmp/"):])
	}
	return filepath.Join(r.repo, filepath.FromSlash(p))
}

var tmpRE = regexp.MustCompile(`(^|[\s"'=:(@])/tmp/`)

// tmpToWork rewrites every /tmp/ of a page to the page's own temp folder,
// and its port 8181 to the page's own port.
func (r *docRun) tmpToWork(s string) string {
	s = portRE.ReplaceAllString(s, "${1}:"+r.port)
	return tmpRE.ReplaceAllString(s, "${1}"+strings.ReplaceAll(r.tmp, "$", "$$")+"/")
}

// portRE is the page's port after a loopback host name.
var portRE = regexp.MustCompile(`(localhost|127\.0\.0\.1):8181\b`)

// freePort is a loopback port free when it returns.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// notFound explains bash's exit status 127: the block uses a program this
// machine lacks (jq and openssl come with the machine, not with .ci/run).
func notFound(code int) string {
	if code == 127 {
		return "; 127 is bash's \"command not found\": install the program the block uses"
	}
	return ""
}

// workToTmp turns the page's temp folder back into /tmp/, and its port
// into 8181, in what a command printed, to compare it with the page.
func (r *docRun) workToTmp(s string) string {
	s = strings.ReplaceAll(s, "127.0.0.1:"+r.port, "127.0.0.1:8181")
	s = strings.ReplaceAll(s, "localhost:"+r.port, "localhost:8181")
	return strings.ReplaceAll(s, r.tmp+"/", "/tmp/")
}

func (r *docRun) runSh(b *docBlock, where string) {
	script := r.tmpToWork(b.body)
	for _, ex := range b.except {
		var kept []string
		for _, l := range strings.Split(script, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), ex) {
				continue
			}
			kept = append(kept, l)
		}
		script = strings.Join(kept, "\n")
	}
	if b.bg {
		r.background(script, where)
		return
	}
	out, errOut, code, err := r.bash(script, false)
	r.skipped = false
	r.last, r.lastOut, r.lastErr = b, r.workToTmp(out), r.workToTmp(errOut)
	if err != nil {
		r.t.Errorf("%s: %v", where, err)
		return
	}
	if code != b.exit {
		r.t.Errorf("%s: exit status %d, the page says %d (<!-- doc-test: exit N --> above the block)%s\n--- script:\n%s\n--- stdout:\n%s--- stderr:\n%s", where, code, b.exit, notFound(code), script, out, errOut)
	}
}

// runConsole runs each "$ " command of a console block; the lines up to the
// next "$ " are what it prints (stdout and stderr as a terminal shows them).
// The exit marker is the last command's; the others must succeed.
func (r *docRun) runConsole(b *docBlock, where string) {
	type step struct {
		cmd  string
		want []string
	}
	var steps []step
	cont := false
	for _, l := range strings.Split(b.body, "\n") {
		switch {
		case cont:
			steps[len(steps)-1].cmd += "\n" + l
		case strings.HasPrefix(l, "$ "):
			steps = append(steps, step{cmd: l[2:]})
		case len(steps) == 0:
			if strings.TrimSpace(l) != "" {
				r.t.Errorf("%s: a console block starts with a $ command", where)
				return
			}
			continue
		default:
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, l)
		}
		cont = strings.HasSuffix(l, "\\") && (cont || strings.HasPrefix(l, "$ "))
	}
	for i, s := range steps {
		cmd := r.tmpToWork(s.cmd)
		out, _, code, err := r.bash(cmd, true)
		out = r.workToTmp(out)
		r.skipped = false
		r.last, r.lastOut, r.lastErr = b, out, ""
		if err != nil {
			r.t.Errorf("%s: %v", where, err)
			return
		}
		want := 0
		if i == len(steps)-1 {
			want = b.exit
		}
		if code != want {
			r.t.Errorf("%s: $ %s\nexit status %d, the page says %d%s\n--- output:\n%s", where, s.cmd, code, want, notFound(code), out)
			continue
		}
		if len(s.want) > 0 {
			if msg := matchOutput("text", strings.Join(s.want, "\n"), out); msg != "" {
				r.t.Errorf("%s: $ %s\nthe output differs from the page: %s\n--- got:\n%s", where, s.cmd, msg, out)
			}
		}
	}
}

// background starts script, a server the next blocks talk to, in its own
// process group, and waits until the page's port answers; the group is
// killed when the page ends. The page's port, 8181, stands for a free port
// of the page's own (portToWork), so pages and runs never collide.
func (r *docRun) background(script, where string) {
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = r.repo
	cmd.Env = r.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("%s: %v", where, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	r.t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	r.skipped, r.last = false, nil
	deadline := time.After(2 * time.Minute)
	for {
		if c, err := net.Dial("tcp", "127.0.0.1:"+r.port); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			r.t.Fatalf("%s: the server ended before it listened on the page's port 8181:\n%s", where, out)
		case <-deadline:
			r.t.Fatalf("%s: the server did not listen on the page's port 8181 within 2 minutes:\n%s", where, out)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// docCommandLimit is how long a page's command may run; a command that
// builds the binary (make demo, make build, go install, go build) may run
// docBuildLimit: on an empty build cache it compiles OPA, which README.md
// says takes minutes (356 s measured on an idle 2-core machine, past 5
// minutes on a busy one; the pages build with -trimpath, so the tests'
// own builds do not warm it).
const (
	docCommandLimit = 5 * time.Minute
	docBuildLimit   = 20 * time.Minute
)

// builds reports whether script builds the binary (docBuildLimit).
func builds(script string) bool {
	for _, c := range []string{"make demo", "make build", "make install", "go install ", "go build "} {
		if strings.Contains(script, c) {
			return true
		}
	}
	return false
}

// bash runs script with bash -e -o pipefail in the repository copy, in its
// own process group, killed after docCommandLimit (docBuildLimit for a
// script that builds). combined sends stderr to stdout, in order.
func (r *docRun) bash(script string, combined bool) (string, string, int, error) {
	limit := docCommandLimit
	if builds(script) {
		limit = docBuildLimit
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = r.repo
	cmd.Env = r.env
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &errOut
	if combined {
		cmd.Stderr = &out
	}
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), errOut.String(), -1, fmt.Errorf("timed out after %v: %s", limit, script)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), errOut.String(), ee.ExitCode(), nil
	}
	return out.String(), errOut.String(), 0, err
}

// matchOutput compares what a page shows with what the command printed and
// returns "" when they agree. JSON blocks (json, jsonc without comments)
// are compared as JSON, one shown value per printed value, where an object
// shown may leave keys out ("`rendered` left out") but every key shown must
// be there with that value. Other blocks are compared line by line after
// trailing spaces: … stands for any text within a line, and a line that is
// only … for any number of lines. In a JSON string, … stands for any text.
func matchOutput(info, want, got string) string {
	if info == "json" {
		return matchJSON(want, got)
	}
	return matchText(want, got)
}

func matchJSON(want, got string) string {
	wv, err := decodeAll(want)
	if err != nil {
		return "the page's JSON does not parse: " + err.Error()
	}
	gv, err := decodeAll(got)
	if err != nil {
		return "the output is not JSON: " + err.Error()
	}
	if len(wv) != len(gv) {
		return fmt.Sprintf("the page shows %d JSON values, the command printed %d", len(wv), len(gv))
	}
	for i := range wv {
		if msg := jsonSubset(wv[i], gv[i], ""); msg != "" {
			return msg
		}
	}
	return ""
}

func decodeAll(s string) ([]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var out []any
	for {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// jsonSubset reports where want is not got, objects of want possibly
// leaving keys out.
func jsonSubset(want, got any, at string) string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("at %s: the page shows an object, the command printed %s", slash(at), short(got))
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gk, ok := g[k]
			if !ok {
				return fmt.Sprintf("at %s: the page shows key %q, the command printed no such key", slash(at), k)
			}
			if msg := jsonSubset(w[k], gk, at+"/"+k); msg != "" {
				return msg
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Sprintf("at %s: the page shows an array, the command printed %s", slash(at), short(got))
		}
		if len(g) != len(w) {
			return fmt.Sprintf("at %s: the page shows %d elements, the command printed %d: %s", slash(at), len(w), len(g), short(got))
		}
		for i := range w {
			if msg := jsonSubset(w[i], g[i], fmt.Sprintf("%s/%d", at, i)); msg != "" {
				return msg
			}
		}
		return ""
	default:
		ws, wok := want.(string)
		gs, gok := got.(string)
		if wok && gok && strings.Contains(ws, "…") {
			// … in a string the page shows stands for any text, as in a
			// line of text (a path of the reader's own, an id)
			if !regexp.MustCompile("(?s)" + lineRE(ws).String()).MatchString(gs) {
				return fmt.Sprintf("at %s: the page shows %s, the command printed %s", slash(at), short(want), short(got))
			}
			return ""
		}
		if !reflect.DeepEqual(want, got) {
			return fmt.Sprintf("at %s: the page shows %s, the command printed %s", slash(at), short(want), short(got))
		}
		return ""
	}
}

func slash(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

func matchText(want, got string) string {
	wl, gl := textLines(want), textLines(got)
	if matchLines(wl, gl) {
		return ""
	}
	// name the first line that differs (without … lines, exactly)
	for i := range wl {
		switch {
		case strings.TrimSpace(wl[i]) == "…":
			return fmt.Sprintf("from line %d on (after a … line), the page shows\n%s", i+1, strings.Join(wl[i:], "\n"))
		case i >= len(gl):
			return fmt.Sprintf("the page shows %d lines, the command printed %d; the first missing is\n%s", len(wl), len(gl), wl[i])
		case !lineRE(wl[i]).MatchString(gl[i]):
			return fmt.Sprintf("line %d: the page shows\n%s\nthe command printed\n%s", i+1, wl[i], gl[i])
		}
	}
	return fmt.Sprintf("the page shows %d lines, the command printed %d; the first extra is\n%s", len(wl), len(gl), gl[len(wl)])
}

func textLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, " \t\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines
}

// matchLines matches shown lines against printed ones: … is any text in a
// line, a line of only … any run of lines.
func matchLines(want, got []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if strings.TrimSpace(want[0]) == "…" {
		for i := 0; i <= len(got); i++ {
			if matchLines(want[1:], got[i:]) {
				return true
			}
		}
		return false
	}
	if len(got) == 0 || !lineRE(want[0]).MatchString(got[0]) {
		return false
	}
	return matchLines(want[1:], got[1:])
}

func lineRE(w string) *regexp.Regexp {
	parts := strings.Split(w, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// seedPageBinaries puts the binaries an earlier run's page built (README's
// make demo and go install, in that run's copy of the repository) where
// this run's page builds them again, and keeps this run's for the next one
// (in the ignored bin/test/, by name): the go command finds a binary with
// the build ID of its sources up to date and skips the link, 5 s of CPU
// each; a changed source relinks as on a reader's machine.
func seedPageBinaries(t *testing.T, binaries map[string]string) {
	cache, err := filepath.Abs(filepath.Join("..", "bin", "test"))
	if err != nil {
		t.Fatal(err)
	}
	for name, dst := range binaries {
		if b, err := os.ReadFile(filepath.Join(cache, name)); err == nil {
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(func() {
		for name, src := range binaries {
			b, err := os.ReadFile(src)
			if err != nil {
				continue // the page built nothing there
			}
			tmp, err := os.CreateTemp(cache, name+".*")
			if err != nil {
				continue
			}
			_, werr := tmp.Write(b)
			if cerr := tmp.Close(); werr != nil || cerr != nil || os.Chmod(tmp.Name(), 0o755) != nil || os.Rename(tmp.Name(), filepath.Join(cache, name)) != nil {
				os.Remove(tmp.Name())
			}
		}
	})
}

// goToolOPAShim writes in dir a go command that runs `go tool opa ARGS` as
// the pinned OPA (the path `go tool -n opa` prints, which is what the go
// command executes) and hands every other command to the real go; it
// returns dir and a path list separator, to put first in PATH.
func goToolOPAShim(t *testing.T, dir string) string {
	t.Helper()
	opa := opaBinary(t)
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	if goCmd, err = filepath.Abs(goCmd); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{opa, goCmd} {
		if strings.ContainsAny(p, "'\n") {
			t.Fatalf("%q: a path the shim cannot quote", p)
		}
	}
	script := "#!/bin/sh\nif [ \"$1\" = tool ] && [ \"$2\" = opa ]; then shift 2; exec '" + opa + "' \"$@\"; fi\nexec '" + goCmd + "' \"$@\"\n"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator)
}

// readOnlyCommand is a command line that writes nowhere but in the page's
// own tmp/: a decision (eval writes only in its --state-dir, an ask's
// approval request) or the copy of an example into tmp/.
var readOnlyCommand = regexp.MustCompile(`^(mcpx-policy eval |mkdir -p tmp/[\w./-]+$|cp examples/[\w./-]+ tmp/[\w./-]+(\s+#.*)?$)`)

// writesOnlyTmp reports whether every block of a page that runs writes
// only in the page's own tmp/ (relative to the repository) or /tmp/, so the
// page can run in links to a shared copy of the repository: its commands
// are readOnlyCommand lines with no redirection, no second command and no
// .., eval's state dir (if given) is under tmp/, and it starts no server.
func writesOnlyTmp(blocks []docBlock) bool {
	for _, b := range blocks {
		if b.skip != "" || b.see != nil {
			continue
		}
		if b.role == "file" {
			if !strings.HasPrefix(b.file, "tmp/") && !strings.HasPrefix(b.file, "/tmp/") {
				return false
			}
			continue
		}
		if !b.isCommand() {
			continue
		}
		if b.bg || len(b.except) > 0 {
			return false
		}
		cont := false
		for _, l := range strings.Split(b.body, "\n") {
			command := cont
			if !cont {
				if b.info == "console" {
					if !strings.HasPrefix(l, "$ ") {
						continue // what a command printed
					}
					l = l[2:]
				}
				if strings.TrimSpace(l) != "" && !readOnlyCommand.MatchString(l) {
					return false
				}
				command = true
			}
			if command && (strings.ContainsAny(l, "<>|;&`$") || strings.Contains(l, "..")) {
				return false // a redirection, a second command, a way out of tmp/
			}
			if f := strings.Fields(l); command {
				for i := range f {
					if f[i] == "--state-dir" && (i+1 == len(f) || !strings.HasPrefix(f[i+1], "tmp/")) {
						return false
					}
					if strings.HasPrefix(f[i], "--state-dir=") {
						return false
					}
				}
			}
			cont = strings.HasSuffix(l, "\\")
		}
	}
	return true
}

// linkRepo makes dst a folder of links to each top-level entry of the copy
// src: a page that writes only in its own tmp/ (which src lacks) reads the
// shared copy through them.
func linkRepo(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "tmp" {
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// copyRepo copies the repository's files to dst, without .git and build
// output; the installed npm modules (e2e/node_modules) are linked, not
// copied, for the pages that run the e2e programs as a reader would.
func copyRepo(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			switch rel {
			case ".git", "bin", "build", "tmp":
				return filepath.SkipDir
			case filepath.Join("e2e", "node_modules"):
				if err := os.Symlink(p, filepath.Join(dst, rel)); err != nil {
					return err
				}
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || rel == ".git" {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, info.Mode().Perm())
	})
}
