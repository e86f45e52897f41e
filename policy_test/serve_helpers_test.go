package policy_test

import (
	"net/http"
	"os/exec"
	"testing"
	"time"
)

// serveProcess is a running `mcpx-policy serve`: base is its URL, stderr
// what it logged, exited receives Wait's error when the process ends.
type serveProcess struct {
	base   string
	stderr *syncBuffer
	exited chan error
}

// startServe starts cmd, an `mcpx-policy serve … --addr addr` command
// (its environment and limits already set), and waits until /healthz
// answers 200. The process is interrupted and waited for when the test
// ends; its stderr is logged when the test failed.
func startServe(t testing.TB, cmd *exec.Cmd, addr string) *serveProcess {
	t.Helper()
	p := &serveProcess{base: "http://" + addr, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		close(done)
		p.exited <- err
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(interrupt)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("serve stderr:\n%.8000s", p.stderr)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				// serve writes its start-up lines before it listens: a
				// test that reads the start-up warnings must find them
				p.stderr.await("serving decisions")
				return p
			}
		}
		select {
		case err := <-p.exited:
			t.Fatalf("serve exited before it answered /healthz: %v\n%s", err, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer /healthz within 30s: %v\n%s", err, p.stderr)
		}
	}
}
