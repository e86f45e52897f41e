package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	mcpxpolicy "github.com/mcpx/mcpx-policy"
	"github.com/mcpx/mcpx-policy/internal/strictjson"
	"github.com/mcpx/mcpx-policy/mcpgate"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MCP tasks (docs/proxy.md, "Tasks"): a server may answer a tools/call
// with a task handle instead of the result (MCP 2025-11-25 when the call
// carries a "task" parameter; the tasks extension of 2026-07-28 at the
// server's discretion), and the work goes on after the answer. A write's
// dispatch then stays in flight until the server reports the task's
// terminal status — through the answers to tasks/get, tasks/result,
// tasks/cancel and tasks/list, or a status notification — and only
// "completed" settles it. Every other end leaves an unknown outcome:
// failed, cancelled, a status the proxy does not know, a task the server
// no longer knows, no terminal status within the task's ttl or
// TaskTimeout, or the server's connection ending first.
//
// A session holds only the tasks its own requests created: a tasks/*
// request naming any other task id is answered as for a task that does
// not exist, without reaching the server, and tasks/list answers and
// status notifications are cut to the session's own tasks. This is the
// per-session authorization the tasks specification asks for; it matters
// whenever one server serves several sessions, and costs nothing when each
// session has its own.
//
// Nothing here depends on the transport: the handle, the statuses and the
// ownership are read from JSON-RPC messages, whatever carried them.

// DefaultTaskTimeout bounds how long a write's task may run when
// Options.TaskTimeout is 0.
const DefaultTaskTimeout = time.Hour

// maxTasks bounds the tasks a session keeps; past it the oldest that holds
// no write in flight is forgotten (its client is then told it does not
// exist). maxWrites bounds the writes in flight of a session (sent and
// unanswered, or tasks not ended), far below it: a write past it is
// refused before anything is recorded or sent.
const (
	maxTasks  = 1024
	maxWrites = 256
)

// sessionTask is a task a request of this session created.
type sessionTask struct {
	id      string
	tool    string
	created time.Time
	ended   bool // a terminal status was seen, or the proxy ended it
	// For a write: its dispatch, until the task ends, and the deadline
	// past which its outcome is unknown.
	dispatch *mcpxpolicy.Dispatch
	timer    *time.Timer
	// What the final result gets (the warn rider), from the call's
	// decision.
	ignored      []string
	outputSchema json.RawMessage
}

// taskState is what the proxy reads of a Task object, of either
// generation: 2025-11-25 ("ttl") and the 2026-07-28 extension ("ttlMs";
// its tasks/get and notifications inline the result or error).
type taskState struct {
	TaskID *string         `json:"taskId"`
	Status *string         `json:"status"`
	TTL    json.RawMessage `json:"ttl"`
	TTLMs  json.RawMessage `json:"ttlMs"`
	Result json.RawMessage `json:"result"`
}

func readTaskState(raw json.RawMessage) (taskState, error) {
	var st taskState
	if err := strictjson.Unmarshal(raw, &st); err != nil {
		return st, err
	}
	if st.TaskID == nil || *st.TaskID == "" {
		return st, errors.New(`the task has no "taskId" (a non-empty string)`)
	}
	if st.Status == nil {
		return st, errors.New(`the task has no "status"`)
	}
	return st, nil
}

// ttl is the task's ttl as the server gave it; 0 when unlimited or not
// given.
func (st taskState) ttl() time.Duration {
	raw := st.TTL
	if raw == nil {
		raw = st.TTLMs
	}
	var ms float64
	if json.Unmarshal(raw, &ms) != nil || ms <= 0 {
		return 0
	}
	return time.Duration(min(ms, float64(365*24*time.Hour/time.Millisecond))) * time.Millisecond
}

// readTaskHandle reads a tools/call result as a task handle: the
// 2026-07-28 extension's ({"resultType": "task", …Task}) or
// 2025-11-25's ({"task": Task}). isTask is false for a plain result. A
// result whose handle members do not decode strictly, or name a task the
// proxy cannot read, is an error: the proxy cannot tell whether the work
// goes on.
//
// The result is read in one pass (strictjson.Members), not decoded: it is
// most of the frame (a file's content), and a plain result is passed on
// as it is. A result the fast reading does not take as it is (no object,
// not strict, a member spelled like "resultType" or "task" in another
// case or not ASCII, a resultType neither a string nor null) is decoded
// as taskHandle for its exact reading or refusal
// (TestReadTaskHandleAsTheStruct).
func readTaskHandle(result json.RawMessage) (st taskState, isTask bool, err error) {
	var r taskHandle
	plain := true
	isObj, err := strictjson.Members(result, func(key string, v []byte) {
		switch key {
		case "resultType":
			r.ResultType = plainString(v, &plain)
		case "task":
			r.Task = v
		default:
			if !ascii(key) || strings.EqualFold(key, "resultType") || strings.EqualFold(key, "task") {
				plain = false
			}
		}
	})
	if err != nil || !isObj || !plain {
		return readTaskHandleStruct(result)
	}
	return r.read(result)
}

