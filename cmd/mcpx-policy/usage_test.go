package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestEveryHelpStatesExitStatuses: the top-level usage lists every
// command, and each command's -h says its exit statuses, 1 being an error
// for all of them.
func TestEveryHelpStatesExitStatuses(t *testing.T) {
	var top bytes.Buffer
	if code := run([]string{"help"}, &top, &bytes.Buffer{}); code != 0 {
		t.Fatalf("help exited %d", code)
	}
	commands := regexp.MustCompile(`(?m)^  ([a-z]+) `).FindAllStringSubmatch(top.String(), -1)
	if len(commands) < 12 {
		t.Fatalf("the usage lists %d commands:\n%s", len(commands), top.String())
	}
	if !strings.Contains(top.String(), "Exit status: 0 success, 1 error") {
		t.Errorf("the usage does not state the exit statuses:\n%s", top.String())
	}
	for _, m := range commands {
		name := m[1]
		var stdout, stderr bytes.Buffer
		if code := run([]string{name, "-h"}, &stdout, &stderr); code != 0 {
			t.Errorf("%s -h exited %d: %s", name, code, stderr.String())
			continue
		}
		status := regexp.MustCompile(`(?s)Exit status: 0 .*\b1 error\b`)
		if !status.MatchString(stdout.String()) {
			t.Errorf("%s -h states no exit statuses with 1 for an error:\n%s", name, stdout.String())
		}
	}
}
