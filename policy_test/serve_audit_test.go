package policy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const auditConfig = "version: 1\npolicy:\n  write: allow\nservers:\n  fs: {}\n"

const auditRead = `{"server": "fs", "tool": {"name": "read_file", "annotations": {"readOnlyHint": true}, "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}, "args": {"path": "/a"}}`

// get is a GET on serve: the status and the body.
func (p *serveProcess) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(p.base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// diskFull makes the writes of a process to the files of a folder fail
// while it is on, and succeed again once it is off: a 1 MiB tmpfs filled
// by a filler file (ENOSPC, as a full disk), or, where mounting is not
// permitted, the process's RLIMIT_FSIZE set to 0 from outside (EFBIG).
type diskFull struct {
	dir   string // the folder
	tmpfs bool
}

// diskFaults runs fn once with each kind of fault; the tmpfs kind is
// skipped where mounting is not permitted, the fsize kind runs anywhere.
func diskFaults(t *testing.T, fn func(t *testing.T, f *diskFull)) {
	t.Run("tmpfs", func(t *testing.T) {
		t.Parallel()
		mnt := t.TempDir()
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
			t.Skipf("mounting a tmpfs is not permitted here (%v); the fsize variant covers the fault", err)
		}
		t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
		fn(t, &diskFull{dir: mnt, tmpfs: true})
	})
	t.Run("fsize", func(t *testing.T) {
		t.Parallel()
		fn(t, &diskFull{dir: t.TempDir()})
	})
}