// taskHandle is what readTaskHandle reads of a tools/call result.
type taskHandle struct {
	ResultType *string         `json:"resultType"`
	Task       json.RawMessage `json:"task"`
}

// readTaskHandleStruct is readTaskHandle through the strict decoding of
// taskHandle.
func readTaskHandleStruct(result json.RawMessage) (st taskState, isTask bool, err error) {
	var r taskHandle
	if err := strictjson.Unmarshal(result, &r); err != nil {
		return st, false, err
	}
	return r.read(result)
}

// read reads the task a result r was read from names, if any.
func (r taskHandle) read(result json.RawMessage) (st taskState, isTask bool, err error) {
	switch {
	case r.ResultType != nil && *r.ResultType == "task":
		st, err = readTaskState(result)
	case r.Task != nil && string(r.Task) != "null":
		st, err = readTaskState(r.Task)
	default:
		return st, false, nil
	}
	return st, true, err
}

// taskCreated handles the server's answer m to a tools/call p when it is a
// task handle, or when p is a write whose answer cannot be read as a
// result or a handle: it reports whether it answered the client.
func (s *session) taskCreated(p *pending, m *jsonrpc.Response) bool {
	st, isTask, err := readTaskHandle(m.Result)
	switch {
	case err != nil && p.dispatch != nil:
		s.stopTimer(p)
		s.unknown(m.ID, p, "the server's answer cannot be read as a result or a task handle: "+err.Error())
		return true
	case err != nil || !isTask:
		return false
	}
	s.stopTimer(p)
	t := &sessionTask{id: *st.TaskID, tool: p.call, created: time.Now(), dispatch: p.dispatch, ignored: p.ignored, outputSchema: p.outputSchema}
	why := s.addTask(t, st.ttl())
	if why != "" && p.dispatch != nil {
		s.unknown(m.ID, p, why)
		return true
	}
	if why != "" {
		s.log.Warn("a task of the server is not kept", "tool", p.call, "task", clipID(t.id), "why", why)
	} else {
		s.log.Info("task created", "tool", p.call, "task", clipID(t.id), "write", p.dispatch != nil)
	}
	if p.shadow != nil {
		m = &jsonrpc.Response{ID: m.ID, Result: s.withShadow(m.Result, p)}
	}
	s.reply(m)
	if why == "" {
		s.taskReport(t.id, *st.Status, nil, "the task handle")
	}
	return true
}

func (s *session) stopTimer(p *pending) {
	if p.timer != nil {
		p.timer.Stop()
	}
}

// addTask keeps t as a task of this session; a write's deadline starts
// now. It says why when it cannot: the server gave an id it gave before.
func (s *session) addTask(t *sessionTask, ttl time.Duration) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.tasks[t.id]; dup {
		return fmt.Sprintf("the server gave task id %q a second time, so the proxy cannot tell the two tasks apart", t.id)
	}
	if len(s.tasks) >= maxTasks {
		s.forgetOldestTask()
	}
	if t.dispatch != nil {
		wait := s.opts.TaskTimeout
		if wait <= 0 {
			wait = DefaultTaskTimeout
		}
		if ttl > 0 && ttl < wait {
			wait = ttl
		}
		id := t.id
		t.timer = time.AfterFunc(wait, func() { s.expireTask(id, wait) })
	}
	s.tasks[t.id] = t
	return ""
}

// forgetOldestTask drops the oldest task that holds no write in flight
// (s.mu held). maxWrites < maxTasks, so there is one.
func (s *session) forgetOldestTask() {
	var oldest *sessionTask
	for _, t := range s.tasks {
		if t.dispatch == nil && (oldest == nil || t.created.Before(oldest.created)) {
			oldest = t
		}
	}
	if oldest != nil {
		delete(s.tasks, oldest.id)
	}
}

// writesInFlight counts the writes sent and not ended (s.mu held).
func (s *session) writesInFlight() int {
	n := 0
	for _, p := range s.pending {
		if p.dispatch != nil {
			n++
		}
	}
	for _, t := range s.tasks {
		if t.dispatch != nil {
			n++
		}
	}
	return n
}

// ownsTask reports whether a request of this session created the task.
func (s *session) ownsTask(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tasks[id]
	return ok
}

