package deep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mirobody/mirobody-go/agent-svc/internal/llm"
	"github.com/mirobody/mirobody-go/agent-svc/internal/turn"
	"github.com/mirobody/mirobody-go/services/registry"
)

// maxSampleRounds bounds how often one tool call may ask the model.
const maxSampleRounds = 8

// callIDKey carries the id of the model's tool call being run (empty for
// a call js_eval makes): only such a call may ask the user.
type callIDKey struct{}

// errAsking says the tool call stopped at a question to the user, which
// r.asks now holds.
var errAsking = errors.New("the tool asks the user")

// callRegistry runs a registry tool for the turn. A Python tool that asks
// its caller's model (mirobody.sample) gets the turn's own provider and
// model: the agent offers the sampling capability, answers the tool's
// requests and runs it again with the answers (registry-svc/design.md
// "Elicitation and sampling"). Elicitation is offered when the client can
// answer (the chat request's can_ask), the turn is durable and the model
// made the call: a question (mirobody.elicit) is kept in r.asks and the
// call ends with errAsking, so the run pauses for the user's answer and
// runs the tool again with it (agent-svc/design.md "Questions from
// tools"). Otherwise, as for roots, the tool gets
// mirobody.CapabilityUnavailable.
func (r *run) callRegistry(ctx context.Context, name string, args json.RawMessage) (*registry.CallResponse, error) {
	req := &registry.CallRequest{Caller: caller(r.turn), Name: name, Arguments: args, Servers: r.turn.MCPServers,
		ClientCapabilities: []string{"sampling"}}
	callID, _ := ctx.Value(callIDKey{}).(string)
	canAsk := r.turn.CanAsk && r.durable != nil && callID != ""
	if canAsk {
		req.ClientCapabilities = append(req.ClientCapabilities, "elicitation")
		r.mu.Lock()
		a, ok := r.asks[callID]
		r.mu.Unlock()
		if ok && a.Answer != nil {
			req.InputResponses = maps.Clone(a.Responses)
			if req.InputResponses == nil {
				req.InputResponses = map[string]json.RawMessage{}
			}
			req.InputResponses[a.Key] = a.Answer
			req.Replay = a.Replay
		}
	}
	for round := 1; ; round++ {
		resp, err := r.a.opts.Registry.Call(ctx, req)
		if err != nil || len(resp.InputRequests) == 0 {
			return resp, err
		}
		if round == maxSampleRounds {
			return failed(fmt.Sprintf("%s asked the model more than %d times", name, maxSampleRounds)), nil
		}
		if req.InputResponses == nil {
			req.InputResponses = map[string]json.RawMessage{}
		}
		var question *turn.Ask
		for _, key := range slices.Sorted(maps.Keys(resp.InputRequests)) {
			raw := resp.InputRequests[key]
			if params, ok := elicitation(raw); ok && canAsk {
				if question == nil {
					question = &turn.Ask{Key: key, Params: params}
				}
				continue
			}
			answer, err := r.sample(ctx, raw)
			if err != nil {
				return failed(fmt.Sprintf("%s failed: %v", name, err)), nil
			}
			req.InputResponses[key] = answer
		}
		if question != nil {
			question.Responses = maps.Clone(req.InputResponses)
			question.Replay = slices.Sorted(maps.Keys(resp.InputRequests))
			r.mu.Lock()
			r.asks[callID] = *question
			r.mu.Unlock()
			return nil, errAsking
		}
		req.Replay = slices.Sorted(maps.Keys(resp.InputRequests))
	}
}

// elicitation returns the params of an elicitation/create request.
func elicitation(raw json.RawMessage) (json.RawMessage, bool) {
	var in struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(raw, &in) != nil || in.Method != "elicitation/create" {
		return nil, false
	}
	return in.Params, true
}

// samplingRequest is the part of sampling/createMessage the agent honours:
// the messages' text, the system prompt and the token limit.
type samplingRequest struct {
	Method string `json:"method"`
	Params struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
		SystemPrompt string `json:"systemPrompt"`
		MaxTokens    int    `json:"maxTokens"`
	} `json:"params"`
}

// sample answers one sampling/createMessage request of a tool with the
// turn's provider, as a CreateMessageResult.
func (r *run) sample(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	var in samplingRequest
	if err := json.Unmarshal(raw, &in); err != nil || in.Method != "sampling/createMessage" {
		return nil, fmt.Errorf("the agent cannot answer this request")
	}
	req := &llm.Request{Model: r.turn.Model, System: in.Params.SystemPrompt, MaxTokens: in.Params.MaxTokens}
	for _, m := range in.Params.Messages {
		if m.Content.Type != "text" || (m.Role != llm.RoleUser && m.Role != llm.RoleAssistant) {
			return nil, fmt.Errorf("the agent samples text messages only, not %s %s", m.Role, m.Content.Type)
		}
		req.Messages = append(req.Messages, llm.Message{Role: m.Role, Content: m.Content.Text})
	}
	resp, err := r.turn.Provider.Stream(ctx, req, func(llm.Delta) {})
	if err != nil {
		return nil, fmt.Errorf("sampling the model: %w", err)
	}
	r.addUsage(resp.Usage)
	stop := "endTurn"
	if resp.StopReason == "length" {
		stop = "maxTokens"
	}
	return json.Marshal(map[string]any{"role": "assistant", "content": map[string]string{"type": "text", "text": resp.Message.Content},
		"model": r.turn.Model, "stopReason": stop})
}

// failed is a tool error result with text.
func failed(text string) *registry.CallResponse {
	b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
	return &registry.CallResponse{Content: []json.RawMessage{b}, IsError: true}
}
