package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mirobody/mirobody-go/services/registry"
	"github.com/mirobody/mirobody-go/services/vfs/tasks"
	"github.com/mirobody/mirobody-go/services/wire"
)

// The tasks extension (SEP-2663) as /mcp serves it in the modern era
// (design.md "Tasks").
const (
	tasksExtension = "io.modelcontextprotocol/tasks"
	// taskPollIntervalMs is the polling pace suggested to clients.
	taskPollIntervalMs = 1000
	// taskFinishTimeout bounds recording a task's end in vfs-svc.
	taskFinishTimeout = 10 * time.Second
	// maxTaskTTL is the longest vfs-svc keeps a task.
	maxTaskTTL = 24 * time.Hour
)

// Task support of a tool (its execution.taskSupport).
const (
	taskOptional = "optional"
	taskRequired = "required"
)

// taskRunner holds the tool calls running as tasks on this replica, so
// that a shutdown can let them finish, or stop them and say so.
type taskRunner struct {
	store *tasks.Client
	ttl   time.Duration
	ctx   context.Context
	stop  context.CancelFunc
	// mu orders enter's Add before StopTasks' Wait: once stopping is set
	// no task starts here.
	mu       sync.Mutex
	stopping bool
	wg       sync.WaitGroup
}

// enter counts a starting task, or reports false once the replica stops.
func (r *taskRunner) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return false
	}
	r.wg.Add(1)
	return true
}

func newTaskRunner(bus *wire.Client, ttl time.Duration) *taskRunner {
	ctx, stop := context.WithCancel(context.Background())
	if ttl <= 0 || ttl > maxTaskTTL {
		ttl = maxTaskTTL
	}
	return &taskRunner{store: tasks.NewClient(bus), ttl: ttl, ctx: ctx, stop: stop}
}

// StopTasks waits for the tool calls running as tasks on this replica
// for half of ctx's remaining time (the rest is the NATS drain's), then
// stops the rest: each is recorded as failed and its tool is cancelled,
// so that no client polls a task nobody runs.
func (m *Server) StopTasks(ctx context.Context) {
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
		defer cancel()
	}
	m.tasks.mu.Lock()
	m.tasks.stopping = true
	m.tasks.mu.Unlock()
	done := make(chan struct{})
	go func() {
		m.tasks.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		m.tasks.stop()
		<-done
	}
}

// createTaskResult is the answer of a tools/call that started a task: the
// task itself, flat (SEP-2663's Result & Task).
type createTaskResult struct {
	ResultType string `json:"resultType"`
	taskView
}

// taskView is the Task of SEP-2663.
type taskView struct {
	TaskID         string `json:"taskId"`
	Status         string `json:"status"`
	StatusMessage  string `json:"statusMessage,omitempty"`
	CreatedAt      string `json:"createdAt"`
	LastUpdatedAt  string `json:"lastUpdatedAt"`
	TTLMs          int64  `json:"ttlMs"`
	PollIntervalMs int64  `json:"pollIntervalMs,omitempty"`
}

// detailedTask is tasks/get's answer: the task with its result once
// completed, or its error once failed.
type detailedTask struct {
	ResultType string `json:"resultType"`
	taskNotification
}

// ackResult is the empty answer of tasks/cancel and tasks/update.
type ackResult struct {
	ResultType string `json:"resultType"`
}

func viewOf(t *tasks.Task) taskView {
	v := taskView{TaskID: t.ID, Status: t.Status, StatusMessage: t.Message,
		CreatedAt: t.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.Updated.UTC().Format(time.RFC3339Nano), TTLMs: t.TTLMs}
	if !t.Terminal() {
		v.PollIntervalMs = taskPollIntervalMs
	}
	return v
}

// negotiatedTasks reports whether the request's _meta (parseMessage's
// msg.meta) declares the tasks extension in its client capabilities.
func negotiatedTasks(meta map[string]json.RawMessage) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(meta[mcp.MetaKeyClientCapabilities], &caps) != nil {
		return false
	}
	_, ok := caps.Extensions[tasksExtension]
	return ok
}

