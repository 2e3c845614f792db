package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// What operators see of the calls (docs/operations.md "Metrics" and
// "Audit log"): every answered tools/call is counted in Config.Metrics and
// written to Config.AuditLog (metrics.go), before its response
// leaves the gateway.

// digest is the lower-case hex SHA-256 of b.
func digest(b []byte) string {
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// Observer counts answered calls in Metrics and writes them to AuditLog;
// either may be nil. The gateway observes its own calls with one;
// `axpool batch` hands one's Observe to its dispatcher
// (dispatch.Config.Observe).
type Observer struct {
	Metrics  *Metrics
	AuditLog *AuditLog
	// Logger receives a failed audit write; nil means slog.Default().
	Logger *slog.Logger
}

// Observe counts an answered (or cancelled) call and writes its audit
// line. args are the arguments as checked (nil when refused before);
// out is the result object. A nil o observes nothing.
func (o *Observer) Observe(ctx context.Context, tool string, args json.RawMessage, out []byte) {
	if o == nil || o.Metrics == nil && o.AuditLog == nil {
		return
	}
	o.observeDigests(ctx, tool, func() callDigests { return digestsOf(tool, args) }, out)
}

// callDigests are the SHA-256 digests of a call's arguments that its
// audit line carries (AuditEntry).
type callDigests struct {
	Args   string `json:"args_sha256"`
	Source string `json:"source_sha256,omitempty"`
	Policy string `json:"policy_sha256,omitempty"`
}

// digestsOf computes the digests of args (the arguments as checked).
func digestsOf(tool string, args json.RawMessage) callDigests {
	d := callDigests{Args: digest(args)}
	d.Source, d.Policy = argDigests(tool, args)
	return d
}

// observeDigests is observe with the digests computed by dig (called only
// when there is an audit log).
func (o *Observer) observeDigests(ctx context.Context, tool string, dig func() callDigests, out []byte) {
	if o == nil {
		return
	}
	m, audit := o.Metrics, o.AuditLog
	if m == nil && audit == nil {
		return
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	sum, err := wire.Summarize(out)
	if err != nil {
		log.Error("observe: result is not a JSON object", "tool", tool, "err", err)
		return
	}
	outcome := sum.OutcomeLabel()
	caller := dispatch.CallerFrom(ctx)
	cancelled := ctx.Err() != nil
	if m != nil {
		m.Observe(tool, caller, sum, cancelled)
	}
	if audit == nil {
		return
	}
	d := dig()
	e := &AuditEntry{
		Time: time.Now().UTC().Format(time.RFC3339Nano), Caller: caller, Tool: tool,
		ArgsSHA256: d.Args, SourceSHA256: d.Source, PolicySHA256: d.Policy,
		Outcome: outcome, Success: sum.Success, JobID: sum.JobID, Cancelled: cancelled,
	}
	if sum.Steps >= 0 {
		e.Steps = &sum.Steps
	}
	if sum.RunMs >= 0 {
		e.RunMs = &sum.RunMs
	}
	if err := audit.Write(e); err != nil {
		log.Error("audit log write failed", "tool", tool, "caller", caller, "err", err)
	}
}

// argDigests returns the SHA-256 of the source argument's text and of the
// policy argument's JSON, "" when the tool has no such parameter.
func argDigests(tool string, args json.RawMessage) (source, policy string) {
	hasSource, hasPolicy := false, false
	if spec, ok := tools.SpecOf(tool); ok {
		for _, p := range spec.Params {
			hasSource = hasSource || p.Source
			hasPolicy = hasPolicy || p.Name == "policy"
		}
	}
	if !hasSource && !hasPolicy {
		return "", ""
	}
	var a struct {
		Source *string         `json:"source"`
		Policy json.RawMessage `json:"policy"`
	}
	if len(args) > 0 && json.Unmarshal(args, &a) != nil {
		a.Source, a.Policy = nil, nil // checked arguments: cannot happen
	}
	if hasSource && a.Source != nil {
		source = digest([]byte(*a.Source))
	}
	if hasPolicy {
		if len(a.Policy) == 0 || string(a.Policy) == "null" {
			a.Policy = json.RawMessage(`"allow-all"`)
		}
		policy = digest(a.Policy)
	}
	return source, policy
}
