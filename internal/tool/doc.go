// Package tool is the contract every toolhost tool satisfies.
//
// A tool is a typed Go function: an input struct whose field tags become the
// JSON Schema the model reads, an output struct that becomes the outputSchema,
// and func(ctx, *callctx.Ctx, In) (Out, error). New builds a Tool from such a
// function; the registry compiles its schemas once at start.
//
// Outcomes follow one failure model:
//   - an expected failure is a normal result whose Status has OK=false and a
//     Reason (return Out with Status.OK=false, or the error from Fail). Fail
//     takes the error behind the failure as its own argument, never as text
//     in the reason: the model reads fault.Explain's words for it and an
//     error id, the log keeps it whole. A result field that reports an
//     error (a unit that did not start) gets its text from Explain the same
//     way;
//   - a rejection (validation, sandbox, guard, policy) is an error implementing
//     fault.Rejection, shown to the model as isError with its message;
//   - anything else is a system failure: the model reads what fault.Explain
//     makes of it (a fault.Safe message its author wrote for the model, a
//     fault.CorruptFile, an OS error in our words) and an error id; the log
//     keeps the whole error.
//
// This package must never import the engine, the registry, the server or rpc:
// tools depend on the contract, not on the machinery that runs them.
package tool
