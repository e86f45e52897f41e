package proxy_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpx/mcpx-policy/internal/hostile"
	"github.com/mcpx/mcpx-policy/internal/proxy"
)

// generations are the two shapes of MCP tasks: 2025-11-25 (the call asks
// with a "task" parameter; tasks/result has the result) and the tasks
// extension of 2026-07-28 (the server decides; tasks/get carries the
// result).
var generations = []string{"2025-11-25", "2026-07-28"}

func taskScript(gen string, steps ...hostile.Step) hostile.Script {
	return hostile.Script{Tools: taskTools, Tasks: &hostile.TaskScript{Generation: gen, Tools: []string{"deploy", "report"}, Steps: steps}}
}

// taskCall calls tool as a task and returns the task's id.
func (r *hostileRig) taskCall(t testing.TB, id, tool string, n int) string {
	t.Helper()
	a := r.call(t, id, tool, n, true)
	task, status := hostile.TaskOf(a)
	if task == "" || status != "working" {
		t.Fatalf("%s: the answer is no working task: %v", tool, a)
	}
	return task
}

// pollUntil polls tasks/get for task until its status is one of want.
func (r *hostileRig) pollUntil(t testing.TB, task string, want ...string) map[string]any {
	t.Helper()
	for i := 0; ; i++ {
		a := r.request(t, fmt.Sprintf("poll-%s-%d", task, i), "tasks/get", fmt.Sprintf(`{"taskId":%q}`, task))
		status, _ := hostile.Result(a)["status"].(string)
		for _, w := range want {
			if status == w {
				return a
			}
		}
		if hostile.ErrorCode(a) != "" || i > 2000 {
			t.Fatalf("tasks/get %s: %v; want status %v", task, a, want)
		}
	}
}

// TestTaskWriteSettlesAtItsEnd: a write the server runs as a task stays in
// flight in the ledger after the task handle came back, and settles only
// when the server reports the task completed; a read as a task records
// nothing. On both generations of tasks.
func TestTaskWriteSettlesAtItsEnd(t *testing.T) {
	t.Parallel()
	for _, gen := range generations {
		t.Run(gen, func(t *testing.T) {
			t.Parallel()
			eng, state := newEngine(t, allowWrites)
			r := newHostileRig(t, eng, proxy.Options{}, taskScript(gen, hostile.Step{Status: "completed", Gate: true}))
			r.client.Initialize(t, gen, `{}`)
			task := r.taskCall(t, "w", "deploy", 1)
			// A plain write after it, answered and settled: the ledger has
			// taken every change the task handle could have made.
			if a := r.call(t, "n", "note", 2, false); !strings.HasPrefix(hostile.Text(a), "ran note") {
				t.Fatalf("a plain write: %v", a)
			}
			until(t, "the plain write settles", func() bool {
				for _, m := range readLedgerFile(t, state).InFlight {
					if m.Tool == "note" {
						return false
					}
				}
				return true
			})
			if l := readLedgerFile(t, state); len(l.InFlight) != 1 || l.InFlight[0].Tool != "deploy" || len(l.Entries) != 0 {
				t.Fatalf("after the task handle, the ledger holds %+v; want deploy in flight", l)
			}
			read := r.taskCall(t, "r", "report", 2)
			r.server.Advance()
			r.server.Advance()
			done := r.pollUntil(t, task, "completed")
			r.pollUntil(t, read, "completed")
			if gen == "2025-11-25" {
				res := r.request(t, "res", "tasks/result", fmt.Sprintf(`{"taskId":%q}`, task))
				if !strings.HasPrefix(hostile.Text(res), "ran deploy") {
					t.Fatalf("tasks/result: %v", res)
				}
			} else if got, _ := hostile.Result(done)["result"].(map[string]any); got == nil {
				t.Fatalf("tasks/get of the completed task carries no result: %v", done)
			}
			until(t, "the write settles", func() bool { return len(readLedgerFile(t, state).InFlight) == 0 })
			if u := unknownTools(t, eng); len(u) != 0 {
				t.Fatalf("a completed task left unknown outcomes: %v", u)
			}
		})
	}
}