// missingTasksCapability is SEP-2575's -32021 naming the tasks extension,
// and only it: the SDK's ClientCapabilities would add an empty roots
// object, which reads as "roots required".
func missingTasksCapability(format string, args ...any) *rpcError {
	required := map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}
	return newRPCError(http.StatusBadRequest, mcp.CodeMissingRequiredClientCapabilities, format, args...).
		withData(map[string]any{"requiredCapabilities": required})
}

// taskTool returns the tool name as the caller's list shows it, or nil
// when the list has no such tool (the plain call then reports it).
func (m *Server) taskTool(ctx context.Context, q *request, name string) (*registry.Tool, error) {
	list, err := m.registry.List(ctx, &registry.ListRequest{Caller: q.caller()})
	if err != nil {
		return nil, err
	}
	i, ok := slices.BinarySearchFunc(list.Tools, name, func(t registry.Tool, name string) int { return strings.Compare(t.Name, name) })
	if !ok {
		return nil, nil
	}
	return &list.Tools[i], nil
}

// taskSupport is a tool's execution.taskSupport, "" when it has none.
func taskSupport(t *registry.Tool) string {
	var exec struct {
		TaskSupport string `json:"taskSupport"`
	}
	_ = json.Unmarshal(t.Execution, &exec)
	return exec.TaskSupport
}

// callAsTask answers a modern-era tools/call of a task-supporting tool
// and reports whether it did: with a CreateTaskResult once the task is
// stored, the call then running in the background, or with -32021 for a
// tool that requires tasks from a client that did not declare them.
// Every other call (legacy era, tools without task support, a client
// without the extension calling an optional one, the first round of a
// TaskAfterInput tool) is left to callTool. A TaskAfterInput tool's call
// that carries answers (inputResponses or requestState) becomes a task
// whose run starts with them.
func (m *Server) callAsTask(w http.ResponseWriter, q *request, msg *rpcMessage) bool {
	p := &msg.call
	if !q.modern || msg.callErr != nil || p.Name == "" {
		return false
	}
	ctx := q.r.Context()
	tool, err := m.taskTool(ctx, q, p.Name)
	if err != nil {
		writeRPCError(w, msg.ID, m.registryError(ctx, err))
		return true
	}
	support := ""
	if tool != nil {
		support = taskSupport(tool)
	}
	switch {
	case support != taskOptional && support != taskRequired:
		return false
	case !negotiatedTasks(msg.meta) && support == taskRequired:
		writeRPCError(w, msg.ID, missingTasksCapability("tool %s runs only as a task: declare the %s extension", p.Name, tasksExtension))
		return true
	case !negotiatedTasks(msg.meta):
		return false
	case q.caller().Anonymous() && (tool.TakesUserInfo || tool.RequiresData != ""):
		writeRPCError(w, msg.ID, m.unauthorized("tool "+p.Name+" needs an authenticated caller"))
		return true
	}
	if _, err := registry.Arguments(p.Name, p.Arguments); err != nil {
		return false // the plain call renders the argument error
	}
	var answers map[string]json.RawMessage
	if tool.TaskAfterInput {
		if p.InputResponses == nil && p.RequestState == nil {
			return false // round 1 asks inline (SEP-2322)
		}
		var e *rpcError
		if answers, _, e = m.modernInputs(q, p); e != nil {
			writeRPCError(w, msg.ID, e)
			return true
		}
	}
	res, e := m.startTask(ctx, q, p, clientCapabilities(q, msg.meta), answers)
	if e != nil {
		writeRPCError(w, msg.ID, e)
		return true
	}
	writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: msg.ID, Result: res})
	return true
}

