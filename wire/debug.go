package wire

import "context"

// debugLineKey carries the function WithDebugLine sets.
type debugLineKey struct{}

// WithDebugLine returns ctx carrying fn, which the engine running a job
// under ctx calls with each line of the program's debug output (without
// its newline) as the program writes it, on the run's goroutine: the
// worker publishes them while the job runs (queue.Job.Debug). fn must not
// block for long.
func WithDebugLine(ctx context.Context, fn func(line string)) context.Context {
	return context.WithValue(ctx, debugLineKey{}, fn)
}

// DebugLine returns the function of WithDebugLine, or nil.
func DebugLine(ctx context.Context) func(line string) {
	fn, _ := ctx.Value(debugLineKey{}).(func(line string))
	return fn
}
