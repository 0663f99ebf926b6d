// Package gate holds DES's gates: each gathers the facts of one decision,
// builds the input document of its Rego entrypoint, asks the policy, and
// reports a typed [Result]. Effects (audit events, step-file rewrites) are
// carried out here too, so that a Go caller and the hook behave the same.
//
// Every gate takes an [Evaluator] (des.Engine is one), never a policy engine
// directly, so that tests can supply decisions and the root package can add
// its bookkeeping (clock, exception audit) in one place.
package gate
