package hostile

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// TaskScript runs tool calls as MCP tasks. With Generation "2025-11-25"
// (the default) a call that carries a "task" parameter is answered with
// {"task": Task} and the result is had with tasks/result; with
// "2026-07-28" (the tasks extension) the server answers any call of a
// task tool with a task handle ({"resultType": "task", …Task}) and
// tasks/get carries the result.
type TaskScript struct {
	Generation string `json:"generation,omitempty"`
	// Tools run as tasks; empty means every tool.
	Tools []string `json:"tools,omitempty"`
	// Steps are the statuses a task goes through after it is created
	// ("working" at creation), each after its delay; the last should be
	// terminal. Empty means one step: completed after 0 ms.
	Steps []Step `json:"steps,omitempty"`
	// TTLMs is the task's ttl (nil: unlimited); PollMs its pollInterval.
	TTLMs  *int `json:"ttlMs,omitempty"`
	PollMs int  `json:"pollMs,omitempty"`
	// Notify sends a status notification on every change.
	Notify bool `json:"notify,omitempty"`
	// ResultError makes a completed task's result an isError one.
	ResultError bool `json:"resultError,omitempty"`
}

// Step is one status change of a task, Ms milliseconds after the one
// before; JitterMs adds up to that much at random. With Gate the step
// waits for Server.Advance first. Status "forget" deletes the task from
// the store, as a server that lost it (or purged it) would.
type Step struct {
	Status   string `json:"status"`
	Ms       int    `json:"ms,omitempty"`
	JitterMs int    `json:"jitterMs,omitempty"`
	Gate     bool   `json:"gate,omitempty"`
}

func (ts *TaskScript) ext() bool { return ts.Generation == "2026-07-28" }

// runs reports whether a call of tool (with or without a task parameter)
// becomes a task.
func (ts *TaskScript) runs(tool string, asked bool) bool {
	if !ts.ext() && !asked {
		return false
	}
	if len(ts.Tools) == 0 {
		return true
	}
	for _, t := range ts.Tools {
		if t == tool {
			return true
		}
	}
	return false
}

// TaskStore keeps tasks. Servers that share one are one back end: any of
// them answers for any task, as a remote server behind several sessions
// does — which is what the proxy's per-session check is for.
type TaskStore struct {
	predictable bool

	mu    sync.Mutex
	next  int
	tasks map[string]*task
}

type task struct {
	id, tool   string
	args       json.RawMessage
	status     string
	created    time.Time
	updated    time.Time
	done       chan struct{}
	cancelled  bool
	resultErr  bool
	statusText string
}

// NewTaskStore returns an empty store; with predictable, task ids are
// task-1, task-2, … (easy to guess), else random.
func NewTaskStore(predictable bool) *TaskStore {
	return &TaskStore{predictable: predictable, tasks: map[string]*task{}}
}

func (st *TaskStore) add(tool string, args json.RawMessage, resultErr bool) *task {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.next++
	id := fmt.Sprintf("task-%d", st.next)
	if !st.predictable {
		id = fmt.Sprintf("%016x-%d", rand.Uint64(), st.next)
	}
	now := time.Now().UTC()
	t := &task{id: id, tool: tool, args: args, status: "working", created: now, updated: now, done: make(chan struct{}), resultErr: resultErr}
	st.tasks[id] = t
	return t
}

func (st *TaskStore) forget(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.tasks, id)
}

func (st *TaskStore) get(id string) *task {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.tasks[id]
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// set moves t to status unless it is terminal already; it reports whether
// it did.
func (st *TaskStore) set(t *task, status string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if terminal(t.status) {
		return false
	}
	t.status, t.updated = status, time.Now().UTC()
	if terminal(status) {
		close(t.done)
	}
	return true
}

// wire is the Task object as the script's generation writes it.
func (s *Server) wire(t *task, withResult bool) map[string]any {
	ts := s.script.Tasks
	s.tasks.mu.Lock()
	status, created, updated := t.status, t.created, t.updated
	s.tasks.mu.Unlock()
	m := map[string]any{"taskId": t.id, "status": status,
		"createdAt": created.Format(time.RFC3339Nano), "lastUpdatedAt": updated.Format(time.RFC3339Nano)}
	var ttl any
	if ts.TTLMs != nil {
		ttl = *ts.TTLMs
	}
	if ts.ext() {
		m["ttlMs"] = ttl
		if ts.PollMs > 0 {
			m["pollIntervalMs"] = ts.PollMs
		}
		if withResult {
			switch status {
			case "completed":
				m["result"] = s.taskResult(t)
			case "failed":
				m["error"] = map[string]any{"code": -32603, "message": "the task failed"}
			}
		}
		return m
	}
	m["ttl"] = ttl
	if ts.PollMs > 0 {
		m["pollInterval"] = ts.PollMs
	}
	return m
}

func (s *Server) taskResult(t *task) map[string]any {
	r := map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("ran %s %s", t.tool, t.args)}},
		"_meta": map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": t.id}}}
	if t.resultErr {
		r["isError"] = true
	}
	return r
}

