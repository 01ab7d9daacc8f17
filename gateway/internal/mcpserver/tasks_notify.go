package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/mirobody/mirobody-go/services/vfs/tasks"
)

// Task status notifications (SEP-2663 "Task Status Notifications"): a
// subscriptions/listen stream names the task ids it follows, and gets
// notifications/tasks with the whole task whenever one of them changes.

// subjectTaskChanged is published, with the task id as its last token
// and no body, by the replica that moved a task; every replica's streams
// that follow it read the task again, as their own caller.
const subjectTaskChanged = "events.gateway.task_changed"

// maxListenTasks bounds the task ids one stream follows.
const maxListenTasks = 100

// taskNotification is notifications/tasks: the task as tasks/get shows it.
type taskNotification struct {
	taskView
	Result        json.RawMessage            `json:"result,omitempty"`
	Error         json.RawMessage            `json:"error,omitempty"`
	InputRequests map[string]json.RawMessage `json:"inputRequests,omitempty"`
}

// detail is t as tasks/get and notifications/tasks show it.
func detail(t *tasks.Task) taskNotification {
	n := taskNotification{taskView: viewOf(t)}
	switch t.Status {
	case tasks.StatusCompleted:
		n.Result = t.Result
	case tasks.StatusFailed:
		n.Error = t.Error
	case tasks.StatusInputRequired:
		n.InputRequests = t.InputRequests
	}
	return n
}

// taskChanged tells every replica's streams that the task moved.
func (m *Server) taskChanged(ctx context.Context, id string) {
	if err := m.Conn.Publish(subjectTaskChanged+"."+id, nil); err != nil {
		m.Log.WarnContext(ctx, "publishing a task change failed", "task", id, "err", err)
	}
}

// listenTasks reads the task ids a subscriptions/listen asks to follow and
// subscribes to their changes. It keeps only the caller's own live tasks
// (the acknowledgement lists them), and refuses the request (-32021) when
// it names tasks without declaring the extension. sends delivers each
// task's state once after the acknowledgement (a change between the
// client's last poll and its listen is not lost), then once per change,
// until stop.
func (m *Server) listenTasks(q *request, msg *rpcMessage) (ids []string, sends <-chan func(*sseWriter) error, stop func(), e *rpcError) {
	var p struct {
		Notifications struct {
			TaskIDs []string `json:"taskIds"`
		} `json:"notifications"`
	}
	stop = func() {}
	if json.Unmarshal(msg.Params, &p) != nil || len(p.Notifications.TaskIDs) == 0 {
		return nil, nil, stop, nil
	}
	if !negotiatedTasks(msg.meta) {
		return nil, nil, stop, missingTasksCapability("task notifications need the %s extension", tasksExtension)
	}
	if len(p.Notifications.TaskIDs) > maxListenTasks {
		return nil, nil, stop, newRPCError(http.StatusBadRequest, jsonrpc.CodeInvalidParams, "invalid params: at most %d taskIds", maxListenTasks)
	}
	ctx, owner := q.r.Context(), q.caller().AccountID
	ch := make(chan func(*sseWriter) error, maxListenTasks)
	var subs []*nats.Subscription
	stop = func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}
	for _, id := range p.Notifications.TaskIDs {
		if strings.ContainsAny(id, ".*> \t\r\n") {
			continue // not one of our ids, and not a subject token
		}
		if _, err := m.tasks.store.Get(ctx, &tasks.GetRequest{ID: id, AccountID: owner}); err != nil {
			continue
		}
		sub, err := m.Conn.Subscribe(subjectTaskChanged+"."+id, func(*nats.Msg) {
			select {
			case ch <- func(sse *sseWriter) error { return m.sendTask(ctx, sse, id, owner) }:
			default: // a burst: the queued reads show the latest state anyway
			}
		})
		if err != nil {
			stop()
			return nil, nil, func() {}, m.registryError(ctx, err)
		}
		subs = append(subs, sub)
		ids = append(ids, id)
		ch <- func(sse *sseWriter) error { return m.sendTask(ctx, sse, id, owner) }
	}
	return ids, ch, stop, nil
}

// sendTask reads the task as its owner and sends it on the stream.
func (m *Server) sendTask(ctx context.Context, sse *sseWriter, id, owner string) error {
	t, err := m.tasks.store.Get(ctx, &tasks.GetRequest{ID: id, AccountID: owner})
	if err != nil {
		return nil // expired or unreachable: the next change or poll tells
	}
	return sse.send(rpcNotification{JSONRPC: "2.0", Method: "notifications/tasks", Params: detail(t)})
}

// acknowledged is the params of notifications/subscriptions/acknowledged,
// with the followed task ids when there are any.
func acknowledged(meta mcp.Meta, ack mcp.NotificationSubscriptions, taskIDs []string) any {
	if len(taskIDs) == 0 {
		return &mcp.SubscriptionsAcknowledgedParams{Meta: meta, Notifications: ack}
	}
	type withTasks struct {
		mcp.NotificationSubscriptions
		TaskIDs []string `json:"taskIds"`
	}
	return &struct {
		Meta          mcp.Meta  `json:"_meta,omitempty"`
		Notifications withTasks `json:"notifications"`
	}{Meta: meta, Notifications: withTasks{ack, taskIDs}}
}