// taskCall is what a task keeps of its call (tasks.Task.Call), so that
// the replica a tasks/update lands on can run the tool again.
type taskCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      json.RawMessage `json:"_meta,omitempty"`
	Caps      []string        `json:"caps,omitempty"`
}

// taskInput is a task run's end when its tool asked the client: the task
// waits in input_required until tasks/update answers every request.
type taskInput struct {
	requests, answers map[string]json.RawMessage
}

// startTask stores a working task for the call and runs the call in the
// background, with answers as its inputs so far; the answer comes only
// once the task is durable, so a tasks/get right after it finds the task
// on any replica.
func (m *Server) startTask(ctx context.Context, q *request, p *callParams, caps []string, answers map[string]json.RawMessage) (*createTaskResult, *rpcError) {
	if !m.tasks.enter() {
		return nil, m.registryError(ctx, wire.Errorf(wire.Unavailable, "this gateway replica is stopping; retry"))
	}
	started := false
	defer func() {
		if !started {
			m.tasks.wg.Done()
		}
	}()
	id, err := newTaskID()
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	call, _ := json.Marshal(taskCall{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta, Caps: caps})
	req := &tasks.CreateRequest{ID: id, AccountID: q.caller().AccountID, Tool: p.Name, CallID: "task:" + id, TTLMs: m.tasks.ttl.Milliseconds(), Call: call}
	if q.principal != nil {
		req.Principal = q.principal.KeyID
	}
	t, err := m.tasks.store.Create(ctx, req)
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	started = true
	m.goTask(ctx, q, &callParams{Name: p.Name, Arguments: p.Arguments, Meta: p.Meta}, t, caps, answers)
	return &createTaskResult{ResultType: "task", taskView: viewOf(t)}, nil
}

// resumeTask runs an input_required task's tool again once tasks/update
// answered its last request, on whichever replica that update landed.
func (m *Server) resumeTask(ctx context.Context, q *request, t *tasks.Task) {
	var c taskCall
	if !m.tasks.enter() {
		return // the replica stops: the task stays working until its TTL
	}
	if err := json.Unmarshal(t.Call, &c); err != nil || c.Name == "" {
		m.tasks.wg.Done()
		m.Log.ErrorContext(ctx, "a task to resume has no call", "task", t.ID)
		return
	}
	m.goTask(ctx, q, &callParams{Name: c.Name, Arguments: c.Arguments, Meta: c.Meta}, t, c.Caps, t.Answers)
}

// goTask runs a task's call detached from the request, keeping its trace;
// only a stopping replica that runs out of time for it stops it
// (StopTasks). The caller has entered m.tasks.
func (m *Server) goTask(ctx context.Context, q *request, p *callParams, t *tasks.Task, caps []string, answers map[string]json.RawMessage) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(m.tasks.ctx, cancel)
	go func() {
		defer m.tasks.wg.Done()
		defer cancel()
		defer stop()
		m.runTask(runCtx, q, p, t, callIO{background: true, caps: caps, inputs: answers})
	}()
}