// TestTaskEndsUnknown: every end of a write's task but "completed" leaves
// an unknown outcome, as a lost answer does — failed, cancelled, a status
// nobody knows, a task the server forgot, a ttl that ran out, the server
// or the session going away — and a completed one settles also when only a
// status notification says so.
func TestTaskEndsUnknown(t *testing.T) {
	t.Parallel()
	gate := func(status string) []hostile.Step { return []hostile.Step{{Status: status, Gate: true}} }
	ttl := 1
	cases := []struct {
		name    string
		gen     string
		steps   []hostile.Step
		ttl     *int
		notify  bool
		isError bool
		// end makes the task end (the server was told to advance once
		// when advance is set); it returns when the proxy has seen it.
		advance bool
		end     func(t *testing.T, r *hostileRig, task string)
		unknown string // the cause's words; "" when the write settles
	}{
		{name: "failed", gen: "2025-11-25", steps: gate("failed"), advance: true,
			end: func(t *testing.T, r *hostileRig, task string) { r.pollUntil(t, task, "failed") }, unknown: "ended failed"},
		{name: "failed (extension)", gen: "2026-07-28", steps: gate("failed"), advance: true,
			end: func(t *testing.T, r *hostileRig, task string) { r.pollUntil(t, task, "failed") }, unknown: "ended failed"},
		{name: "failed, seen by tasks/result", gen: "2025-11-25", steps: gate("failed"), advance: true,
			end: func(t *testing.T, r *hostileRig, task string) {
				r.request(t, "res", "tasks/result", fmt.Sprintf(`{"taskId":%q}`, task))
			}, unknown: "tasks/result answered with an error"},
		{name: "an error result", gen: "2025-11-25", steps: gate("completed"), isError: true, advance: true,
			end: func(t *testing.T, r *hostileRig, task string) {
				r.request(t, "res", "tasks/result", fmt.Sprintf(`{"taskId":%q}`, task))
			}, unknown: "its result is an error"},
		{name: "cancelled by the client", gen: "2025-11-25", steps: gate("completed"),
			end: func(t *testing.T, r *hostileRig, task string) {
				r.request(t, "c", "tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, task))
			}, unknown: "ended cancelled"},
		{name: "cancelled (extension)", gen: "2026-07-28", steps: gate("completed"),
			end: func(t *testing.T, r *hostileRig, task string) {
				r.request(t, "c", "tasks/cancel", fmt.Sprintf(`{"taskId":%q}`, task))
				r.pollUntil(t, task, "cancelled")
			}, unknown: "ended cancelled"},
		{name: "a status nobody knows", gen: "2025-11-25", steps: gate("exploded"), advance: true,
			end: func(t *testing.T, r *hostileRig, task string) { r.pollUntil(t, task, "exploded") }, unknown: "status the proxy does not know"},
		{name: "forgotten by the server", gen: "2025-11-25", steps: gate("forget"), advance: true,
			end: func(t *testing.T, r *hostileRig, task string) {
				for i := 0; ; i++ {
					a := r.request(t, fmt.Sprint("g", i), "tasks/get", fmt.Sprintf(`{"taskId":%q}`, task))
					if hostile.ErrorCode(a) == "-32602" {
						return
					}
				}
			}, unknown: "does not exist"},
		{name: "its ttl ran out", gen: "2025-11-25", steps: gate("completed"), ttl: &ttl, unknown: "no end within 1ms"},
		{name: "the server went away", gen: "2025-11-25", steps: gate("completed"),
			end: func(t *testing.T, r *hostileRig, task string) {
				r.serverEnd.Close()
				r.wait(t)
			}, unknown: "connection closed before the task ended"},
		{name: "the client went away", gen: "2026-07-28", steps: gate("completed"),
			end: func(t *testing.T, r *hostileRig, task string) {
				r.clientEnd.Close()
				r.wait(t)
			}, unknown: "connection closed before the task ended"},
		{name: "completed, by notification", gen: "2025-11-25", steps: gate("completed"), notify: true, advance: true,
			end: func(t *testing.T, r *hostileRig, task string) {
				r.client.Next(t, "the status notification", hostile.IsMethod("notifications/tasks/status"))
			}},
		{name: "completed with an error result (extension)", gen: "2026-07-28", steps: gate("completed"), isError: true, advance: true,
			end: func(t *testing.T, r *hostileRig, task string) { r.pollUntil(t, task, "completed") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			eng, state := newEngine(t, allowWrites)
			sc := taskScript(c.gen, c.steps...)
			sc.Tasks.TTLMs, sc.Tasks.Notify, sc.Tasks.ResultError = c.ttl, c.notify, c.isError
			r := newHostileRig(t, eng, proxy.Options{}, sc)
			r.client.Initialize(t, c.gen, `{}`)
			task := r.taskCall(t, "w", "deploy", 1)
			read := r.taskCall(t, "r", "report", 2)
			if c.advance {
				r.server.Advance()
			}
			if c.end != nil {
				c.end(t, r, task)
			}
			until(t, "the write ends", func() bool { return len(readLedgerFile(t, state).InFlight) == 0 })
			u := unknownTools(t, eng)
			switch {
			case c.unknown == "" && len(u) != 0:
				t.Fatalf("the task completed, yet unknown outcomes: %v", u)
			case c.unknown != "" && (len(u) != 1 || !strings.HasPrefix(u[0], "deploy: ") || !strings.Contains(u[0], c.unknown)):
				t.Fatalf("unknown outcomes %v; want one for deploy saying %q", u, c.unknown)
			}
			_ = read // a read's task records nothing, whatever its end: only deploy is counted above
		})
	}
}

// TestTaskHandleTheProxyCannotRead: a write whose answer claims a task the
// proxy cannot read — no id, a case variant, an id given twice — is an
// unknown outcome at once; the client is told so.
func TestTaskHandleTheProxyCannotRead(t *testing.T) {
	t.Parallel()
	for name, result := range map[string]string{
		"no task id":        `{"task":{"status":"working"}}`,
		"a case variant":    `{"task":{"taskId":"t1","status":"working","Status":"completed"}}`,
		"extension, no id":  `{"resultType":"task","status":"working"}`,
		"a task not object": `{"task":"t1"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			eng, _ := newEngine(t, allowWrites)
			r := newHostileRig(t, eng, proxy.Options{}, hostile.Script{Tools: taskTools, CallResult: json.RawMessage(result)})
			r.client.Initialize(t, "2025-11-25", `{}`)
			a := r.call(t, "w", "deploy", 1, true)
			if !strings.Contains(hostile.Text(a), "Outcome unknown") {
				t.Fatalf("answer %v; want the unknown outcome", a)
			}
			if u := unknownTools(t, eng); len(u) != 1 {
				t.Fatalf("unknown outcomes %v; want one", u)
			}
		})
	}
	t.Run("an id given twice", func(t *testing.T) {
		t.Parallel()
		eng, _ := newEngine(t, allowWrites)
		r := newHostileRig(t, eng, proxy.Options{}, hostile.Script{Tools: taskTools, CallResult: json.RawMessage(`{"task":{"taskId":"same","status":"working"}}`)})
		r.client.Initialize(t, "2025-11-25", `{}`)
		if id, _ := hostile.TaskOf(r.call(t, "w1", "deploy", 1, true)); id != "same" {
			t.Fatal("the first task was not passed on")
		}
		if a := r.call(t, "w2", "report", 2, true); !strings.Contains(hostile.Text(a), "") || hostile.Result(a) == nil {
			t.Fatalf("a read's repeated task id: %v", a)
		}
		r.clientEnd.Close()
		r.wait(t)
		if u := unknownTools(t, eng); len(u) != 1 || !strings.Contains(u[0], "before the task ended") {
			t.Fatalf("unknown outcomes %v; want the first task's, at the session's end", u)
		}
	})
}

// TestTasksOnlyFromTheirSession: two sessions in front of one task back
// end (a remote server, or one store) with guessable task ids. A tasks/*
// request of one session for the other's task is answered as for a task
// that does not exist and never reaches the server; tasks/list and
// status notifications show a session only its own tasks.
func TestTasksOnlyFromTheirSession(t *testing.T) {
	t.Parallel()
	store := hostile.NewTaskStore(true)
	eng, _ := newEngine(t, allowWrites)
	sc := taskScript("2025-11-25", hostile.Step{Status: "completed", Gate: true})
	sc.Tasks.Notify = true
	a := newHostileRig(t, eng, proxy.Options{}, sc, hostile.WithTaskStore(store))
	b := newHostileRig(t, eng, proxy.Options{}, sc, hostile.WithTaskStore(store))
	a.client.Initialize(t, "2025-11-25", `{}`)
	b.client.Initialize(t, "2025-11-25", `{}`)
	theirs := a.taskCall(t, "w", "deploy", 1)
	mine := b.taskCall(t, "r", "report", 2)
	if theirs != "task-1" || mine != "task-2" {
		t.Fatalf("task ids %q, %q; the back end should number them", theirs, mine)
	}
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/update"} {
		ans := b.request(t, method, method, fmt.Sprintf(`{"taskId":%q,"inputResponses":{}}`, theirs))
		if hostile.ErrorCode(ans) != "-32602" || !strings.Contains(hostile.ErrorMessage(ans), "Task not found") {
			t.Errorf("%s of another session's task: %v; want -32602 task not found", method, ans)
		}
		if n := b.server.Count(method); n != 0 {
			t.Errorf("%s of another session's task reached the server (%d)", method, n)
		}
	}
	list := b.request(t, "list", "tasks/list", `{}`)
	tasks, _ := hostile.Result(list)["tasks"].([]any)
	if len(tasks) != 1 || tasks[0].(map[string]any)["taskId"] != mine {
		t.Fatalf("tasks/list of session b: %v; want only its own task", list)
	}
	if own := b.request(t, "own", "tasks/get", fmt.Sprintf(`{"taskId":%q}`, mine)); hostile.ErrorCode(own) != "" {
		t.Fatalf("tasks/get of the session's own task: %v", own)
	}
	// The back end tells a's server's client of a's task; b's server, sharing
	// the store, never relays it to b's client.
	a.server.Advance()
	a.client.Next(t, "a's status notification", hostile.IsMethod("notifications/tasks/status"))
	if got := b.client.Try(func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any)
		return m["method"] == "notifications/tasks/status" && p["taskId"] == theirs
	}, 0); got != nil {
		t.Fatalf("session b was told of a's task: %v", got)
	}
}