// taskReport takes a status the server reported for task id: a terminal
// one ends the task (a write settles only on "completed"); isError, when
// set, is the final result's isError, which makes a completed task of the
// 2025-11-25 generation a failed one.
func (s *session) taskReport(id, status string, isError *bool, via string) {
	switch status {
	case "working", "input_required":
		return
	case "completed":
		if isError != nil && *isError {
			s.endTask(id, false, "the task failed (its result is an error), as "+via+" says")
			return
		}
		s.endTask(id, true, "")
	case "failed", "cancelled":
		s.endTask(id, false, "the task ended "+status+", as "+via+" says")
	default:
		s.endTask(id, false, fmt.Sprintf("%s gives the task a status the proxy does not know (%.40q)", via, status))
	}
}

// taskLost ends task id as unknown: the server can no longer say what
// became of it.
func (s *session) taskLost(id, cause string) { s.endTask(id, false, cause) }

// endTask ends task id: a write's dispatch settles when completed, else
// its outcome is unknown. Ending an ended task does nothing. The ledger is
// written off the caller's goroutine, as an fsync must not hold up the
// frames.
func (s *session) endTask(id string, completed bool, cause string) {
	s.mu.Lock()
	t := s.tasks[id]
	if t == nil || t.ended {
		s.mu.Unlock()
		return
	}
	t.ended = true
	disp := t.dispatch
	t.dispatch = nil
	if t.timer != nil {
		t.timer.Stop()
	}
	s.mu.Unlock()
	if disp == nil {
		return
	}
	s.ledgerOps.Add(1)
	go func() {
		defer s.ledgerOps.Done()
		if completed {
			s.log.Info("task completed; the write settles", "tool", t.tool, "task", id)
			if err := disp.Settle(); err != nil {
				s.log.Error("settling a write in the ledger failed (it is retried)", "tool", t.tool, "err", err)
			}
			return
		}
		s.lost(disp, t.tool, cause+" (task "+id+")")
	}()
}

// expireTask ends a write's task that reported no terminal status in
// time.
func (s *session) expireTask(id string, after time.Duration) {
	s.taskLost(id, fmt.Sprintf("the task reported no end within %s (its ttl, or the proxy's task timeout)", after))
}

// tasksGone ends every task still running when the server's connection
// ended (s.mu not held).
func (s *session) tasksGone(err error) {
	s.mu.Lock()
	var ids []string
	for id, t := range s.tasks {
		if !t.ended {
			ids = append(ids, id)
		}
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.taskLost(id, "the server's connection closed before the task ended: "+err.Error())
	}
}

// taskRequest admits a client's tasks/* request: the task it names must be
// one this session created; anything else is answered as for a task that
// does not exist (it reports false). tasks/list passes (its answer is cut
// to the session's tasks); a tasks/* method the proxy does not know is
// refused, since the proxy cannot tell whose task it concerns.
func (s *session) taskRequest(m *jsonrpc.Request, p *pending) bool {
	switch m.Method {
	case "tasks/list":
		return true
	case "tasks/get", "tasks/result", "tasks/cancel", "tasks/update":
	default:
		s.replyError(m.ID, jsonrpc.CodeMethodNotFound, "mcpx-policy: refused: "+m.Method+" is not a tasks method the proxy knows, so it cannot check whose task it concerns")
		return false
	}
	var params struct {
		TaskID *string `json:"taskId"`
	}
	if err := strictjson.Unmarshal(m.Params, &params); err != nil || params.TaskID == nil {
		s.refuse(m.ID, m.Method+` params: a "taskId" (a string) is required`)
		return false
	}
	if !s.ownsTask(*params.TaskID) {
		s.log.Warn("refused a tasks request for a task this session did not create", "method", m.Method, "task", clipID(*params.TaskID))
		s.replyError(m.ID, jsonrpc.CodeInvalidParams, "Failed to retrieve task: Task not found")
		return false
	}
	p.task = *params.TaskID
	return true
}

func clipID(id string) string {
	if len(id) > 80 {
		return id[:80] + "…"
	}
	return id
}