// createTask answers a tools/call with a task handle and runs the task's
// steps.
func (s *Server) createTask(id json.RawMessage, tool string, args json.RawMessage, answer func(any)) {
	ts := s.script.Tasks
	t := s.tasks.add(tool, args, ts.ResultError)
	s.event("status", t.id, "working")
	if ts.ext() {
		h := s.wire(t, false)
		h["resultType"] = "task"
		answer(h)
	} else {
		answer(map[string]any{"task": s.wire(t, false)})
	}
	s.run(t, 0, false)
}

// parked is a task waiting at step, a Gate, for Advance: no goroutine
// waits for it.
type parked struct {
	t    *task
	step int
}

// run goes through the task's steps from step on its own goroutine,
// parking it at a Gate (passed is true when Advance let it through the
// first).
func (s *Server) run(t *task, step int, passed bool) {
	steps := s.script.Tasks.Steps
	if len(steps) == 0 {
		steps = []Step{{Status: "completed"}}
	}
	if step < len(steps) && steps[step].Gate && !passed {
		s.mu.Lock()
		s.parked = append(s.parked, parked{t, step})
		s.mu.Unlock()
		return
	}
	if step == 0 && !passed {
		go s.steps(t, steps, 0)
		return
	}
	s.steps(t, steps, step)
}

func (s *Server) steps(t *task, steps []Step, from int) {
	for i := from; i < len(steps); i++ {
		st := steps[i]
		if st.Gate && i > from {
			s.run(t, i, false)
			return
		}
		d := st.Ms
		if st.JitterMs > 0 {
			d += rand.IntN(st.JitterMs + 1)
		}
		select {
		case <-time.After(time.Duration(d) * time.Millisecond):
		case <-t.done:
			return
		}
		if st.Status == "forget" {
			s.tasks.forget(t.id)
			return
		}
		s.event("status", t.id, st.Status)
		if !s.tasks.set(t, st.Status) {
			return
		}
		s.notify(t)
	}
}

func (s *Server) notify(t *task) {
	if !s.script.Tasks.Notify {
		return
	}
	method := "notifications/tasks/status"
	if s.script.Tasks.ext() {
		method = "notifications/tasks"
	}
	s.sendJSON(map[string]any{"jsonrpc": "2.0", "method": method, "params": s.wire(t, true)})
}

// taskRequest answers tasks/get, tasks/result, tasks/cancel, tasks/list
// and tasks/update for any task of the store.
func (s *Server) taskRequest(id json.RawMessage, method string, params json.RawMessage) {
	reply := func(result any) { s.sendJSON(map[string]any{"jsonrpc": "2.0", "id": id, "result": result}) }
	fail := func(code int, msg string) {
		s.sendJSON(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	}
	if s.script.Tasks == nil {
		fail(-32601, "no tasks here")
		return
	}
	ext := s.script.Tasks.ext()
	if method == "tasks/list" {
		var list []any
		s.tasks.mu.Lock()
		ids := make([]*task, 0, len(s.tasks.tasks))
		for _, t := range s.tasks.tasks {
			ids = append(ids, t)
		}
		s.tasks.mu.Unlock()
		for _, t := range ids {
			list = append(list, s.wire(t, false))
		}
		if list == nil {
			list = []any{}
		}
		reply(map[string]any{"tasks": list})
		return
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	json.Unmarshal(params, &p)
	t := s.tasks.get(p.TaskID)
	if t == nil {
		fail(-32602, "Failed to retrieve task: Task not found")
		return
	}
	switch method {
	case "tasks/get":
		w := s.wire(t, ext)
		if ext {
			w["resultType"] = "complete"
		}
		reply(w)
	case "tasks/result":
		<-t.done
		s.tasks.mu.Lock()
		status := t.status
		s.tasks.mu.Unlock()
		switch status {
		case "completed":
			reply(s.taskResult(t))
		default:
			fail(-32603, "the task ended "+status)
		}
	case "tasks/cancel":
		if !s.tasks.set(t, "cancelled") {
			fail(-32602, "Cannot cancel task: already in terminal status")
			return
		}
		s.event("status", t.id, "cancelled")
		s.notify(t)
		if ext {
			reply(map[string]any{"resultType": "complete"})
			return
		}
		reply(s.wire(t, false))
	case "tasks/update":
		reply(map[string]any{"resultType": "complete"})
	default:
		fail(-32601, "unknown method "+method)
	}
}
