package framework_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/framework"
	"github.com/axpool/axpool/vm"
)

// TestCeilingAppliesToInit: Options.Ceiling narrows init()'s allow-all,
// in FrameworkTest and in NewRuntimeWith (red-team finding: init() ran
// step.input under a deny-all ceiling).
func TestCeilingAppliesToInit(t *testing.T) {
	deny, err := policy.Parse([]byte(`{"schema_version":1,"default_allow":false}`))
	if err != nil {
		t.Fatal(err)
	}
	// An App whose init() calls step_input (shared with the tools
	// package's ceiling test).
	src, err := os.ReadFile("testdata/ceiling/step_input_app.ax")
	if err != nil {
		t.Fatal(err)
	}
	stepInputApp := string(src)
	ctx := context.Background()
	got := golden.Compact(t, framework.FrameworkTest(ctx, stepInputApp, []string{"a:1"}, framework.Options{Ceiling: deny}))
	want := `{"success":false,"protocol_version":1,"error_kind":"framework_error","message":"init() failed: runtime error: capability denied: step.input","outcome":"policy_denied","retryable":false}`
	if got != want {
		t.Fatalf("FrameworkTest:\n got %s\nwant %s", got, want)
	}
	got = golden.Compact(t, framework.FrameworkTest(ctx, stepInputApp, []string{"a:1"}, framework.Options{}))
	want = `{"success":true,"protocol_version":1,"init_state":["ok"],"cycles":[{"message":"a:1","state":["ok"],"effects":0,"ui_tree":"ok"}],"final_state":["ok"],"total_cycles":1,"outcome":"ok","retryable":false}`
	if got != want {
		t.Fatalf("without a ceiling:\n got %s\nwant %s", got, want)
	}

	prog, mod, errs := framework.Compile([]byte(stepInputApp), framework.SourceFile, "")
	if errs != nil {
		t.Fatal(errs)
	}
	_, err = framework.NewRuntimeWith(ctx, mod, framework.Check(prog), framework.Options{Ceiling: deny})
	var fe *framework.Error
	var ce *vm.CapabilityError
	if !errors.As(err, &fe) || fe.Kind != framework.KindRuntime || fe.Function != "init" || !errors.As(err, &ce) || ce.Capability != policy.StepInput {
		t.Fatalf("NewRuntimeWith: %v", err)
	}
}
