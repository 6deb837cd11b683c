package fault

import (
	"encoding/json"
	"testing"
)

// TestKindStrings pins every kind's string: they are the error_kind values
// of audit rows already on disk, so a rename must fail here first.
func TestKindStrings(t *testing.T) {
	t.Parallel()
	want := map[Kind]string{
		None: "", Validation: "validation", Sandbox: "sandbox", Guard: "guard", Policy: "policy",
		UnknownTool: "unknown_tool", NeedsConfirmation: "needs_confirmation", UserDeclined: "user_declined",
		UserDenied: "user_denied", ConfirmationFailed: "confirmation_failed", RequestStateInvalid: "request_state_invalid",
		InputRequired: "input_required", Pin: "pin", Unavailable: "unavailable", Superseded: "confirmation",
		Timeout: "timeout", Cancelled: "cancelled", Shutdown: "shutdown", Panic: "panic", System: "system", Upstream: "upstream",
	}
	if len(want) != int(numKinds) {
		t.Fatalf("the test names %d kinds, the package has %d", len(want), numKinds)
	}
	seen := map[string]Kind{}
	for k := range numKinds {
		s := k.String()
		if s != want[k] {
			t.Errorf("Kind(%d).String() = %q, want %q", k, s, want[k])
		}
		if prev, dup := seen[s]; dup {
			t.Errorf("kinds %d and %d share the string %q", prev, k, s)
		}
		seen[s] = k
	}
	if s := Kind(200).String(); s != "fault.Kind(200)" {
		t.Errorf("an undeclared kind prints %q", s)
	}
	b, err := json.Marshal(map[string]Kind{"kind": UnknownTool})
	if err != nil || string(b) != `{"kind":"unknown_tool"}` {
		t.Errorf("JSON of a kind = %s, %v", b, err)
	}
}