// runTask runs a task's call and records how it ended: completed with the
// tool's result (a tool error included, as isError), input_required with
// the tool's questions, or failed with the JSON-RPC error of a call that
// could not be made.
func (m *Server) runTask(ctx context.Context, q *request, p *callParams, t *tasks.Task, cio callIO) {
	res, e := m.run(ctx, q, p, t.CallID, cio)
	fin := &tasks.FinishRequest{ID: t.ID, AccountID: t.AccountID, Status: tasks.StatusCompleted}
	switch in, asked := res.(*taskInput); {
	case e == nil && asked:
		fin.Status, fin.InputRequests, fin.Answers = tasks.StatusInputRequired, in.requests, in.answers
	case e == nil:
		fin.Result, _ = json.Marshal(res)
	default:
		fin.Status, fin.Message = tasks.StatusFailed, e.Err.Message
		if ctx.Err() != nil {
			fin.Message = "the gateway replica running the task stopped"
			e = newRPCError(http.StatusOK, jsonrpc.CodeInternalError, "%s", fin.Message)
		}
		fin.Error, _ = json.Marshal(e.Err)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskFinishTimeout)
	defer cancel()
	done, err := m.tasks.store.Finish(wctx, fin)
	if wire.IsTooLarge(err) {
		// The result cannot be kept: the task fails rather than stay
		// working until its TTL.
		fin.Status, fin.Result, fin.Message = tasks.StatusFailed, nil, "the tool's result is too large to keep as a task result"
		fin.Error, _ = json.Marshal(newRPCError(http.StatusOK, jsonrpc.CodeInternalError, "%s", fin.Message).Err)
		done, err = m.tasks.store.Finish(wctx, fin)
	}
	if err != nil {
		m.Log.ErrorContext(wctx, "recording the end of a task failed", "task", t.ID, "tool", t.Tool, "err", err)
		return
	}
	if done.Status == fin.Status {
		m.taskChanged(wctx, t.ID)
	}
}

// newTaskID mints an unguessable task id: for an anonymous caller it is
// the only thing that guards the task.
func newTaskID() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// taskParams is the params of tasks/get, tasks/update and tasks/cancel.
type taskParams struct {
	TaskID         string          `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

// taskMethod serves tasks/get, tasks/update and tasks/cancel, for the
// caller's own tasks only: another owner's task is -32602 like an unknown
// one. tasks/update records the answers to an input_required task's
// requests; the one that answers the last runs the tool again.
func (m *Server) taskMethod(ctx context.Context, q *request, msg *rpcMessage) (any, *rpcError) {
	if !negotiatedTasks(msg.meta) {
		return nil, missingTasksCapability("%s needs the %s extension", msg.Method, tasksExtension)
	}
	var p taskParams
	if err := json.Unmarshal(msg.Params, &p); err != nil || p.TaskID == "" {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: %s needs a taskId", msg.Method)
	}
	if msg.Method == "tasks/update" && !jsonObject(p.InputResponses) {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "invalid params: tasks/update needs inputResponses")
	}
	owner := q.caller().AccountID
	var (
		t   *tasks.Task
		err error
	)
	if msg.Method == "tasks/cancel" {
		var c *tasks.CancelResponse
		if c, err = m.tasks.store.Cancel(ctx, &tasks.CancelRequest{ID: p.TaskID, AccountID: owner, Reason: "cancelled by the client"}); err == nil {
			t = &c.Task
			if c.Cancelled {
				m.cancel(ctx, q, t.CallID, "the task was cancelled")
				m.taskChanged(ctx, t.ID)
			}
		}
	} else if msg.Method == "tasks/update" {
		var in map[string]json.RawMessage
		_ = json.Unmarshal(p.InputResponses, &in)
		var u *tasks.UpdateResponse
		if u, err = m.tasks.store.Update(ctx, &tasks.UpdateRequest{ID: p.TaskID, AccountID: owner, Responses: in}); err == nil {
			t = &u.Task
			if u.Resumed {
				m.resumeTask(ctx, q, t)
				m.taskChanged(ctx, t.ID)
			}
		}
	} else {
		t, err = m.tasks.store.Get(ctx, &tasks.GetRequest{ID: p.TaskID, AccountID: owner})
	}
	if wire.IsCode(err, wire.NotFound) {
		return nil, newRPCError(http.StatusOK, jsonrpc.CodeInvalidParams, "unknown task %q", p.TaskID)
	}
	if err != nil {
		return nil, m.registryError(ctx, err)
	}
	if msg.Method != "tasks/get" {
		return ackResult{ResultType: "complete"}, nil
	}
	return detailedTask{ResultType: "complete", taskNotification: detail(t)}, nil
}

// jsonObject reports whether raw is a JSON object.
func jsonObject(raw json.RawMessage) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(raw, &v) == nil && v != nil
}
