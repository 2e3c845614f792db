package wire

import (
	"bytes"
	"encoding/json"
)

// KindSuspended is the error_kind of a suspended run's result
// (docs/code-mode.md "Suspended runs"): the run stopped at a call that
// needs its caller's answer. Only a gateway that submitted the job as
// interactive (queue.Job.Interactive) gets one, and it never passes it on:
// it asks the caller and resumes the run.
const KindSuspended = "suspended"

// Suspension is the "suspension" field of a suspended run's result.
type Suspension struct {
	// Kind is "approval" (a destructive upstream tool awaits approval) or
	// "ask" (ask(message)).
	Kind string `json:"kind"`
	// Tool and Args are the tool call awaiting approval: NAME__TOOL and
	// its arguments (a JSON object), unmasked.
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// Message is ask()'s question.
	Message string `json:"message,omitempty"`
	// State is the run's recorded capability calls and random seed, for
	// its resumption (package tools reads it; opaque to the gateway).
	State json.RawMessage `json:"state"`
}

// The kinds of Suspension (vm.SuspendApproval, vm.SuspendAsk).
const (
	SuspensionApproval = "approval"
	SuspensionAsk      = "ask"
)

// Resume is queue.Job.Resume: the state of a suspended run and the
// caller's answer to its pending call.
type Resume struct {
	State  json.RawMessage `json:"state"`
	Answer ResumeAnswer    `json:"answer"`
}

// ResumeAnswer is the caller's answer to a suspended run's pending call:
// Accepted approves the tool call, or answers ask() with Text; false is a
// decline (or a cancel).
type ResumeAnswer struct {
	Accepted bool   `json:"accepted"`
	Text     string `json:"text,omitempty"`
}

// Suspended is the result of a suspended run before its outcome:
// error_kind KindSuspended, message, suspension s and steps (the engine
// adds its handler facts and outcome "cancelled"; it is never shown to a
// caller: the gateway resumes the run).
func Suspended(message string, s Suspension, steps int64) *Object {
	return Envelope(false).Set("error_kind", KindSuspended).Set("message", message).Set("suspension", s).Set("steps", steps)
}

// SuspensionOf returns the suspension of a suspended run's result (a
// Suspended envelope), nil for any other result.
func SuspensionOf(out []byte) *Suspension {
	if !bytes.Contains(out, []byte(`"error_kind":"`+KindSuspended+`"`)) {
		return nil
	}
	var v struct {
		ErrorKind  string      `json:"error_kind"`
		Suspension *Suspension `json:"suspension"`
	}
	if json.Unmarshal(out, &v) != nil || v.ErrorKind != KindSuspended {
		return nil
	}
	return v.Suspension
}