func (f *diskFull) set(t *testing.T, pid int, full bool) {
	t.Helper()
	if !f.tmpfs {
		limit := uint64(unix.RLIM_INFINITY)
		if full {
			limit = 0
		}
		var old unix.Rlimit
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, nil, &old); err != nil {
			t.Fatal(err)
		}
		if err := unix.Prlimit(pid, unix.RLIMIT_FSIZE, &unix.Rlimit{Cur: min(limit, old.Max), Max: old.Max}, nil); err != nil {
			t.Fatal(err)
		}
		return
	}
	filler := filepath.Join(f.dir, "filler")
	if !full {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		return
	}
	w, err := os.OpenFile(filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	chunk := make([]byte, 512)
	for {
		if _, err := w.Write(chunk); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// metric is the value of a metric line of /metrics ("" when absent).
func metric(body, name string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestServeDecisionLogFailsClosed: serve's decision log is on a disk that
// fills up. While a line cannot be written, a decision is not answered as
// if it were logged: it is a 503 with code DecisionLogUnavailable and
// Retry-After; /readyz is 503 naming the decision log, /metrics counts the
// lines lost and says the log is not writable, and serve's log says so
// once. When the disk has room again the next decision is logged and
// answered, readiness and the gauge come back, and serve's log says so;
// the decision log holds exactly the answered decisions, each a whole
// JSON line.
func TestServeDecisionLogFailsClosed(t *testing.T) {
	t.Parallel()
	diskFaults(t, serveLogFault)
}

func serveLogFault(t *testing.T, disk *diskFull) {
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": auditConfig})
	logFile := filepath.Join(disk.dir, "decisions.log")
	srv, pid := runServePID(t, "--config", filepath.Join(dir, "mcpx-policy.yaml"), "--state-dir", filepath.Join(dir, "state"), "--decision-log", logFile)
	decide := func() (int, http.Header, map[string]any) {
		t.Helper()
		status, h, b := srv.post(t, "/v1/decide", auditRead)
		var body map[string]any
		json.Unmarshal(b, &body)
		return status, h, body
	}
	answered := 0
	if status, _, body := decide(); status != 200 || body["outcome"] != "allow" {
		t.Fatalf("decide with a writable log: %d %v", status, body)
	}
	answered++

	if disk.tmpfs {
		// a full tmpfs still takes writes into the free part of the log's
		// last page: end the log on a page boundary (with a JSON line of
		// padding) so the next line needs a page the disk does not have
		padLog(t, logFile)
	}
	disk.set(t, pid, true)
	for range 2 {
		status, h, body := decide()
		if status != 503 || body["code"] != "DecisionLogUnavailable" || h.Get("Retry-After") == "" || body["outcome"] != nil ||
			!strings.Contains(body["error"].(string), "decision log cannot be written") {
			t.Fatalf("decide with a full disk = %d %v; want a 503 DecisionLogUnavailable and no decision", status, body)
		}
	}
	if status, body := srv.get(t, "/readyz"); status != 503 || !strings.Contains(body, `"decision_log":"the last decision log line could not be written`) {
		t.Errorf("/readyz with a full disk = %d %s", status, body)
	}
	if status, _ := srv.get(t, "/healthz"); status != 200 {
		t.Errorf("/healthz with a full disk = %d: the process must stay up", status)
	}
	_, m := srv.get(t, "/metrics")
	if metric(m, "mcpx_policy_decision_log_writable") != "0" || metric(m, "mcpx_policy_decision_log_errors_total") != "2" {
		t.Errorf("metrics with a full disk: writable %q, errors %q", metric(m, "mcpx_policy_decision_log_writable"), metric(m, "mcpx_policy_decision_log_errors_total"))
	}

	disk.set(t, pid, false)
	if status, _, body := decide(); status != 200 || body["outcome"] != "allow" {
		t.Fatalf("decide once the disk has room = %d %v", status, body)
	}
	answered++
	if status, body := srv.get(t, "/readyz"); status != 200 {
		t.Errorf("/readyz once the disk has room = %d %s", status, body)
	}
	if _, m := srv.get(t, "/metrics"); metric(m, "mcpx_policy_decision_log_writable") != "1" {
		t.Errorf("mcpx_policy_decision_log_writable once the disk has room = %q", metric(m, "mcpx_policy_decision_log_writable"))
	}
	log := srv.stderr.String()
	if strings.Count(log, "decision log: a line cannot be written") != 1 || strings.Count(log, "decision log: written again") != 1 {
		t.Errorf("serve's log says the failure and the recovery once each:\n%s", log)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	decisions := 0
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if !json.Valid([]byte(l)) {
			t.Errorf("a decision log line is not whole JSON: %q", l)
		}
		if strings.Contains(l, `"decision_id"`) {
			decisions++
		}
	}
	if decisions != answered {
		t.Errorf("the decision log has %d decisions; want the %d answered ones", decisions, answered)
	}
}

// padLog appends a JSON line to the file that makes its size a multiple
// of the page size.
func padLog(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	page := int64(os.Getpagesize())
	n := page - st.Size()%page
	if n < 16 {
		n += page
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(`{"pad":"` + strings.Repeat("x", int(n)-11) + "\"}\n"); err != nil {
		t.Fatal(err)
	}
}

// runServePID is runServe that also returns the process's pid.
func runServePID(t *testing.T, args ...string) (*serveProcess, int) {
	t.Helper()
	addr := freeLoopbackAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), append([]string{"serve", "--addr", addr}, args...)...)
	cmd.Env = cleanEnv()
	p := startServe(t, cmd, addr)
	return p, cmd.Process.Pid
}

// TestServeSurvivesClosedPipes: serve writes its decision log to stdout
// and its own log to stderr, both pipes; the readers of both go away. No
// write to the closed pipes ends the process: decisions are refused with
// 503 (their log line cannot be written), /healthz stays 200 and /readyz
// says why it is not ready.
func TestServeSurvivesClosedPipes(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{"mcpx-policy.yaml": auditConfig})
	addr := freeLoopbackAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "mcpx-policy"), "serve", "--addr", addr,
		"--config", filepath.Join(dir, "mcpx-policy.yaml"), "--state-dir", filepath.Join(dir, "state"), "--decision-log", "-")
	cmd.Env = cleanEnv()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	errW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	srv := &serveProcess{base: "http://" + addr, stderr: &syncBuffer{}, exited: exited}
	stderr := bufio.NewReader(errR)
	for { // serve says it serves on stderr
		line, err := stderr.ReadString('\n')
		if err != nil {
			t.Fatalf("serve ended before it served: %v", err)
		}
		if strings.Contains(line, "serving decisions") {
			break
		}
	}
	if status, _, _ := srv.post(t, "/v1/decide", auditRead); status != 200 {
		t.Fatalf("decide with readers on both pipes = %d", status)
	}
	if line, err := bufio.NewReader(outR).ReadString('\n'); err != nil || !json.Valid([]byte(line)) {
		t.Fatalf("the decision log line on stdout: %q, %v", line, err)
	}
	outR.Close() // the log's reader goes away
	errR.Close() // and so does the reader of serve's own log
	for range 3 {
		status, _, b := srv.post(t, "/v1/decide", auditRead)
		if status != 503 || !strings.Contains(string(b), "DecisionLogUnavailable") {
			t.Fatalf("decide with stdout closed = %d %s; want a 503", status, b)
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("serve ended on a closed pipe: %v", err)
	default:
	}
	if status, _ := srv.get(t, "/healthz"); status != 200 {
		t.Errorf("/healthz = %d", status)
	}
	if status, body := srv.get(t, "/readyz"); status != 503 || !strings.Contains(body, "broken pipe") {
		t.Errorf("/readyz = %d %s; want 503 naming the broken pipe", status, body)
	}
}