// taskAnswer reads the server's answer to a client's tasks/* request for
// what it says of the task, and returns the answer to pass on: a tasks/list
// cut to the session's tasks, a tasks/result with the warn rider. An
// answer the proxy cannot read is replaced by an error, never passed on
// unread.
func (s *session) taskAnswer(p *pending, m *jsonrpc.Response) *jsonrpc.Response {
	refused := func(err error) *jsonrpc.Response {
		s.log.Warn("refused the server's answer to a tasks request", "method", p.method, "err", err)
		return &jsonrpc.Response{ID: m.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "mcpx-policy: the MCP server's " + p.method + " answer was refused: " + err.Error()}}
	}
	if m.Error != nil {
		var we *jsonrpc.Error
		code := int64(0)
		if errors.As(m.Error, &we) {
			code = we.Code
		}
		switch {
		case p.method == "tasks/result":
			s.taskLost(p.task, "tasks/result answered with an error: "+m.Error.Error())
		case code == jsonrpc.CodeInvalidParams && p.method != "tasks/list":
			s.taskLost(p.task, p.method+" says the task does not exist (any more): "+m.Error.Error())
		}
		return m
	}
	switch p.method {
	case "tasks/get", "tasks/cancel":
		var ack struct {
			TaskID *string `json:"taskId"`
		}
		if err := strictjson.Unmarshal(m.Result, &ack); err != nil {
			return refused(err)
		}
		if ack.TaskID == nil && p.method == "tasks/cancel" {
			return m // the extension's empty acknowledgement
		}
		st, err := readTaskState(m.Result)
		if err != nil {
			return refused(err)
		}
		if *st.TaskID != p.task {
			return refused(fmt.Errorf("it is about task %.80q, not the task asked for", *st.TaskID))
		}
		s.taskReport(p.task, *st.Status, nil, p.method)
		return m
	case "tasks/result":
		isError := resultIsError(m.Result)
		if isError == nil {
			return refused(errors.New(`not a result: it does not decode strictly`))
		}
		t := s.task(p.task)
		s.taskReport(p.task, "completed", isError, "tasks/result")
		if t != nil && len(t.ignored) > 0 && !*isError {
			if r, err := mcpgate.AddRider(m.Result, t.ignored, t.outputSchema); err == nil {
				return &jsonrpc.Response{ID: m.ID, Result: r}
			}
		}
		return m
	case "tasks/list":
		out, err := s.ownTasksOnly(m.Result)
		if err != nil {
			return refused(err)
		}
		return &jsonrpc.Response{ID: m.ID, Result: out}
	}
	return m
}

func (s *session) task(id string) *sessionTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[id]
}

// resultIsError reads a result's isError (false when absent); nil when
// the result does not decode strictly.
func resultIsError(result json.RawMessage) *bool {
	no := false
	if result == nil {
		return &no
	}
	var r struct {
		IsError *bool `json:"isError"`
	}
	if strictjson.Unmarshal(result, &r) != nil {
		return nil
	}
	if r.IsError == nil {
		return &no
	}
	return r.IsError
}

// ownTasksOnly cuts a tasks/list result to this session's tasks, taking
// each one's status on the way; every other member is kept as sent.
func (s *session) ownTasksOnly(result json.RawMessage) (json.RawMessage, error) {
	var res map[string]json.RawMessage
	if err := strictjson.Unmarshal(result, &res); err != nil {
		return nil, err
	}
	var list struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := strictjson.Unmarshal(result, &list); err != nil {
		return nil, err
	}
	kept := []json.RawMessage{}
	for _, raw := range list.Tasks {
		st, err := readTaskState(raw)
		if err != nil {
			return nil, err
		}
		if !s.ownsTask(*st.TaskID) {
			continue
		}
		kept = append(kept, raw)
		s.taskReport(*st.TaskID, *st.Status, nil, "tasks/list")
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	res["tasks"] = b
	return json.Marshal(res)
}

// taskNotification reads a server's task status notification
// (notifications/tasks/status, or the extension's notifications/tasks):
// it reports whether to pass it on — only for a task of this session,
// whose status it takes.
func (s *session) taskNotification(m *jsonrpc.Request) bool {
	st, err := readTaskState(m.Params)
	if err != nil {
		s.log.Warn("dropped a task status notification the proxy cannot read", "err", err)
		return false
	}
	if !s.ownsTask(*st.TaskID) {
		// A server may tell of a task before its handle (server-everything
		// does): while a call of this session may be creating one, the
		// notification passes, its status unread — the handle's and the
		// later answers' count.
		if s.callsAtServer() {
			return true
		}
		s.log.Warn("dropped a status notification of a task this session did not create", "task", clipID(*st.TaskID))
		return false
	}
	s.taskReport(*st.TaskID, *st.Status, nil, m.Method)
	return true
}

// callsAtServer reports whether a tools/call of this session waits for
// the server's answer.
func (s *session) callsAtServer() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.pending {
		if p.method == "tools/call" {
			return true
		}
	}
	return false
}

// isTaskNotification reports whether method is a task status notification.
func isTaskNotification(method string) bool {
	return method == "notifications/tasks/status" || method == "notifications/tasks"
}

// isTasksMethod reports whether method is a tasks/* request.
func isTasksMethod(method string) bool { return strings.HasPrefix(method, "tasks/") }
